"""Conditions (`when`, FORMAT.md "Conditions"): how they are read, linted, described in the schema and compared."""

from __future__ import annotations

import jsonschema
import pytest

from verifier import kb as kb_module
from verifier import lint, schema
from verifier.entries import load_entry
from verifier.model import COMPUTED, Condition, setting_value

from .conftest import VALID_ENTRY
from .test_schema import front_matter_as_json

# VALID_ENTRY with a `when` block before `checks:`; the block's first line is line 11.
WHEN = """\
when:
  - flag: --scheduling-policy
    is: [fcfs]
    default: fcfs
    witness: zero
"""


def with_when(block: str, engines: str = "[vllm]") -> str:
    return VALID_ENTRY.replace("checks:\n", block + "checks:\n", 1).replace("engines: [vllm]", f"engines: {engines}")


def lint_text(kb_root, text: str):
    path = kb_root / "gotchas" / "ops-example.md"
    path.write_text(text)
    loaded = load_entry(path, display="gotchas/ops-example.md")
    return lint.lint(loaded, kb_module.load(kb_root)), loaded


def test_a_condition_is_read_with_its_engine_values_default_and_line(kb_root):
    diagnostics, loaded = lint_text(kb_root, with_when(WHEN))
    assert diagnostics == []
    (condition,) = loaded.entry.conditions
    assert condition == Condition("vllm", ("--scheduling-policy",), None, ("fcfs",), False, "fcfs", "zero", line=12)
    assert condition.describe() == "--scheduling-policy is fcfs"


def test_booleans_aliases_bounds_and_computed_defaults_are_read(kb_root):
    block = """\
when:
  - flag: [--enable-cache-report, -ecr]
    is-not: [true]
    default: false
    witness: zero
    since: 0.5.22
  - env: VLLM_USE_V1
    is: ["1"]
    default: computed
    witness: metric
    until: 0.11.0
"""
    diagnostics, loaded = lint_text(kb_root, with_when(block))
    assert diagnostics == []
    flag, env = loaded.entry.conditions
    assert flag.flags == ("--enable-cache-report", "-ecr") and flag.values == (True,) and flag.negated
    assert flag.default is False and flag.since == "0.5.22" and flag.boolean
    assert flag.describe() == "--enable-cache-report is not set"
    assert env.env == "VLLM_USE_V1" and env.values == ("1",) and env.computed and env.default == COMPUTED
    assert not env.applies("0.12.0") and env.applies("0.11.0") and flag.applies("0.5.22.post1")


# (the `when` block, the rule code, the line it must point at). The block starts at line 11.
CASES = [
    ("when:\n  - flag: --x\n    is: [a]\n    default: a\n    witness: zero\n    severity: high\n", "G201", 16),
    ("when:\n  - is: [a]\n    default: a\n    witness: zero\n", "G202", 12),  # no flag nor env
    ("when:\n  - flag: --x\n    default: a\n    witness: zero\n", "G202", 12),  # no is nor is-not
    ("when:\n  - flag: --x\n    is: [a]\n    witness: zero\n", "G202", 12),  # no default
    ("when:\n  - flag: --x\n    is: [a]\n    default: a\n", "G202", 12),  # no witness
    ("when:\n  - flag: --x\n    is: [a]\n    default: a\n    witness: nope\n", "G202", 15),  # not a check
    ("when:\n  - flag: --x\n    env: X\n    is: [a]\n    default: a\n    witness: zero\n", "G203", 13),
    ("when:\n  - flag: --x\n    is: [a]\n    is-not: [b]\n    default: a\n    witness: zero\n", "G203", 14),
    ("when:\n  - flag: --x\n    is: a\n    default: a\n    witness: zero\n", "G203", 13),  # not a list
    ("when:\n  - flag: x\n    is: [a]\n    default: a\n    witness: zero\n", "G203", 12),  # not a flag
    ("when:\n  - flag: --no-x\n    is: [true]\n    default: true\n    witness: zero\n", "G203", 12),
    ("when:\n  - flag: --x\n    is: [true, a]\n    default: true\n    witness: zero\n", "G203", 13),
    ("when:\n  - flag: --x\n    is: [true]\n    default: fcfs\n    witness: zero\n", "G203", 14),
    ("when:\n  - flag: --x\n    is: [yes]\n    default: true\n    witness: zero\n", "G203", 13),
    ("when:\n  - env: 1X\n    is: [a]\n    default: a\n    witness: zero\n", "G203", 12),
    ("when: fcfs\n", "G203", 11),
    ("when: []\n", "G210", 11),
    ("when:\n  - flag: --x\n    is: []\n    default: a\n    witness: zero\n", "G210", 13),
    ("when:\n  - flag: [--x, --x]\n    is: [a]\n    default: a\n    witness: zero\n", "G210", 12),
    ("when:\n  - flag: --x\n    is: [a, a]\n    default: a\n    witness: zero\n", "G210", 13),
    ("when:\n  - engine: tgi\n    flag: --x\n    is: [a]\n    default: a\n    witness: zero\n", "G208", 12),
    ("when:\n  - engine: sglang\n    flag: --x\n    is: [a]\n    default: a\n    witness: zero\n", "G304", 12),
    ("when:\n  - flag: --x\n    is: [a]\n    default: a\n    witness: zero\n    since: soon\n", "G312", 16),
    ("when:\n  - flag: --x\n    is: [a]\n    default: a\n    witness: zero\n    since: 0.9.0\n    until: 0.8.0\n",
     "G312", 16),
    # what clients send, endpoints, facts and alternatives
    ("when:\n  - request: priority\n    default: a\n", "G203", 13),  # a request field has no default
    ("when:\n  - request: not a field\n", "G203", 12),
    ("when:\n  - request: priority\n    is: [1]\n    is-not: [2]\n", "G203", 14),
    ("when:\n  - endpoint: v1/chat\n", "G203", 12),  # not a path
    ("when:\n  - endpoint: /v1/chat/completions\n    is: [a]\n", "G203", 13),
    ("when:\n  - only-if: x\n", "G203", 12),  # too short to say anything
    ("when:\n  - flag: --x\n    request: priority\n    is: [a]\n", "G203", 13),  # two subjects
    ("when:\n  - any:\n      - flag: --x\n        is: [a]\n", "G210", 13),  # one alternative
    ("when:\n  - any: --x\n", "G203", 12),
    ("when:\n  - any:\n      - flag: --x\n        is: [a]\n      - any:\n          - only-if: the GPU is old\n"
     "          - only-if: the GPU is new\n", "G203", 16),  # any in any
    ("when:\n  - any:\n      - flag: --x\n      - only-if: the GPU is old\n", "G202", 13),  # alternative malformed
    ("when:\n  - any:\n      - engine: sglang\n        flag: --x\n        is: [a]\n      - only-if: the GPU is old\n",
     "G304", 13),
]


@pytest.mark.parametrize("block,code,line", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_a_bad_condition_gets_its_code_at_its_line(kb_root, block, code, line):
    diagnostics, loaded = lint_text(kb_root, with_when(block))
    assert (code, line) in [(d.code, d.line) for d in diagnostics], diagnostics
    assert all(str(d).startswith("gotchas/ops-example.md:") for d in diagnostics)


def test_requests_endpoints_facts_and_alternatives_are_read(kb_root):
    block = """\
when:
  - request: priority
  - request: tool_choice
    is: [auto]
  - endpoint: /v1/chat/completions
  - only-if: the GPU is a Blackwell GPU
  - any:
      - flag: --enable-auto-tool-choice
        is: [false]
      - flag: --tool-call-parser
        is-not: [hermes, llama3_json]
"""
    diagnostics, loaded = lint_text(kb_root, with_when(block))
    assert diagnostics == []
    priority, choice, endpoint, fact, either = loaded.entry.conditions
    assert [c.kind for c in loaded.entry.conditions] == ["request", "request", "endpoint", "only-if", "any"]
    assert all(c.undecidable for c in (priority, choice, endpoint, fact)) and not either.undecidable
    assert priority.describe() == "requests send priority" and choice.describe() == "requests send tool_choice auto"
    assert endpoint.describe() == "clients call /v1/chat/completions"
    assert fact.describe() == "the GPU is a Blackwell GPU"
    assert either.describe() == ("--enable-auto-tool-choice is not set or --tool-call-parser is not hermes or "
                                 "llama3_json")
    assert [c.engine for c in either.any] == ["vllm", "vllm"] and either.settings() == either.any
    assert priority.settings() == () and either.line == 17 and either.any[1].line == 20


def test_the_schema_accepts_requests_endpoints_facts_and_alternatives(kb_root):
    path = kb_root / "gotchas" / "ops-example.md"
    path.write_text(with_when("when:\n  - request: priority\n    is-not: [0]\n  - endpoint: /invocations\n"
                              "  - only-if: the model is a hybrid model\n  - any:\n      - flag: --x\n        is: [a]\n"
                              "      - env: X\n        is: ['1']\n"))
    assert not list(validator(kb_module.load(kb_root)).iter_errors(front_matter_as_json(load_entry(path))))


def test_a_malformed_condition_is_left_out_of_the_entry(kb_root):
    _, loaded = lint_text(kb_root, with_when("when:\n  - flag: --x\n    is: [a]\n    is-not: [b]\n    default: a\n"
                                             "    witness: zero\n"))
    assert loaded.entry.conditions == ()


def test_two_engines_need_the_condition_engine_and_a_witness_of_that_engine(kb_root):
    text = with_when("when:\n  - flag: --x\n    is: [a]\n    default: a\n    witness: zero\n", "[vllm, sglang]")
    text = text.replace("  - id: metric\n", "  - id: metric\n    engine: vllm\n").replace(
        "  - id: zero\n", "  - id: zero\n    engine: vllm\n")
    diagnostics, _ = lint_text(kb_root, text)
    assert ("G202", 12) in [(d.code, d.line) for d in diagnostics]  # several engines: say which
    diagnostics, _ = lint_text(kb_root, text.replace("  - flag: --x", "  - engine: sglang\n    flag: --x"))
    assert ("G304", 16) in [(d.code, d.line) for d in diagnostics]  # the witness is a vLLM check
    assert "witness 'zero' is a check of vllm" in " ".join(d.message for d in diagnostics)


def validator(kb):
    return jsonschema.Draft202012Validator(schema.entry_schema(kb))


def test_the_schema_accepts_good_conditions(kb_root):
    path = kb_root / "gotchas" / "ops-example.md"
    path.write_text(with_when(WHEN + "  - flag: [--x, -x]\n    is-not: [true]\n    default: computed\n"
                                     "    witness: metric\n    since: 0.9.0\n"))
    assert not list(validator(kb_module.load(kb_root)).iter_errors(front_matter_as_json(load_entry(path))))


SCHEMA_CASES = [c for c in CASES if c[1] in ("G201", "G203", "G210", "G208") and "yes" not in c[0]
                and "default: fcfs" not in c[0]] + [c for c in CASES[1:5]]


@pytest.mark.parametrize("block,code,line", SCHEMA_CASES)
def test_the_schema_rejects_the_shapes_lint_rejects(kb_root, block, code, line):
    path = kb_root / "gotchas" / "ops-example.md"
    path.write_text(with_when(block))
    assert list(validator(kb_module.load(kb_root)).iter_errors(front_matter_as_json(load_entry(path))))


@pytest.mark.parametrize("written,deployed,met", [
    ("fcfs", "fcfs", True), ("fcfs", "priority", False), ("0", "0.0", True), ("0", 0, True), ("1e3", "1000", True),
    (True, True, True), (True, False, False), ("0", "00", True), ("a", "A", False),
])
def test_values_compare_as_settings(written, deployed, met):
    assert Condition("vllm", ("--x",), values=(written,)).met_by(deployed) is met
    assert Condition("vllm", ("--x",), values=(written,), negated=True).met_by(deployed) is (not met)
    assert setting_value(True) is True


def test_show_says_when_the_gotcha_bites_with_default_witness_and_bounds(kb_root, monkeypatch, capsys):
    from .conftest import run_cli

    block = WHEN + "    since: 0.9.2\n"
    (kb_root / "gotchas" / "ops-example.md").write_text(with_when(block))
    monkeypatch.chdir(kb_root)
    code, out, err = run_cli(capsys, "show", "ops-example")
    assert code == 0, err
    assert "  bites only if --scheduling-policy is fcfs (default fcfs, pinned by check zero; since 0.9.2)" in out
    assert "  severity performance; scheme ops;" in out
    (kb_root / "gotchas" / "ops-example.md").write_text(with_when("when:\n  - request: priority\n"))
    code, out, err = run_cli(capsys, "show", "ops-example")
    assert "  bites only if requests send priority\n" in out  # no default to speak of


def _compiled(condition: Condition, defaults: dict | None = None) -> dict:
    from verifier.compiled import condition_to_json

    data = condition_to_json(condition)
    data["any"] = [_compiled(m, defaults) for m in condition.any]
    return {**data, "confirmed": [], "defaults": defaults or {}}


def test_alternatives_and_what_clients_send_decide_in_three_values():
    from verifier.audit import MET, NOT_MET, UNDECIDED, evaluate
    from verifier.deployment import parse_serve

    auto_off = Condition("vllm", ("--enable-auto-tool-choice",), values=(False,))
    policy = Condition("vllm", ("--scheduling-policy",), values=("fcfs",))
    tools = Condition("vllm", request="tools")
    code = {"0.10.0": [False, "vllm/engine/arg_utils.py:1"]}
    either = _compiled(Condition("vllm", any=(auto_off, policy)))
    either["any"][0]["defaults"] = code  # the flag's default in the code; the policy's is not known
    on = parse_serve("vllm serve m --enable-auto-tool-choice --scheduling-policy priority")
    assert evaluate(either, "0.10.0", on)[0] == NOT_MET  # neither alternative
    half = parse_serve("vllm serve m --enable-auto-tool-choice --scheduling-policy fcfs")
    assert evaluate(either, "0.10.0", half)[0] == MET  # one is enough
    # the flag left alone takes the code's default (false: met); the policy has no default in `code`
    assert evaluate(either, "0.10.0", parse_serve("vllm serve m"))[0] == MET
    open_ = parse_serve("vllm serve m --enable-auto-tool-choice")
    outcome, words = evaluate(either, "0.10.0", open_)
    assert outcome == UNDECIDED and "--scheduling-policy is fcfs" in words[0]
    assert evaluate(_compiled(tools), "0.10.0", on) == (UNDECIDED, ["requests send tools"])
    mixed = _compiled(Condition("vllm", any=(auto_off, tools)))
    mixed["any"][0]["defaults"] = code
    assert evaluate(mixed, "0.10.0", open_) == (UNDECIDED, ["requests send tools"])
    assert evaluate(mixed, "0.10.0", parse_serve("vllm serve m"))[0] == MET


def test_set_says_whether_a_setting_is_given_at_all(kb_root):
    from verifier.audit import MET, NOT_MET, UNDECIDED, evaluate
    from verifier.deployment import Settings, parse_serve

    diagnostics, loaded = lint_text(kb_root, with_when("when:\n  - flag: --api-key\n    set: true\n"
                                                       "  - env: VLLM_API_KEY\n    set: false\n"))
    assert diagnostics == []
    key, env = loaded.entry.conditions
    assert key.given is True and env.given is False and key.describe() == "--api-key is given"
    assert evaluate(_compiled(key), "0.10.0", parse_serve("vllm serve m --api-key s3cret"))[0] == MET
    assert evaluate(_compiled(key), "0.10.0", parse_serve("vllm serve m"))[0] == NOT_MET
    assert evaluate(_compiled(key), "0.10.0", None)[0] == UNDECIDED
    assert evaluate(_compiled(env), "0.10.0", parse_serve("VLLM_API_KEY=x vllm serve m"))[0] == NOT_MET
    logged = Settings("vllm", "server.log:3", flags={"api_key": None}, logged=True)
    assert evaluate(_compiled(key), "0.10.0", logged)[0] == NOT_MET  # a log's None is left alone
    for bad, line in (("    set: true\n    is: [a]\n", 14), ("    set: maybe\n", 13)):
        diagnostics, _ = lint_text(kb_root, with_when("when:\n  - flag: --api-key\n" + bad))
        assert ("G203", line) in [(d.code, d.line) for d in diagnostics], diagnostics
    diagnostics, _ = lint_text(kb_root, with_when("when:\n  - request: x\n    set: true\n"))
    assert "G203" in [d.code for d in diagnostics]
