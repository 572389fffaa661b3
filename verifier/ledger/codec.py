"""The ledger's files as JSON, both ways, in one place: format 3 written (`encode`), formats 1 to 3 read
(`decode`), and the evidence files likewise; nothing else looks at the JSON.

Writing: records as deterministic JSON, keys sorted and one line per check verdict, so that a scheduled run's
diff reads as "these verdicts changed".

Layout of `ledger/<engine>.json` (format 3):

    {"engine": "vllm", "format": 3,
     "releases": {"0.30.0": {
        "date": "2026-09-22", "identity": "sha256:...", "source": "pypi",
        "verified_at": "2026-11-29T07:00:00Z", "verifier": "0.4.0",
        "commit": "<40 hex digits>",   (only a vendored engine: the engine's commit the release holds)
        "entries": {"<entry id>": {"status": "holds", "checks": {
            "<check id>": {"verdict": "holds", "form": 0, "path": "...", "lines": [1, 2], "symbol": "...",
                           "sha256": "<16 hex digits>", "check": "<fingerprint>",
                           "values": {"CAP": "48"}}}}}}}}   (values: only a check with `values`, where it holds)

Reading trusts nothing. The ledger is data a pull request can change, and its keys later name files on
the site, so every value must be of its type and every key one the format has,
release versions and entry and check ids names by `safety.name_problem`; else
the file is refused, naming it and the first bad location
(`releases/0.10.0/entries/foo/checks/bar/verdict`), before anything is written.
A ledger whose versions or ids could not be read back is not written either (`ledger_text`).

Format 1 (before `missing` and forms) is read and migrated: `changed` with
`file-missing` or `symbol-missing` becomes `missing`, every verdict is of
form 0, an entry's `verdict` becomes its `status` (`error` becoming
`unverified`). It is written back as the current format.

Part of `verifier.ledger`, which re-exports its public names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Mapping

from ..errors import EXIT_USAGE, GotchasError
from ..model import CHANGED, ERROR, HOLDS, MISSING, MISSING_REASONS, STATUSES, VERDICTS, entry_status, version_key
from ..safety import name_problem
from .records import (
    CheckRecord,
    EngineLedger,
    EntryRecord,
    Excerpt,
    Excerpts,
    ReleaseRecord,
    Window,
)

FORMAT_VERSION = 3  # 3: a check record's `values`; 2: `missing`, forms and statuses

#: Formats this verifier reads (older ones are migrated on reading).
READABLE_FORMATS = (1, 2, 3)


class LedgerError(GotchasError, exit_code=EXIT_USAGE):
    """The ledger cannot be read, written or locked; the message says which file and why."""


RESTORE = "restore it from git, or delete it and re-run `gotchas verify`"


# --- writing a ledger -------------------------------------------------------------------------------------

def check_json(record: CheckRecord) -> dict:
    """A check record as the ledger writes it: what it does not have left out."""
    data = {"verdict": record.verdict, "reason": record.reason, "form": record.form, "path": record.path,
            "lines": list(record.lines) if record.lines else None, "symbol": record.symbol, "hint": record.hint,
            "message": record.message, "sha256": record.sha256, "check": record.check,
            "values": dict(record.values) if record.values else None}
    return {k: v for k, v in data.items() if v is not None}


def encode(ledger: EngineLedger) -> str:
    """The text of an engine's ledger file, its releases in PEP 440 order."""
    return _dump(ledger.engine, [(v, ledger.releases[v]) for v in ledger.versions()])


def ledger_text(ledger: EngineLedger, where: str) -> str:
    """`encode(ledger)`, once every release version and id in it is a name that reads back; else LedgerError
    (`where`: the file it is for, "not written")."""
    checked: set[str] = set()
    try:
        for version, record in ledger.releases.items():
            _name(version, "version", "a release version", "releases", version)
            for entry, value in record.entries.items():
                if entry not in checked:
                    _name(entry, "id", "an entry id", "releases", version, "entries", entry)
                    checked.add(entry)
                for check in value.checks:
                    if check not in checked:
                        _name(check, "id", "a check id", "releases", version, "entries", entry, "checks", check)
                        checked.add(check)
    except _Malformed as exc:
        raise LedgerError(f"{where}: not written: {_location(exc.at)}: {exc}") from None
    return encode(ledger)


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
            encoded = verdict_text[id(verdict)] = (verdict, _sorted_json(check_json(verdict)))
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


# --- reading a ledger -------------------------------------------------------------------------------------

def parse(text: str, where: str):
    """The JSON value of a ledger, evidence or surface file's text; LedgerError naming `where` when it is not
    JSON as this verifier reads it."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise LedgerError(f"{where}:{exc.lineno}: not valid JSON ({exc.msg}); {RESTORE}") from None
    except (ValueError, RecursionError):  # a number of thousands of digits; arrays nested thousands deep
        raise LedgerError(f"{where}: not valid JSON as this verifier reads it (a number too long, or values nested "
                          f"too deep); {RESTORE}") from None


class _Malformed(Exception):
    """A value of a ledger or evidence file that is not what the format has there. The message says what; `at`
    is where (keys from the top, put in front as the error passes up through the records that hold it);
    `advice` what to do about it."""

    def __init__(self, message: str, *at: object, advice: str = RESTORE) -> None:
        super().__init__(message)
        self.at = list(at)
        self.advice = advice

    def within(self, *at: object) -> _Malformed:
        self.at[:0] = at
        return self

    def refusal(self, where: str) -> LedgerError:
        location = f"{_location(self.at)}: " if self.at else ""
        return LedgerError(f"{where}: {location}{self}; {self.advice}")


def _location(at: Iterable[object]) -> str:
    """Keys as a JSON Pointer without its leading slash (`releases/0.10.0/entries/e/checks/c/verdict`), each
    escaped (`~0` for `~`, `~1` for `/`, an empty key as `""`), so that no control character and no long key
    reaches the terminal."""
    parts = []
    for key in at:
        text = json.dumps(str(key))[1:-1].replace("~", "~0").replace("/", "~1") or '""'
        parts.append(text if len(text) <= 80 else text[:77] + "...")
    return "/".join(parts)


def _kind(value: object) -> str:
    """What a JSON value is, for a message (a hostile value itself is never shown whole)."""
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 40 else value[:37] + "...")
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def _wrong(data: dict, key: str, must: str) -> _Malformed:
    """The error of `data[key]`, which is not what it must be (or missing)."""
    return _Malformed(f"{must}, not {_kind(data[key])}" if key in data else f"missing; {must}", key)


def _unknown(known: Iterable[str]) -> str:
    return f"not a key this format has ({', '.join(sorted(known))})"


def _exact_keys(data: dict, keys: Collection[str]) -> None:
    """`data` has each of `keys` and no other."""
    for key in data:
        if key not in keys:
            raise _Malformed(_unknown(keys), key)
    for key in keys:
        if key not in data:
            raise _Malformed("missing", key)


def _text(value: object, key: str) -> None:
    if type(value) is not str:
        raise _Malformed(f"must be text, not {_kind(value)}", key)


def _line_numbers(value: object, key: str) -> None:
    """The first and the last line of a place: two line numbers, in order."""
    if type(value) is not list or len(value) != 2:
        raise _Malformed(f"must be two line numbers, not {_kind(value)}", key)
    for i, number in enumerate(value):
        if type(number) is not int or number < 1:
            raise _Malformed(f"must be a line number (1 or more), not {_kind(number)}", key, i)
    if value[0] > value[1]:
        raise _Malformed(f"must be two line numbers in order, not {value[0]} then {value[1]}", key)


def _name(value: str, kind: str, what: str, *at: object) -> None:
    problem = name_problem(value, kind)
    if problem is not None:
        raise _Malformed(f"not {what}: it {problem}", *at)


_CHECK_TEXT = ("reason", "path", "symbol", "hint", "message", "check")
_CHECK_KEYS = frozenset(("verdict", "form", "lines", "sha256", "values", *_CHECK_TEXT))
_ENTRY_KEYS = {1: frozenset(("verdict", "checks")), 2: frozenset(("status", "checks"))}
_RELEASE_KEYS = frozenset((*_RELEASE_META, "commit", "entries"))
_COMMIT = re.compile(r"[0-9a-f]{40}")
_TOP_KEYS = frozenset(("engine", "format", "releases"))
_SHA = re.compile(r"[0-9a-f]{1,64}")
_VALUE_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,39}")
_MAX_VALUE = 1000
#: The verdicts of format 1, before `missing`.
_FORMAT_1_VERDICTS = (HOLDS, CHANGED, ERROR)


class _Decoder:
    """Records from one ledger file's JSON, every value checked for its type. A check record that recurs from
    release to release (the same file content, the same verdict) is decoded once and shared, and so is an entry
    record all of whose checks are shared: reading is cheaper, and writing encodes each shared record once."""

    def __init__(self, fmt: int) -> None:
        self.fmt = fmt
        self.verdicts = VERDICTS if fmt >= 2 else _FORMAT_1_VERDICTS
        self.entry_keys = _ENTRY_KEYS[min(fmt, 2)]
        self._checks: dict[tuple, CheckRecord] = {}
        self._entries: dict[tuple, EntryRecord] = {}
        self._names: set[str] = set()  # entry and check ids found to be names

    def check(self, data: object) -> CheckRecord:
        if type(data) is not dict:
            raise _Malformed(f"must be a check verdict (an object), not {_kind(data)}")
        get = data.get
        lines, form = get("lines"), get("form")
        key: tuple | None  # what the record is looked up by, when its numbers are ints
        # Only a record whose numbers are ints (not True, not 1.0, which equal them) is looked up: a record
        # found has the same length and equal fields, and so no other key (the one stored had none) and no
        # value of another type (text equals only text).
        if (form is None or type(form) is int) and (lines is None or type(lines) is list and len(lines) == 2
                                                     and type(lines[0]) is int and type(lines[1]) is int):
            values = get("values")
            key = (len(data), get("verdict"), get("reason"), form, get("path"),
                   None if lines is None else (lines[0], lines[1]), get("symbol"), get("hint"), get("message"),
                   get("sha256"), get("check"),
                   tuple(values.items()) if type(values) is dict else values)
            try:
                found = self._checks.get(key)
            except TypeError:  # a list or an object where text belongs: found by _new_check below
                found = key = None
            if found is not None:
                return found
        else:
            key = None
        found = self._new_check(data)
        if key is not None:
            self._checks[key] = found
        return found

    def _new_check(self, data: dict) -> CheckRecord:
        for key, value in data.items():  # in the file's order: the first bad key is the one reported
            if key == "verdict":
                if type(value) is not str or value not in self.verdicts:
                    raise _Malformed(f"must be one of {', '.join(self.verdicts)}, not {_kind(value)}", key)
            elif key in _CHECK_TEXT:
                _text(value, key)
            elif key == "sha256":
                if type(value) is not str or not _SHA.fullmatch(value):
                    raise _Malformed(f"must be hex digits of a sha256, not {_kind(value)}", key)
            elif key == "form":
                if type(value) is not int or value < 0:
                    raise _Malformed(f"must be a form number (0 or more), not {_kind(value)}", key)
            elif key == "lines":
                _line_numbers(value, key)
            elif key == "values" and self.fmt >= 3:
                if type(value) is not dict or not value:
                    raise _Malformed(f"must be an object (value name -> the text it bound), not {_kind(value)}", key)
                for name, text in value.items():
                    if not _VALUE_NAME.fullmatch(name):
                        raise _Malformed("not a value name (capitals, like CAP)", key, name)
                    if type(text) is not str or len(text) > _MAX_VALUE:
                        raise _Malformed(f"must be text of at most {_MAX_VALUE} characters, not {_kind(text)}",
                                         key, name)
            else:
                raise _Malformed(_unknown(_CHECK_KEYS), key)
        if "verdict" not in data:
            raise _wrong(data, "verdict", f"must be one of {', '.join(self.verdicts)}")
        verdict, reason, form, lines = data["verdict"], data.get("reason"), data.get("form"), data.get("lines")
        if self.fmt == 1:  # before `missing` and forms: a place not found was `changed`, and every check had one form
            if verdict == CHANGED and reason in MISSING_REASONS:
                verdict = MISSING
            form = 0 if verdict != ERROR else None
        values = data.get("values")
        return CheckRecord(verdict, reason, form, data.get("path"), tuple(lines) if lines else None,
                           data.get("symbol"), data.get("hint"), data.get("message"), data.get("sha256"),
                           data.get("check"), tuple(values.items()) if values else None)

    def name(self, value: str, what: str, *at: object) -> None:
        if value not in self._names:
            _name(value, "id", what, *at)
            self._names.add(value)

    def entry(self, data: object, version: str) -> EntryRecord:
        if type(data) is not dict:
            raise _Malformed(f"must be an entry record (an object), not {_kind(data)}")
        for key in data:
            if key not in self.entry_keys:
                raise _Malformed(_unknown(self.entry_keys), key)
        found = data.get("checks")
        if type(found) is not dict:
            raise _wrong(data, "checks", "must be an object (check id -> verdict)")
        checks = {}
        names = self._names
        for check, value in found.items():
            if check not in names:
                self.name(check, "a check id", "checks", check)
            try:
                checks[check] = self.check(value)
            except _Malformed as exc:
                raise exc.within("checks", check) from None
        if self.fmt == 1:  # the entry's `verdict`, recomputed by today's rules (an old `error` is `unverified`)
            old = data.get("verdict")
            if type(old) is not str or old not in _FORMAT_1_VERDICTS:
                raise _wrong(data, "verdict", f"must be one of {', '.join(_FORMAT_1_VERDICTS)}")
            status = entry_status(version, (c.verdict for c in checks.values()))
        else:
            written = data.get("status")
            if type(written) is not str or written not in STATUSES:
                raise _wrong(data, "status", f"must be one of {', '.join(STATUSES)}")
            status = written
        key = (status, tuple((name, id(record)) for name, record in checks.items()))
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = EntryRecord(status, checks)
        return found

    def release(self, record: object, version: str) -> ReleaseRecord:
        if type(record) is not dict:
            raise _Malformed(f"must be a release record (an object), not {_kind(record)}")
        meta = dict.fromkeys(_RELEASE_META)
        for key, value in record.items():
            if key in meta:
                if value is not None and type(value) is not str:
                    raise _Malformed(f"must be text or null, not {_kind(value)}", key)
                meta[key] = value
            elif key == "commit":
                if type(value) is not str or not _COMMIT.fullmatch(value):
                    raise _Malformed("must be a commit id (40 lowercase hex digits)", key)
                meta[key] = value
            elif key != "entries":
                raise _Malformed(_unknown(_RELEASE_KEYS), key)
        found = record.get("entries")
        if type(found) is not dict:
            raise _wrong(record, "entries", "must be an object (entry id -> entry record)")
        entries = {}
        for entry, value in found.items():
            self.name(entry, "an entry id", "entries", entry)
            try:
                entries[entry] = self.entry(value, version)
            except _Malformed as exc:
                raise exc.within("entries", entry) from None
        return ReleaseRecord(**meta, entries=entries)


def decode(data: object, engine: str, where: str) -> EngineLedger:
    """The ledger of `engine` from a file's parsed JSON; LedgerError, naming `where` and the first bad location
    in it, when it is not one."""
    try:
        return _decode(data, engine)
    except _Malformed as exc:
        raise exc.refusal(where) from None


def _decode(data: object, engine: str) -> EngineLedger:
    if type(data) is not dict:
        raise _Malformed(f"not a ledger of {engine}: not an object but {_kind(data)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise _Malformed(_unknown(_TOP_KEYS), key)
    if data.get("engine") != engine:
        raise _wrong(data, "engine", f"not a ledger of {engine}")
    fmt = data.get("format")
    if type(fmt) is not int:
        raise _Malformed("no ledger format number", "format")
    shown = fmt if abs(fmt) < 10 ** 9 else "..."
    if fmt > FORMAT_VERSION:
        raise _Malformed(f"written by a newer verifier (format {shown})", "format", advice="upgrade gotchas")
    if fmt not in READABLE_FORMATS:
        raise _Malformed(f"ledger format {shown} is not one this verifier reads "
                         f"({', '.join(map(str, READABLE_FORMATS))})", "format",
                         advice="delete it and re-run `gotchas verify`")
    found = data.get("releases")
    if type(found) is not dict:
        raise _wrong(data, "releases", "must be an object (release version -> release record)")
    releases = {}
    decoder = _Decoder(fmt)
    for version, record in found.items():
        _name(version, "version", "a release version", "releases", version)
        try:
            releases[version] = decoder.release(record, version)
        except _Malformed as exc:
            raise exc.within("releases", version) from None
    return EngineLedger(engine, releases, migrated=fmt < FORMAT_VERSION)


# --- evidence ---------------------------------------------------------------------------------------------
#
# `ledger/evidence/<engine>.json`: {"engine", "version" (the newest release verified), "checks": entry/check ->
# its excerpt there (path, start, lines, match, verdict), "windows": entry/check -> the distinct windows it had,
# "at": entry/check -> version -> [index into its windows, first line]}.

_PAIR = re.compile(r"\[\n +(\d+),\n +(\d+)\n +\]")


def excerpts_json(engine: str, newest: Excerpts) -> dict:
    """The top of an evidence file: the newest release's excerpts."""
    return {"engine": engine, "version": newest.version,
            "checks": {key: _excerpt_json(excerpt) for key, excerpt in newest.checks.items()}}


def _excerpt_json(excerpt: Excerpt) -> dict:
    return {"path": excerpt.path, "start": excerpt.start, "lines": list(excerpt.lines), "match": list(excerpt.match),
            "verdict": excerpt.verdict}


def window_at(evidence: dict, version: str, key: str) -> Window | None:
    """The window the evidence keeps of `key` (entry/check) at `version`, or None."""
    ref = evidence.get("at", {}).get(key, {}).get(version)
    if ref is None:
        return None
    return Window(ref[1], evidence["windows"][key][ref[0]])


def merge_evidence(evidence: dict | None, engine: str, old: dict | None, merge: bool,
                   windows: Mapping[str, Mapping[str, Window]], entries: Collection[str],
                   keep: Collection[str] | None) -> dict:
    """The evidence file to write: `evidence` (the newest release's excerpts; None: those of `old`, the file as
    read before, which must then be given, as with `merge`); with `merge`, other entries' excerpts of the same
    release from `old` stay. `windows`, `entries` and `keep` as in `EvidenceUpdate`."""
    if evidence is None:
        assert old is not None  # the caller reads it
        evidence = {"engine": engine, "version": old.get("version"), "checks": old.get("checks", {})}
    elif merge and old is not None and old.get("version") == evidence["version"]:
        evidence = {**evidence, "checks": {**old["checks"], **evidence["checks"]}}
    if keep is not None:
        evidence = {**evidence, "checks": {k: v for k, v in evidence["checks"].items()
                                           if k.partition("/")[0] in keep}}
    return {**evidence, **_history(old or {}, windows, entries, keep)}


def evidence_text(evidence: dict, where: str) -> str:
    """The text of an evidence file, once it is what `decode_evidence` reads back; else LedgerError (`where`:
    the file it is for, "not written")."""
    try:
        _check_evidence(evidence, evidence["engine"])
    except _Malformed as exc:
        raise LedgerError(f"{where}: not written: {_location(exc.at)}: {exc}") from None
    text = json.dumps(evidence, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    return _PAIR.sub(r"[\1, \2]", text)  # a release's [window, line] on its line: a third of the size


def _history(old: dict, windows: Mapping[str, Mapping[str, Window]], entries: Collection[str],
             keep: Collection[str] | None) -> dict:
    """The `windows` and `at` of an evidence file: `old`'s, with `windows` (version -> key -> (start, lines)) in
    place of what it had of `entries` at those versions. Each key's distinct windows are kept once, and `at`
    says which one each release has and where it starts: key -> version -> [index, first line]."""
    by_key: dict[str, dict[str, Window]] = {}
    for key, versions in old.get("at", {}).items():
        entry = key.partition("/")[0]
        if keep is not None and entry not in keep:
            continue
        for version in versions:
            found = window_at(old, version, key)
            if found is not None and not (version in windows and entry in entries):
                by_key.setdefault(key, {})[version] = found
    for version, of_version in windows.items():
        for key, window in of_version.items():
            by_key.setdefault(key, {})[version] = window
    out_windows: dict[str, list[list[str]]] = {}
    at: dict[str, dict[str, list[int]]] = {}
    for key in sorted(by_key):
        distinct: dict[tuple[str, ...], int] = {}
        for version in sorted(by_key[key], key=version_key):
            start, lines = by_key[key][version]
            at.setdefault(key, {})[version] = [distinct.setdefault(tuple(lines), len(distinct)), start]
        out_windows[key] = [list(lines) for lines in distinct]
    return {"windows": out_windows, "at": at}


_EVIDENCE_KEYS = ("engine", "version", "checks")
#: Written from verifier 0.x of #29 on; a file without them has no excerpts of older releases.
_EVIDENCE_HISTORY_KEYS = ("windows", "at")
_EXCERPT_KEYS = ("lines", "match", "path", "start", "verdict")


def decode_evidence(data, engine: str, where: str) -> dict:
    """An evidence file's parsed JSON, checked to be what `verify` writes (so that nothing else reaches the
    site); LedgerError, naming `where` and the first bad location in it, when it is not."""
    try:
        _check_evidence(data, engine)
    except _Malformed as exc:
        raise exc.refusal(where) from None
    return data


def _check_evidence(data: object, engine: str) -> None:
    if type(data) is not dict:
        raise _Malformed(f"not evidence of {engine}: not an object but {_kind(data)}")
    for key in data:
        if key not in _EVIDENCE_KEYS + _EVIDENCE_HISTORY_KEYS:
            raise _Malformed(_unknown(_EVIDENCE_KEYS + _EVIDENCE_HISTORY_KEYS), key)
    for key in _EVIDENCE_KEYS:
        if key not in data:
            raise _Malformed("missing", key)
    if data["engine"] != engine:
        raise _Malformed(f"not evidence of {engine} (it says {_kind(data['engine'])})", "engine")
    if data["version"] is not None:
        _name(data["version"], "version", "a release version", "version")
    checks = data["checks"]
    if type(checks) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> excerpt), not {_kind(checks)}", "checks")
    for name, excerpt in checks.items():
        entry, slash, check = name.partition("/")
        if not slash:
            raise _Malformed("not an entry id/check id", "checks", name)
        _name(entry, "id", "an entry id/check id", "checks", name)
        _name(check, "id", "an entry id/check id", "checks", name)
        try:
            _check_excerpt(excerpt)
        except _Malformed as exc:
            raise exc.within("checks", name) from None


    _check_history(data.get("windows", {}), data.get("at", {}))


def _check_history(windows: object, at: object) -> None:
    """`windows`: entry/check -> the distinct excerpts (lists of lines) it had; `at`: entry/check -> version ->
    [index into its windows, number of the first line]. A bad value is refused where it is. Where the two do not
    agree (a check's windows no release names, a release naming an excerpt that is not there), which side is wrong
    is unknown: the refusal names both places."""
    if type(windows) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> excerpts), not {_kind(windows)}", "windows")
    if type(at) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> releases), not {_kind(at)}", "at")
    for where, found in (("windows", windows), ("at", at)):
        for name in found:
            entry, slash, check = name.partition("/")
            if not slash:
                raise _Malformed("not an entry id/check id", where, name)
            _name(entry, "id", "an entry id/check id", where, name)
            _name(check, "id", "an entry id/check id", where, name)
    for name, found in windows.items():
        if type(found) is not list:
            raise _Malformed(f"must be a list of excerpts, not {_kind(found)}", "windows", name)
        for i, lines in enumerate(found):
            if type(lines) is not list or not all(type(line) is str for line in lines):
                raise _Malformed("must be a list of lines of text", "windows", name, i)

    def pointer(*parts: str) -> str:
        return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)

    # what one side names and the other has not: both named, the side at fault being unknown
    unnamed = [name for name in windows if name not in at]
    dangling = [name for name in at if name not in windows]
    if unnamed:
        also = f"; and: {pointer('at', dangling[0])}: names excerpts windows has not" if dangling else ""
        raise _Malformed(f"are no release's excerpts: {pointer('at', unnamed[0])}: is not there{also}", "windows",
                         unnamed[0])
    for name, versions in at.items():
        if type(versions) is not dict:
            raise _Malformed(f"must be an object (version -> excerpt), not {_kind(versions)}", "at", name)
        if name not in windows:
            raise _Malformed(f"names excerpts, but: {pointer('windows', name)}: is not there", "at", name)
        for version, ref in versions.items():
            _name(version, "version", "a release version", "at", name, version)
            if not (type(ref) is list and len(ref) == 2 and all(type(n) is int for n in ref) and ref[1] >= 1
                    and ref[0] >= 0):
                raise _Malformed("must be [an index into this check's windows, a line number]", "at", name, version)
            if ref[0] >= len(windows[name]):
                raise _Malformed(f"names an excerpt that is not there: {pointer('windows', name)}: has "
                                 f"{len(windows[name])}", "at",
                                 name, version, 0)


def _check_excerpt(excerpt: object) -> None:
    if type(excerpt) is not dict:
        raise _Malformed(f"must be an excerpt (an object), not {_kind(excerpt)}")
    _exact_keys(excerpt, _EXCERPT_KEYS)
    _text(excerpt["path"], "path")
    if type(excerpt["verdict"]) is not str or excerpt["verdict"] not in VERDICTS:
        raise _Malformed(f"must be one of {', '.join(VERDICTS)}, not {_kind(excerpt['verdict'])}", "verdict")
    if type(excerpt["start"]) is not int or excerpt["start"] < 1:
        raise _Malformed(f"must be a line number (1 or more), not {_kind(excerpt['start'])}", "start")
    _line_numbers(excerpt["match"], "match")
    lines = excerpt["lines"]
    if type(lines) is not list:
        raise _Malformed(f"must be a list of lines of text, not {_kind(lines)}", "lines")
    for i, line in enumerate(lines):
        if type(line) is not str:
            raise _Malformed(f"must be a line of text, not {_kind(line)}", "lines", i)
