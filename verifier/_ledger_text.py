"""The text of a ledger file: records written as deterministic JSON, keys sorted and one line per check verdict,
so that a scheduled run's diff reads as "these verdicts changed".

Layout of `ledger/<engine>.json` (format 3):

    {"engine": "vllm", "format": 2,
     "releases": {"0.30.0": {
        "date": "2026-09-22", "identity": "sha256:...", "source": "pypi",
        "verified_at": "2026-11-29T07:00:00Z", "verifier": "0.4.0",
        "commit": "<40 hex digits>",   (only a vendored engine: the engine's commit the release holds)
        "entries": {"<entry id>": {"status": "holds", "checks": {
            "<check id>": {"verdict": "holds", "form": 0, "path": "...", "lines": [1, 2], "symbol": "...",
                           "sha256": "<16 hex digits>", "check": "<fingerprint>",
                           "values": {"CAP": "48"}}}}}}}}   (values: only a check with `values`, where it holds)

Part of `verifier.ledger`, which re-exports FORMAT_VERSION.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._ledger_records import CheckRecord, EntryRecord, ReleaseRecord

FORMAT_VERSION = 3  # 3: a check record's `values`; 2: `missing`, forms and statuses

#: json.dumps(value, sort_keys=True), without making a new encoder for each of the many verdict lines.
_sorted_json = json.JSONEncoder(sort_keys=True).encode
_RELEASE_META = ("date", "identity", "source", "verified_at", "verifier")


def _entry_block(value: EntryRecord, verdict_text: dict[int, tuple[CheckRecord, str]]) -> str:
    """The lines of one entry's record inside its braces: its status, then a check verdict per line."""
    checks = sorted(value.checks.items())
    lines = [f'          "status": {json.dumps(value.status)},', '          "checks": {']
    for ci, (check, verdict) in enumerate(checks):
        comma = "," if ci < len(checks) - 1 else ""
        encoded = verdict_text.get(id(verdict))  # lines shared by releases are encoded once
        if encoded is None or encoded[0] is not verdict:
            encoded = verdict_text[id(verdict)] = (verdict, _sorted_json(verdict.to_json()))
        lines.append(f"            {json.dumps(check)}: {encoded[1]}{comma}")
    lines.append("          }")
    return "\n".join(lines)


def _dump(engine: str, releases: list[tuple[str, ReleaseRecord]]) -> str:
    """Deterministic JSON: nested objects indented, each check verdict on one line."""
    lines = ["{", f'  "engine": {json.dumps(engine)},', f'  "format": {FORMAT_VERSION},', '  "releases": {']
    verdict_text: dict[int, tuple[CheckRecord, str]] = {}
    entry_text: dict[int, tuple[EntryRecord, str]] = {}
    for ri, (version, record) in enumerate(releases):
        lines.append(f"    {json.dumps(version)}: {{")
        for key in _RELEASE_META:
            lines.append(f"      {json.dumps(key)}: {json.dumps(getattr(record, key))},")
        if record.commit is not None:  # only a vendored engine's releases have one: no line in the others
            lines.append(f'      "commit": {json.dumps(record.commit)},')
        lines.append('      "entries": {')
        entries = sorted(record.entries.items())
        for ei, (entry, value) in enumerate(entries):
            lines.append(f"        {json.dumps(entry)}: {{")
            block = entry_text.get(id(value))  # entry records shared by releases are encoded once
            if block is None or block[0] is not value:
                block = entry_text[id(value)] = (value, _entry_block(value, verdict_text))
            lines.append(block[1])
            lines.append("        }" + ("," if ei < len(entries) - 1 else ""))
        lines.append("      }")
        lines.append("    }" + ("," if ri < len(releases) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
