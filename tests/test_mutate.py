"""`gotchas mutate`: a check that pins half of its claim lets a mutant survive; a well-pinned one does not; and no
reformat of the files the checks read changes a verdict."""

from __future__ import annotations

import json

import pytest

from .conftest import VALID_ENTRY, run_cli
from .gitrepo import ISOLATED_GIT_ENV, GitRepo

BATCH = '''\
class ScheduleBatch:
    def retract_decode(self, reqs):
        sorted_indices = list(range(len(reqs)))
        sorted_indices.sort(
            key=lambda i: (len(reqs[i].output_ids), -len(reqs[i].origin_input_ids)),
            reverse=True,
        )
        retracted = []
        while self.out_of_memory():
            idx = sorted_indices.pop()
            retracted.append(reqs[idx])
        if len(retracted) > 0 and self.log_retractions:
            logger.warning("KV cache pool is full. Retract requests. #retracted: %d", len(retracted))
        return retracted
'''


def entry_with(checks: str) -> str:
    start = VALID_ENTRY.index("checks:\n")
    end = VALID_ENTRY.index("severity: performance\n---\n\n## Symptom")
    return VALID_ENTRY[:start] + "checks:\n" + checks + VALID_ENTRY[end:]


HALF = """\
  - id: sorted-by-length
    claim: Retraction sorts by output length, descending, and takes its victims from the end.
    path: pkg/batch.py
    in: ScheduleBatch.retract_decode
    contains: 'sorted_indices.sort(key=lambda i: (len(reqs[i].output_ids), -len(reqs[i].origin_input_ids)), $$$)'
"""

WHOLE = """\
  - id: sorted-by-length
    claim: Retraction sorts by output length, descending, and takes its victims from the end.
    path: pkg/batch.py
    in: ScheduleBatch.retract_decode
    contains: 'sorted_indices.sort(key=lambda i: (len(reqs[i].output_ids), -len(reqs[i].origin_input_ids)), reverse=True)'
  - id: pops-from-the-end
    claim: The victims are taken from the end of that order.
    path: pkg/batch.py
    in: ScheduleBatch.retract_decode
    contains: |
      while self.out_of_memory():
          idx = sorted_indices.pop()
"""

LOG = """\
  - id: warns
    claim: SGLang warns "KV cache pool is full" when it retracts.
    path: pkg/batch.py
    in: ScheduleBatch.retract_decode
    string: KV cache pool is full
"""


@pytest.fixture
def tree(tmp_path):
    folder = tmp_path / "engine"
    (folder / "pkg").mkdir(parents=True)
    (folder / "pkg" / "batch.py").write_text(BATCH)
    return folder


def mutate(capsys, tree, *extra):
    return run_cli(capsys, "mutate", "--source", f"dir:{tree}", "--seconds", "60", *extra)


def test_a_check_that_pins_half_its_claim_lets_the_other_half_change(kb, tree, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(HALF))
    code, out, err = mutate(capsys, tree)
    assert code == 0, err
    assert "sorted-by-length: " in out and "meaning mutants caught" in out
    assert "survived: flip True" in out  # reverse=True is not pinned: `$$$` took it
    assert "survived: drop the keyword argument reverse=True" in out
    assert "-            reverse=True," in out and "+            reverse=False," in out  # shown as a diff
    assert "no verdict changed" in out


def test_a_check_that_pins_its_whole_claim_lets_nothing_survive(kb, tree, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(WHOLE))
    code, out, err = mutate(capsys, tree)
    assert code == 0, err
    assert "survived" not in out
    caught = [line for line in out.splitlines() if line.startswith("  ") and "meaning mutants caught" in line]
    assert [line.split(":")[0].strip() for line in caught] == ["sorted-by-length", "pops-from-the-end"]
    for line in caught:  # "N of N"
        hit, total = line.split(": ")[1].split(" meaning")[0].split(" of ")
        assert hit == total and int(total) >= 3


@pytest.mark.parametrize("text,caught", [
    ("KV cache pool is full. Retract requests. #retracted: %d", True),
    ("KV cache pool is full", False),  # a part of the message: a change to the rest goes unnoticed
])
def test_a_string_check_pins_the_text_it_names(kb, tree, capsys, text, caught):
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(LOG.replace("string: KV cache pool is full",
                                                                          f"string: '{text}'")))
    code, out, _ = mutate(capsys, tree, "--format", "json")
    records = json.loads(out)
    strings = [r for r in records if r["kind"] == "meaning" and r["description"].startswith("change the string")
               and r["check"] == "warns"]
    assert strings and all(r["caught"] is caught for r in strings)


def test_json_records_and_no_neutral_flip(kb, tree, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(HALF))
    code, out, _ = mutate(capsys, tree, "--format", "json")
    records = json.loads(out)
    assert records and set(records[0]) >= {"entry", "check", "mutant", "kind", "description", "verdict_before",
                                            "verdict_after", "caught"}
    neutral = [r for r in records if r["kind"] == "neutral"]
    assert any("ruff" in r["description"] for r in neutral) and any("black" in r["description"] for r in neutral)
    assert any("trailing comma" in r["description"] for r in neutral)
    assert not any(r["caught"] for r in neutral)  # a reformat never changes a verdict
    survivor = next(r for r in records if r["description"] == "flip True")
    assert (survivor["verdict_before"], survivor["verdict_after"], survivor["caught"]) == ("holds", "holds", False)


def test_a_neutral_mutant_that_flips_a_verdict_is_an_error(kb, tree, capsys, monkeypatch):
    """A matcher bug, simulated: a 'neutral' rewrite that in fact changes the code must be reported as such."""
    from verifier import mutants as mutate_module  # where neutral_mutants looks _rewrites up

    real = mutate_module._rewrites

    def broken(root, data):
        yield from real(root, data)
        yield "a rewrite that is not neutral", data.replace(b"reverse=True", b"reverse=False")

    monkeypatch.setattr(mutate_module, "_rewrites", broken)
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(WHOLE))
    code, out, _ = mutate(capsys, tree)
    assert code == 1
    assert "1 changed a verdict (a matcher bug)" in out
    assert "a rewrite that is not neutral in pkg/batch.py changed sorted-by-length" in out


@pytest.fixture
def pr(kb, monkeypatch):
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(WHOLE))
    repo = GitRepo(kb)
    repo.commit("the KB")
    repo.git("checkout", "--quiet", "-b", "pr")
    return repo


def test_a_pull_request_gets_a_warning_at_a_check_that_pins_half_its_claim(pr, kb, tree, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(HALF))
    pr.commit("a check that pins less")
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{tree}", "--format", "github")
    assert code == 0  # the check holds; what it does not pin is a warning
    warnings = [line for line in out.splitlines() if line.startswith("::warning")]
    assert warnings and all(w.startswith("::warning file=gotchas/ops-example.md,line=12,") for w in warnings)
    assert any("flip True" in w for w in warnings)
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{tree}", "--format", "json")
    kinds = {r["kind"] for r in json.loads(out)}
    assert kinds >= {"check", "meaning", "neutral"}


def test_a_reformat_that_breaks_a_fragment_that_is_not_python_is_the_fragment_s_fault(kb, tree, capsys):
    """`] = ...` is compared as written: redundant parentheses around the value break it. That is a check to
    rewrite (a warning), not a bug of the matcher (an error)."""
    (tree / "pkg" / "fields.py").write_text("class Fields:\n    timeout: A[float, 'help'] = 300\n")
    checks = """\
  - id: default-300
    claim: The timeout defaults to 300 s.
    path: pkg/fields.py
    in: Fields.timeout
    contains: '] = 300'
"""
    (kb / "gotchas" / "ops-example.md").write_text(entry_with(checks))
    code, out, _ = mutate(capsys, tree)
    assert code == 0
    assert "which compare code as written (a regex, or a fragment that is not Python): write them as code" in out
    assert "(and 1 of checks that compare code as written)" in out
    code, out, _ = mutate(capsys, tree, "--format", "github")
    assert "::warning file=gotchas/ops-example.md,line=12," in out and "::error" not in out


def test_no_neutral_rewrite_reaches_inside_an_f_string():
    """`f"{g(x)}"` with a comma added inside the field is another string (its text is what a check compares):
    the rewrites leave strings whole, fields included, and still rewrite the call around them."""
    from verifier.mutate import neutral_mutants

    text = 'def f(t):\n    raise ValueError(f"no {type(t).__name__} here", code(1))\n'
    rewritten = {m.description: m.text for m in neutral_mutants("pkg/m.py", text, formatters={})}
    commas = rewritten["a trailing comma in every call"]
    assert 'f"no {type(t).__name__} here"' in commas and "code(1,)" in commas
    assert "type(t,)" not in commas
