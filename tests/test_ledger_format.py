"""The ledger's one codec: typed records in and out, format 1 migrated on reading, anything else refused with a
message that names the file and what is wrong, and never misread."""

from __future__ import annotations

import json

import pytest

from verifier.ledger import FORMAT_VERSION, CheckRecord, EntryRecord, Ledger, LedgerError, check_json, encode

from .conftest import run_cli

#: A ledger written by gotchas 0.3.0 (format 1), before `missing` and forms.
FORMAT_1 = {
    "engine": "vllm", "format": 1,
    "releases": {
        "0.1.0": {"date": "2024-01-02", "identity": "sha256:aa", "source": "pypi",
                  "verified_at": "2026-11-29T08:35:32Z", "verifier": "0.3.0", "entries": {
                      "ops-example": {"verdict": "changed", "checks": {
                          "zero": {"check": "c0", "path": "pkg/sched.py", "reason": "file-missing",
                                   "verdict": "changed"},
                          "metric": {"check": "c1", "lines": [1, 1], "path": "pkg/metrics.py", "sha256": "ab",
                                     "verdict": "holds"}}},
                      "ops-other": {"verdict": "changed", "checks": {
                          "a": {"check": "c2", "path": "x.py", "reason": "symbol-missing", "symbol": "A.b",
                                "verdict": "changed"},
                          "b": {"check": "c3", "path": "x.py", "reason": "not-found", "verdict": "changed"}}},
                      "ops-error": {"verdict": "error", "checks": {
                          "a": {"check": "c4", "message": "network", "path": "x.py", "reason": "unavailable",
                                "verdict": "error"}}}}},
    },
}


def write(folder, data) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vllm.json").write_text(json.dumps(data) if not isinstance(data, str) else data)


def test_format_1_is_migrated_on_reading(tmp_path):
    write(tmp_path, FORMAT_1)
    release = Ledger(tmp_path).load("vllm").releases["0.1.0"]
    example = release.entries["ops-example"]
    # A place that could not be found is `missing` now, and says nothing about the code: not `changed`.
    assert example.checks["zero"] == CheckRecord("missing", "file-missing", 0, "pkg/sched.py", check="c0")
    assert example.checks["metric"] == CheckRecord("holds", None, 0, "pkg/metrics.py", (1, 1), sha256="ab",
                                                   check="c1")
    assert example.status == "unverified"  # was "changed"
    other = release.entries["ops-other"]
    assert other.checks["a"].verdict == "missing" and other.checks["b"].verdict == "changed"
    assert other.status == "changed"  # a contradicted claim still is one
    error = release.entries["ops-error"]
    assert error.status == "unverified" and error.checks["a"].form is None  # an old entry `error` is unverified
    assert release.verifier == "0.3.0" and release.identity == "sha256:aa"


def test_a_migrated_ledger_is_written_back_as_the_current_format(tmp_path):
    write(tmp_path, FORMAT_1)
    ledger = Ledger(tmp_path)
    ledger.save(ledger.load("vllm"))
    data = json.loads((tmp_path / "vllm.json").read_text())
    assert data["format"] == FORMAT_VERSION == 3
    entry = data["releases"]["0.1.0"]["entries"]["ops-example"]
    assert entry == {"status": "unverified", "checks": {
        "metric": {"check": "c1", "form": 0, "lines": [1, 1], "path": "pkg/metrics.py", "sha256": "ab",
                   "verdict": "holds"},
        "zero": {"check": "c0", "form": 0, "path": "pkg/sched.py", "reason": "file-missing", "verdict": "missing"}}}
    assert Ledger(tmp_path).load("vllm").releases == ledger.load("vllm").releases  # reads back the same


def test_a_vendored_commit_is_kept_and_only_where_there_is_one(tmp_path):
    data = json.loads(json.dumps(FORMAT_1))
    data["releases"]["0.1.1"] = dict(data["releases"]["0.1.0"], commit="0c1e57098bba43ac29e6e3b677cdceebdd22334f")
    write(tmp_path, data)
    ledger = Ledger(tmp_path)
    loaded = ledger.load("vllm")
    assert loaded.releases["0.1.1"].commit == "0c1e57098bba43ac29e6e3b677cdceebdd22334f"
    assert loaded.releases["0.1.0"].commit is None
    ledger.save(loaded)
    text = (tmp_path / "vllm.json").read_text()
    assert text.count('"commit"') == 1
    assert Ledger(tmp_path).load("vllm").releases == loaded.releases


def test_records_round_trip_through_the_codec(tmp_path):
    write(tmp_path, FORMAT_1)
    ledger = Ledger(tmp_path)
    first = ledger.load("vllm")
    ledger.save(first)
    text = (tmp_path / "vllm.json").read_text()
    ledger.save(ledger.load("vllm"))
    assert (tmp_path / "vllm.json").read_text() == text


@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(format=4), "written by a newer verifier (format 4); upgrade gotchas"),
    (lambda d: d.update(format=0), "ledger format 0 is not one this verifier reads"),
    (lambda d: d.pop("format"), "no ledger format number"),
    (lambda d: d.update(format="2"), "no ledger format number"),
    (lambda d: d.update(engine="sglang"), "not a ledger of vllm"),
    # no `missing` in format 1:
    (lambda d: d["releases"]["0.1.0"]["entries"]["ops-example"]["checks"]["zero"].update(verdict="missing"),
     'releases/0.1.0/entries/ops-example/checks/zero/verdict: must be one of holds, changed, error, not "missing"'),
    (lambda d: d["releases"]["0.1.0"]["entries"]["ops-example"]["checks"]["metric"].update(lines=[1]),
     "checks/metric/lines: must be two line numbers"),
    (lambda d: d["releases"]["0.1.0"].update(entries=[]), "releases/0.1.0/entries: must be an object"),
    (lambda d: d["releases"]["0.1.0"].update(date=7), "releases/0.1.0/date: must be text"),
])
def test_a_ledger_that_cannot_be_read_as_one_is_refused_with_where(tmp_path, change, message):
    data = json.loads(json.dumps(FORMAT_1))
    change(data)
    write(tmp_path, data)
    with pytest.raises(LedgerError) as raised:
        Ledger(tmp_path).load("vllm")
    assert str(tmp_path / "vllm.json") in str(raised.value) and message in str(raised.value)


@pytest.mark.parametrize("status", ["error", "does-not-hold", None])
def test_format_2_statuses_are_the_four_of_format_md(tmp_path, status):
    data = json.loads(json.dumps(FORMAT_1))
    data["format"] = 2
    entry = data["releases"]["0.1.0"]["entries"]["ops-example"]
    entry.pop("verdict")
    entry["checks"]["zero"]["verdict"] = "missing"
    if status is not None:
        entry["status"] = status
    write(tmp_path, {**data, "releases": {"0.1.0": {**data["releases"]["0.1.0"], "entries": {"ops-example": entry}}}})
    with pytest.raises(LedgerError, match="/status: (missing; )?must be one of not-affected, holds, changed, unverified"):
        Ledger(tmp_path).load("vllm")


def test_show_and_verify_refuse_a_newer_ledger_and_leave_it(kb, capsys):
    data = {**FORMAT_1, "format": 9}
    write(kb / "ledger", data)
    code, _, err = run_cli(capsys, "show", "ops-example")
    assert code == 2 and "format 9" in err
    code, _, err = run_cli(capsys, "verify", "--source", "dir:/nonexistent")
    assert code in (2, 3)
    assert json.loads((kb / "ledger" / "vllm.json").read_text()) == data


def test_unverified_counts_the_claims_that_hold():
    record = EntryRecord("unverified", {"a": CheckRecord("holds"), "b": CheckRecord("missing", "file-missing"),
                                        "c": CheckRecord("error", "unavailable")})
    assert record.verified == (1, 3)
    assert not record.decided  # an error: the status says nothing of the code
    assert EntryRecord("unverified", {"b": CheckRecord("missing", "file-missing")}).decided


def test_records_that_differ_in_any_field_stay_apart(tmp_path):
    """Records are shared between releases when they are equal: never when any field differs."""
    data = json.loads(json.dumps(FORMAT_1))
    data["format"] = 2
    base = {"check": "c1", "form": 0, "lines": [1, 1], "path": "pkg/metrics.py", "sha256": "ab", "verdict": "holds"}
    variants = [base, {**base, "check": "c9"}, {**base, "lines": [1, 2]}, {**base, "form": 1}, {**base, "sha256": "ac"}]
    data["releases"] = {f"0.{i}.0": {**FORMAT_1["releases"]["0.1.0"], "entries": {"ops-example": {
        "status": "holds", "checks": {"metric": variant}}}} for i, variant in enumerate(variants)}
    write(tmp_path, data)
    ledger = Ledger(tmp_path).load("vllm")
    assert [check_json(ledger.releases[f"0.{i}.0"].entries["ops-example"].checks["metric"])
            for i in range(len(variants))] == variants


def test_the_committed_ledger_reads_and_writes_back_byte_for_byte():
    from .conftest import REPO

    for engine in ("vllm", "sglang", "llama-cpp"):
        text = (REPO / "ledger" / f"{engine}.json").read_text()
        assert encode(Ledger(REPO / "ledger").load(engine)) == text


def test_the_committed_ledger_and_evidence_are_saved_back_byte_for_byte(tmp_path):
    """Through `Ledger.save` and `save_evidence` (the name checks, the evidence's windows recomputed from
    what it says), into another folder: the same bytes."""
    from .conftest import REPO

    committed = Ledger(REPO / "ledger")
    copy = Ledger(tmp_path)
    for engine in committed.engines():
        copy.save(committed.load(engine))
        copy.save_evidence(None, old=committed.load_evidence(engine), engine=engine)
        for path in (f"{engine}.json", f"evidence/{engine}.json"):
            assert (tmp_path / path).read_bytes() == (REPO / "ledger" / path).read_bytes(), path
