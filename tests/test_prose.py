"""Prose at every release: bounded text and values read from the code, as `show --release`, audit, the site and the
JSON print them for one release; parts of a claim; and the lint that binds prose to evidence (G501, G504, G505),
against two releases served by a package index on 127.0.0.1."""

from __future__ import annotations

import json
import shutil

import pytest

from verifier import lint, prose
from verifier.entries import parse_entry
from verifier.kb import load as load_kb
from verifier.model import CHANGED, HOLDS, MISSING, parts_verdicts

from .conftest import REPO, VALID_ENTRY, run_cli, serve_index
from .index_server import make_sdist
from .test_surface import ARG_UTILS_1, ARG_UTILS_2, ENVS_1

# --- the text alone ---------------------------------------------------------------------------------------------


def test_a_bounded_text_applies_only_within_its_bounds():
    text = "Set it. {since 0.9.0: Send `cache_salt`.} {until 0.8.5: Upgrade to 0.9.0.} Then retry."
    assert prose.render(text, "vllm", "0.9.0") == "Set it. Send `cache_salt`. Then retry."
    assert prose.render(text, "vllm", "0.8.5.post1") == "Set it. Upgrade to 0.9.0. Then retry."  # until takes posts
    across = prose.render(text, None, None)
    assert "*(from 0.9.0)* Send `cache_salt`." in across and "*(up to 0.8.5)* Upgrade to 0.9.0." in across


#: (text, engine, version, what a reader of that release reads): what leaving out a bounded text leaves behind.
ITEM = "- First.\n- {since 0.9.0: Send `cache_salt`.}\n  {until 0.8.5: Upgrade to 0.9.0.}\n- Last."
WRAPPED = "A number ends this wrapped line at\n42.\n\n- {since 2.0: new}\n- {until\n  1.0: old}"
PUNCTUATION = "Any URL is fetched {since 0.11.0: , unless a list is set}."
CODE_BRACES = "- First.\n- {since 2.0: Only new.}\n- Keep `{\"a\": 1}` and {key: value}."
RENDERED = [
    pytest.param(CODE_BRACES, "vllm", "1.0", "- First.\n- Keep `{\"a\": 1}` and {key: value}.",
                 id="a list item left empty goes; braces in code and {key: value} are text"),
    pytest.param(WRAPPED, "vllm", "1.5", "A number ends this wrapped line at\n42.",
                 id="only what a left-out text emptied goes ('42.' stays)"),
    pytest.param(WRAPPED, "vllm", "0.5", "A number ends this wrapped line at\n42.\n\n- old",
                 id="a bound's head may wrap"),
    pytest.param("It logs `model: ...` , then {since 2.0: more}. Next {since 2.0: x} word.", "vllm", "1.0",
                 "It logs `model: ...` , then. Next word.",
                 id="text as written keeps its spacing; only a cut is joined"),
    pytest.param(ITEM, "vllm", "0.8.5", "- First.\n- Upgrade to 0.9.0.\n- Last.",
                 id="an item's alternative on its next line becomes the item"),
    pytest.param(ITEM, "vllm", "0.9.0", "- First.\n- Send `cache_salt`.\n- Last.", id="the item as first written"),
    pytest.param("One paragraph\n{until 0.8.5: about old releases}\ngoes on.\n\nAnother.", "vllm", "0.9.0",
                 "One paragraph\ngoes on.\n\nAnother.", id="a line that held only left-out text keeps its paragraph"),
    pytest.param(PUNCTUATION, "vllm", "0.11.0", "Any URL is fetched, unless a list is set.",
                 id="a kept text that starts with punctuation joins the word before"),
    pytest.param(PUNCTUATION, "vllm", "0.10.2", "Any URL is fetched.", id="and its cut leaves no space"),
    pytest.param(PUNCTUATION, None, None, "Any URL is fetched, *(from 0.11.0)* unless a list is set.",
                 id="across releases the punctuation stays with the word before"),
    pytest.param("First. {since 2.0: Second.} {since 3.0: Third.} Last.", "vllm", "1.0", "First. Last.",
                 id="two left-out texts in a row leave one space"),
]


@pytest.mark.parametrize("text, engine, version, expected", RENDERED)
def test_what_a_left_out_text_leaves_behind(text, engine, version, expected):
    assert prose.render(text, engine, version) == expected


def test_braces_in_code_and_in_plain_text_are_no_bound():
    assert prose.parse(CODE_BRACES, ["vllm"]).problems == []


def test_a_quoted_message_is_found_in_a_string_literal_whose_placeholders_it_fills():
    from verifier.surface.prose_lint import _quotes

    code = 'logger.warning(f"Radix cache is not compatible with {backend} attention backend.")'
    assert _quotes("not compatible with flashinfer attention backend", code)
    assert _quotes("Radix cache is not compatible", code)
    assert not _quotes("Radix cache is compatible", code)
    assert not _quotes("with flashinfer", 'x = f"{backend}"')  # a placeholder alone pins nothing


def test_a_quote_is_pinned_only_as_far_as_a_pattern_writes_it():
    from verifier.surface.prose_lint import Mention, _Evidence

    evidence = _Evidence.__new__(_Evidence)
    evidence.patterns = {"1.0": ['raise TimeoutError(f"RPC call to {method} timed out.")', "best_of",
                                 "Graph capturing finished in %.0f secs, took %.2f GiB"]}
    evidence.values, evidence._stored, evidence._surfaces = {}, None, {}

    def pinned(quote: str) -> bool:
        return evidence.pins(Mention(1, "message", quote, (quote,), None, ""), "1.0")

    assert pinned("TimeoutError: RPC call to execute_model timed out.")  # the class is raised with the message
    assert not pinned("ValueError: RPC call to execute_model timed out.")
    assert pinned("Graph capturing finished in N secs, took X GiB")  # the quote fills the placeholders
    assert not pinned("vLLM V1 does not yet support best_of.")  # a pattern that is one word of it pins nothing
    evidence.patterns["1.0"].append("sizes = [1, 2, 4] + [i for i in range(8, 513, 8)]")
    number = Mention(1, "number", "512", ("512",), None, "")
    assert evidence.pins(number, "1.0")  # the last size the range yields
    assert not evidence.pins(Mention(1, "number", "513", ("513.5",), None, ""), "1.0")


def test_engine_bounds_and_values():
    text = "{sglang: SGLang caps at {CAP}.}{vllm: vLLM does not.}"
    assert prose.render(text, "sglang", "0.4.4", {"CAP": "32"}, ["vllm", "sglang"]) == "SGLang caps at 32."
    assert prose.render(text, "vllm", "0.9.0", {"CAP": "32"}, ["vllm", "sglang"]) == "vLLM does not."
    assert prose.render("{example: 48 over 8 ranks leaves 6}", "vllm", "1.0") == "48 over 8 ranks leaves 6"


@pytest.mark.parametrize("text, message", [
    ("{since 0.9: a {until 1.0: b}}", "a bound inside another bound"),
    ("{since 0.9.0: never closed", "not closed"),
    ("{since banana: x}", "not a PEP 440 version"),
    ("{since 2.0 until 1.0: x}", "comes after until"),
    ("{since 1.0 when 2.0: x}", "unknown word 'when'"),
    ("{since 1.0: }", "a bound with no text"),
])
def test_a_malformed_bound_is_said_and_the_text_still_shows(text, message):
    parsed = prose.parse(text, ["vllm"], ["vllm"])
    assert [code for _, code, _ in parsed.problems] == ["G601"]
    assert message in parsed.problems[0][2]
    assert prose.render(text, "vllm", "1.5")  # never raises, never empty


ENTRY_WITH_PROSE = VALID_ENTRY.replace(
    "title: An example gotcha that is well-formed", "title: An example that caps at {CAP} and {CAPP}") \
    .replace("    string: \"vllm:num_preemptions\"\n", "    string: \"vllm:num_preemptions\"\n    part: nowhere\n") \
    .replace("Latency climbs.", "Latency climbs. {since 0.9.0: {until 1.0: nested}}")


def _lint(text: str, kb_root) -> list:
    loaded = parse_entry(text.encode(), "gotchas/ops-example.md", "ops-example")
    return lint.lint(loaded, load_kb(kb_root))


def test_lint_says_where_prose_and_values_are_malformed(kb_root):
    found = _lint(ENTRY_WITH_PROSE, kb_root)
    lines = ENTRY_WITH_PROSE.split("\n")
    by_code = {(d.code, d.line) for d in found}
    title = lines.index("title: An example that caps at {CAP} and {CAPP}") + 1
    assert ("G602", title) in by_code  # {CAP}: no check names it
    assert ("G316", next(i for i, t in enumerate(lines, 1) if "part: nowhere" in t)) in by_code
    assert ("G601", next(i for i, t in enumerate(lines, 1) if "nested" in t)) in by_code


def test_values_need_contains_in_every_form(kb_root):
    text = VALID_ENTRY.replace("    contains: request.num_computed_tokens = 0\n",
                               "    contains: request.num_computed_tokens = $ZERO\n    values: {ZERO: [0]}\n"
                               "    earlier:\n      - until: 0.1.0\n        contains: request.x = 0\n")
    found = [d for d in _lint(text, kb_root) if d.code == "G315"]
    messages = " | ".join(d.message for d in found)
    assert "the fragment of form 1 of earlier does not write $ZERO" in messages
    assert "values need `contains` without `after`, in a Python, C or C++ file; the check is not" in messages


def test_parts_fold_into_one_verdict():
    parts = {"a1": "a", "b1": "b", "b2": "b"}
    assert parts_verdicts({"c": HOLDS, "a1": CHANGED, "b1": HOLDS, "b2": HOLDS}, parts) == ([HOLDS, HOLDS], ["b"])
    assert parts_verdicts({"c": HOLDS, "a1": CHANGED, "b1": CHANGED, "b2": HOLDS}, parts) == ([HOLDS, CHANGED], [])
    assert parts_verdicts({"c": HOLDS, "a1": CHANGED, "b1": MISSING}, parts) == ([HOLDS, MISSING], [])
    assert parts_verdicts({"c": HOLDS}, parts) == ([HOLDS], [])  # no part has a verdict here: the common ground


# --- end to end, against two releases -------------------------------------------------------------------------

SPEC_1 = """\
class Spec:
    def resolve(self, args):
        if args.max_running_requests is None:
            args.max_running_requests = 32
"""
SPEC_2 = """\
import logging
logger = logging.getLogger(__name__)


class Spec:
    def resolve(self, args):
        if args.max_running_requests is None:
            args.max_running_requests = 48
            logger.warning("Max running requests is reset to 48 for speculative decoding.")
"""


def _sdist(version: str, arg_utils: str, spec: str) -> bytes:
    return make_sdist({"vllm/engine/arg_utils.py": arg_utils.encode(), "vllm/envs.py": ENVS_1.encode(),
                       "pkg/spec.py": spec.encode(), "setup.py": b""}, top=f"vllm-{version}")


@pytest.fixture
def index(monkeypatch, tmp_path):
    with serve_index(monkeypatch, tmp_path, {"0.1.0": _sdist("0.1.0", ARG_UTILS_1, SPEC_1),
                                             "0.2.0": _sdist("0.2.0", ARG_UTILS_2, SPEC_2)}) as server:
        yield server


CAP_ENTRY = """\
---
id: perf-cap
title: Speculative decoding caps vLLM at {CAP} running requests
scheme: perf
severity: performance
concepts: [speculative-decoding]
engines: [vllm]
checks:
  - id: cap
    claim: An unset --max-running-requests is set to CAP.
    path: pkg/spec.py
    in: Spec.resolve
    values: {CAP: [32, 48]}
    contains: |-
      if args.max_running_requests is None:
          args.max_running_requests = $CAP
  - id: warning
    claim: From 0.2.0 a warning says so.
    path: pkg/spec.py
    in: Spec.resolve
    string: Max running requests is reset to 48 for speculative decoding.
    since: 0.2.0
---

## Symptom

Throughput stops growing at {CAP} running requests. {since 0.2.0: The log says
`Max running requests is reset to 48 for speculative decoding`.}

## Root cause

The cap is set when the value is unset. The memory share defaults to {default --gpu-memory-utilization}.

## Workaround

- Lower `--gpu-memory-utilization` ({until 0.1.0: default 0.90}{since 0.2.0: default 0.92}).
- {since 0.2.0: Or pass `--tp` with more GPUs.}
"""


@pytest.fixture
def cap_kb(kb_root, monkeypatch, index, capsys):
    (kb_root / "gotchas" / "perf-cap.md").write_text(CAP_ENTRY)
    monkeypatch.chdir(kb_root)
    code, out, err = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 0, out + err
    return kb_root


def test_values_are_recorded_per_release_and_each_release_reads_its_own_text(cap_kb, capsys):
    ledger = json.loads((cap_kb / "ledger" / "vllm.json").read_text())
    assert ledger["format"] == 3
    read = {v: r["entries"]["perf-cap"]["checks"]["cap"].get("values") for v, r in ledger["releases"].items()}
    assert read == {"0.1.0": {"CAP": "32"}, "0.2.0": {"CAP": "48"}}

    code, out, err = run_cli(capsys, "show", "perf-cap", "--release", "0.1.0")
    assert code == 0, err
    assert "# Speculative decoding caps vLLM at 32 running requests" in out
    assert "Throughput stops growing at 32 running requests." in out
    assert "reset to 48" not in out.split("Checks:")[0] and "--tp" not in out  # not at 0.1.0
    assert "default 0.90" in out and "0.92" not in out
    assert "The memory share defaults to 0.9." in out  # the release surface's default at 0.1.0
    assert "cap: holds CAP=32" in out

    code, out, err = run_cli(capsys, "show", "perf-cap", "--release", "0.2.0")
    assert "caps vLLM at 48 running requests" in out and "`--tp` with more GPUs" in out and "default 0.92" in out
    assert "The log says\n`Max running requests is reset to 48" in out

    code, out, err = run_cli(capsys, "show", "perf-cap")  # across releases: each value with its releases
    assert "caps vLLM at 48 (32 in 0.1.0) running requests" in out
    code, out, err = run_cli(capsys, "show", "perf-cap", "--release", "0.2.0")
    assert "The memory share defaults to 0.92." in out

    code, out, err = run_cli(capsys, "show", "perf-cap", "--format", "json")
    records = json.loads(out)
    assert [(r["version"], r["title"]) for r in records] == [
        ("0.1.0", "Speculative decoding caps vLLM at 32 running requests"),
        ("0.2.0", "Speculative decoding caps vLLM at 48 running requests")]
    assert records[0]["checks"][0]["values"] == {"CAP": "32"}

    assert run_cli(capsys, "show", "perf-cap", "--release", "9.9")[0] == 2


def test_audit_prints_the_text_of_the_audited_release(cap_kb, capsys):
    code, out, err = run_cli(capsys, "audit", "--engine", "vllm==0.1.0", "--kb", str(cap_kb))
    assert "perf-cap: Speculative decoding caps vLLM at 32 running requests" in out, out + err
    assert "default 0.90" in out
    code, out, err = run_cli(capsys, "audit", "--engine", "vllm==0.2.0", "--kb", str(cap_kb), "--format", "json")
    finding = next(f for t in json.loads(out)["targets"] for f in t["gotchas"] if f["id"] == "perf-cap")
    assert finding["title"].endswith("at 48 running requests") and "default 0.92" in finding["workaround"]


def test_prose_bound_to_its_releases_lints_clean_and_unbound_prose_is_found(cap_kb, capsys):
    code, out, err = run_cli(capsys, "check", "--engine", "vllm", "--format", "json", "--no-mutate")
    assert [r["message"] for r in json.loads(out) if r.get("code", "").startswith("G5")] == []

    unbound = CAP_ENTRY.replace("{until 0.1.0: default 0.90}{since 0.2.0: default 0.92}", "default 0.92") \
        .replace("- {since 0.2.0: Or pass `--tp` with more GPUs.}", "- Or pass `--tp` with more GPUs.") \
        .replace("{since 0.2.0: The log says\n`Max running requests is reset to 48 for speculative decoding`.}",
                 "The log says\n`Max running requests is reset to 48 for speculative decoding`.") \
        .replace("at {CAP} running requests. ", "at 48 running requests. ")
    unbound = unbound.replace("checks:\n", "when:\n  - only-if: clients also pass --tp to the router\nchecks:\n", 1)
    (cap_kb / "gotchas" / "perf-cap.md").write_text(unbound)
    code, out, err = run_cli(capsys, "check", "--engine", "vllm", "--format", "json", "--no-mutate")
    fact = unbound.split("\n").index("  - only-if: clients also pass --tp to the router") + 1
    assert fact in {r["line"] for r in json.loads(out) if r.get("code") == "G501"}  # audit prints the fact too
    found = {(r["code"], r["message"].split(" is ")[0].split(" does ")[0]): r["message"]
             for r in json.loads(out) if r.get("code", "").startswith("G5")}
    assert set(found) == {("G501", "flag --tp"), ("G504", "number 0.92"), ("G504", "number 48"),
                          ("G505", "quoted message `Max running requests")}
    assert "in vllm 0.1.0, where the entry holds and its text applies" in found[("G504", "number 48")]
    assert code == 1


def test_a_value_the_claim_does_not_allow_is_changed_with_the_value_found(kb_root, monkeypatch, index, capsys):
    (kb_root / "gotchas" / "perf-cap.md").write_text(CAP_ENTRY.replace("[32, 48]", "[32]"))
    monkeypatch.chdir(kb_root)
    run_cli(capsys, "verify", "--engine", "vllm")
    record = json.loads((kb_root / "ledger" / "vllm.json").read_text())["releases"]["0.2.0"]["entries"]["perf-cap"]
    assert record["status"] == "changed"
    cap = record["checks"]["cap"]
    assert cap["verdict"] == "changed" and "CAP is 48 (the claim allows 32)" in cap["hint"] and "values" not in cap


PARTS_ENTRY = CAP_ENTRY.replace("checks:\n", """parts:
  - {id: small, says: with the small cap of the first releases}
  - {id: large, says: with the larger cap}
checks:
  - id: small-cap
    claim: The cap is 32.
    path: pkg/spec.py
    in: Spec.resolve
    contains: args.max_running_requests = 32
    part: small
  - id: large-cap
    claim: The cap is 48.
    path: pkg/spec.py
    in: Spec.resolve
    contains: args.max_running_requests = 48
    part: large
""", 1)


def test_the_status_says_which_part_holds(kb_root, monkeypatch, index, capsys):
    (kb_root / "gotchas" / "perf-cap.md").write_text(PARTS_ENTRY)
    monkeypatch.chdir(kb_root)
    assert run_cli(capsys, "check", "--offline")[0] == 0
    run_cli(capsys, "verify", "--engine", "vllm")
    ledger = json.loads((kb_root / "ledger" / "vllm.json").read_text())
    assert [ledger["releases"][v]["entries"]["perf-cap"]["status"] for v in ("0.1.0", "0.2.0")] == ["holds", "holds"]
    code, out, err = run_cli(capsys, "show", "perf-cap", "--release", "0.1.0")
    assert "at vLLM 0.1.0: holds (part: small: with the small cap of the first releases)" in out
    code, out, err = run_cli(capsys, "show", "perf-cap", "--format", "json")
    assert [r["parts"] for r in json.loads(out)] == [["small"], ["large"]]
    code, out, err = run_cli(capsys, "audit", "--engine", "vllm==0.2.0", "--kb", str(kb_root))
    assert "bites with the larger cap" in out


def test_the_site_reads_each_release_at_that_release(cap_kb, capsys, tmp_path):
    shutil.copytree(REPO / "site", cap_kb / "site")
    out_dir = tmp_path / "_site"
    code, out, err = run_cli(capsys, "site", "--out", str(out_dir))
    assert code == 0, err
    old = (out_dir / "engines" / "vllm" / "0.1.0" / "index.html").read_text()
    new = (out_dir / "engines" / "vllm" / "0.2.0" / "index.html").read_text()
    assert "caps vLLM at 32 running requests" in old and "caps vLLM at 48 running requests" in new
    assert "default 0.90" in old and "default 0.92" in new  # the workaround's first step, at each release
    page = (out_dir / "entries" / "perf-cap" / "index.html").read_text()
    assert "caps vLLM at 48 (32 in 0.1.0) running requests" in page
    assert "(from 0.2.0)" in page  # a page about every release says each bound in words
    assert "defaults to 0.92 (0.9 in 0.1.0)" in page
    data = json.loads((out_dir / "api" / "entries" / "perf-cap.json").read_text())
    by_release = {v: item["title"] for item in data["texts"]["vllm"] for v in item["releases"]}
    assert by_release == {"0.1.0": "Speculative decoding caps vLLM at 32 running requests",
                          "0.2.0": "Speculative decoding caps vLLM at 48 running requests"}
    workaround = {v: item["sections"]["Workaround"] for item in data["texts"]["vllm"] for v in item["releases"]}
    assert "--tp" not in workaround["0.1.0"] and "Or pass `--tp` with more GPUs." in workaround["0.2.0"]
