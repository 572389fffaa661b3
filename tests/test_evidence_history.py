"""The ledger's evidence of every release (#29): `verify` keeps, for each verdict at each release it verifies, the
window of lines the site shows (`ledger.window`), once per distinct window; a run of some entries or releases keeps
what the file had of the others; a file whose windows are not what `verify` writes is refused; the site shows
them at the release a reader picks."""

from __future__ import annotations

import json

import pytest

from verifier.ledger import WINDOW_CONTEXT, WINDOW_LINE, WINDOW_MATCH, Ledger, LedgerError, window, window_at

from .conftest import SCHED_PY, VALID_ENTRY, run_cli
from .test_verify import index  # noqa: F401  (the fixture: a local package index with three vllm releases)


def evidence_of(kb) -> dict:
    return json.loads((kb / "ledger" / "evidence" / "vllm.json").read_text())


def test_verify_keeps_the_shown_lines_of_every_release_once(kb, index, capsys):  # noqa: F811
    run_cli(capsys, "verify", "--engine", "vllm")
    data = evidence_of(kb)
    assert data["version"] == "0.10.0"  # the newest's whole excerpts, as before
    at = data["at"]["ops-example/zero"]
    # 0.1.0's code has `-= 1`: the check is changed there and points at no line, so it has no window; 0.2.0 and
    # 0.10.0 have the same code: one window for both
    assert sorted(at) == ["0.10.0", "0.2.0"] and at["0.2.0"] == at["0.10.0"]
    assert len(data["windows"]["ops-example/zero"]) == 1
    assert sorted(data["at"]["ops-example/metric"]) == ["0.1.0", "0.10.0", "0.2.0"]
    lines = SCHED_PY.split("\n")
    start, shown = window_at(data, "0.2.0", "ops-example/zero")
    match = json.loads((kb / "ledger" / "vllm.json").read_text())["releases"]["0.2.0"]["entries"]["ops-example"][
        "checks"]["zero"]["lines"]
    assert (start, shown) == window(lines, match)
    assert any("request.num_computed_tokens = 0" in line for line in shown)
    assert any("vllm:num_preemptions" in line for line in window_at(data, "0.1.0", "ops-example/metric")[1])


def test_a_run_of_one_release_or_one_entry_keeps_the_rest(kb, index, capsys):  # noqa: F811
    (kb / "gotchas" / "ops-other.md").write_text(VALID_ENTRY.replace("id: ops-example", "id: ops-other"))
    run_cli(capsys, "verify", "--engine", "vllm")
    before = evidence_of(kb)
    run_cli(capsys, "verify", "--engine", "vllm", "--release", "0.2.0")
    assert evidence_of(kb) == before  # the same code: the same file
    run_cli(capsys, "verify", "ops-other", "--engine", "vllm", "--release", "0.1.0")
    assert evidence_of(kb) == before
    (kb / "gotchas" / "ops-other.md").unlink()
    run_cli(capsys, "verify", "--engine", "vllm", "--release", "0.1.0")  # the whole KB: a gone entry is forgotten
    after = evidence_of(kb)
    assert not [key for key in after["at"] if key.startswith("ops-other/")]
    assert after["at"]["ops-example/zero"] == before["at"]["ops-example/zero"]


def test_a_window_is_what_the_site_shows_of_a_match():
    lines = [f"line {n}" for n in range(1, 101)]
    assert window(lines, (10, 10)) == (10 - WINDOW_CONTEXT, lines[7:12])
    start, shown = window(lines, (20, 60))  # a long match: its first lines
    assert start == 18 and len(shown) == WINDOW_MATCH + 2 * WINDOW_CONTEXT
    assert window(["x" * 500], (1, 1))[1] == ["x" * WINDOW_LINE + " …"]
    assert window(lines, (1, 1)) == (1, lines[:3])  # not before the file's first line


@pytest.mark.parametrize("windows,at,where", [
    ({"e-x/c": "lines"}, {}, "windows/e-x~1c"),
    ({"e-x/c": [["a"]]}, {"e-x/c": {"0.1.0": [1, 1]}}, "at/e-x~1c/0.1.0/0: names an excerpt that is not there: "
                                                        "windows/e-x~1c: has 1"),  # no window 1
    ({"e-x/c": [["a"]]}, {"e-x/c": {"0.1.0": [0, 0]}}, "at/e-x~1c/0.1.0"),  # no line 0
    ({"e-x/c": [["a"]]}, {"e-x/c": {"../x": [0, 1]}}, "at/e-x~1c/"),
    ({}, {"e-x/c": {"0.1.0": [0, 1]}}, "at/e-x~1c: names excerpts, but: windows/e-x~1c: is not there"),
    ({"X": [["a"]]}, {}, "windows/X: not an entry id/check id"),
    ({"e-x/c": [[1]]}, {}, "windows/e-x~1c/0"),
])
def test_windows_that_are_not_what_verify_writes_are_refused(tmp_path, windows, at, where):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "vllm.json").write_text(json.dumps(
        {"engine": "vllm", "version": None, "checks": {}, "windows": windows, "at": at}))
    with pytest.raises(LedgerError) as raised:
        Ledger(tmp_path).load_evidence("vllm")
    assert where in str(raised.value), str(raised.value)


def test_an_evidence_file_written_before_the_windows_still_reads(tmp_path):
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "vllm.json").write_text(json.dumps({"engine": "vllm", "version": None, "checks": {}}))
    data = Ledger(tmp_path).load_evidence("vllm")
    assert window_at(data, "0.1.0", "e/c") is None
