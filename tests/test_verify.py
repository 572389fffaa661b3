"""`gotchas verify` and `show` end to end against a package index served on 127.0.0.1."""

from __future__ import annotations

import json
import re

import pytest

from verifier import verify as verify_module
from verifier.ledger import Ledger
from verifier.reading import Reader

from .conftest import METRICS_PY, SCHED_PY, run_cli
from .index_server import Faults, IndexServer, make_sdist

OLD_SCHED = SCHED_PY.replace("        request.num_computed_tokens = 0\n", "        request.num_computed_tokens -= 1\n")


def sdist(version: str, sched: str | None = SCHED_PY, metrics: str = METRICS_PY) -> bytes:
    files = {"pkg/metrics.py": metrics.encode(), "setup.py": b""}
    if sched is not None:
        files["pkg/sched.py"] = sched.encode()
    return make_sdist(files, top=f"vllm-{version}")


@pytest.fixture
def index(monkeypatch, tmp_path):
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        server.add("vllm", "vllm-0.1.0.tar.gz", sdist("0.1.0", OLD_SCHED), upload_time="2024-01-02T00:00:00Z")
        server.add("vllm", "vllm-0.2.0.tar.gz", sdist("0.2.0"), upload_time="2024-02-03T00:00:00Z")
        server.add("vllm", "vllm-0.10.0.tar.gz", sdist("0.10.0"), upload_time="2024-03-04T00:00:00Z")
        server.add("vllm", "vllm-0.11.0rc1.tar.gz", sdist("0.11.0rc1", None))
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        yield server


def ledger_of(kb) -> dict:
    return json.loads((kb / "ledger" / "vllm.json").read_text())


def without_timestamps(text: str) -> str:
    return re.sub(r'"verified_at": "[^"]*"', '"verified_at": ""', text)


def test_verify_every_release_records_ranges_and_transitions(kb, index, capsys):
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 1, out  # the entry changed status (changed in 0.1.0 -> holds in 0.2.0)
    data = ledger_of(kb)
    assert list(data["releases"]) == ["0.1.0", "0.2.0", "0.10.0"]  # PEP 440 order, no pre-release
    first = data["releases"]["0.1.0"]
    assert first["date"] == "2024-01-02" and first["identity"].startswith("sha256:") and first["source"] == "pypi"
    zero = first["entries"]["ops-example"]["checks"]["zero"]
    assert (zero["verdict"], zero["reason"]) == ("changed", "not-found")
    assert data["releases"]["0.10.0"]["entries"]["ops-example"]["checks"]["zero"]["lines"] == [4, 4]
    assert "ops-example: changed in vllm 0.1.0 → holds in 0.2.0" in out

    code, out, _ = run_cli(capsys, "show", "ops-example")
    assert code == 0
    assert "holds in vLLM 0.2.0 – 0.10.0 (latest)" in out
    assert "metric: holds in 0.1.0 – 0.10.0 (latest)" in out
    assert "zero: changed (not-found) in 0.1.0 → holds in 0.2.0" in out
    assert "after:  holds pkg/sched.py:4 in Scheduler.preempt" in out


def test_second_run_is_served_from_the_cache_and_leaves_no_diff(kb, index, capsys):
    run_cli(capsys, "verify", "--engine", "vllm")
    before = (kb / "ledger" / "vllm.json").read_bytes()
    downloads = len([a for a in index.log if a.path.startswith("/files/")])
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 0 and "0 status changes" in out
    assert len([a for a in index.log if a.path.startswith("/files/")]) == downloads
    assert (kb / "ledger" / "vllm.json").read_bytes() == before


def test_new_verifies_only_unseen_releases_and_reports_them(kb, index, capsys, tmp_path):
    run_cli(capsys, "verify", "--engine", "vllm")
    index.add("vllm", "vllm-0.11.0.tar.gz", sdist("0.11.0", None), upload_time="2024-05-06T00:00:00Z")
    report = tmp_path / "report.md"
    code, out, _ = run_cli(capsys, "verify", "--new", "--report", str(report))
    assert code == 1
    assert "verified 1 release (0.11.0 – 0.11.0)" in out
    text = report.read_text()
    assert "0.11.0" in text and "`ops-example`" in text and "file-missing" in text
    # The file is gone: the check is `missing`, the entry `unverified`, and the report says it is not a regression.
    assert "holds in 0.10.0" in text and "unverified in 0.11.0" in text and "changed in 0.11.0" not in text
    assert "## Checks to update" in text and "Claims contradicted" not in text
    assert list(ledger_of(kb)["releases"]) == ["0.1.0", "0.2.0", "0.10.0", "0.11.0"]


def test_release_and_since_select(kb, index, capsys):
    code, out, _ = run_cli(capsys, "verify", "--release", "0.2.0", "--format", "json")
    assert {r["version"] for r in json.loads(out)} == {"0.2.0"}
    code, out, _ = run_cli(capsys, "verify", "--since", "0.2.0", "--format", "json")
    assert {r["version"] for r in json.loads(out)} == {"0.2.0", "0.10.0"}
    code, _, err = run_cli(capsys, "verify", "--release", "9.9.9")
    assert code == 2 and "no release 9.9.9" in err


def test_check_uses_the_latest_release_from_the_index(kb, index, capsys):
    code, out, _ = run_cli(capsys, "check", "--format", "json")
    assert code == 0
    assert {(r["version"], r["verdict"]) for r in json.loads(out)} == {("0.10.0", "holds")}
    code, out, _ = run_cli(capsys, "check", "--release", "0.1.0", "--format", "json")
    assert code == 1
    assert {r["check"]: r["verdict"] for r in json.loads(out)} == {"zero": "changed", "metric": "holds"}


def test_a_corrupt_download_is_an_error_never_changed(kb, index, capsys):
    run_cli(capsys, "verify", "--engine", "vllm")
    before = (kb / "ledger" / "vllm.json").read_text()
    index.add("vllm", "vllm-0.12.0.tar.gz", sdist("0.12.0", None), faults=Faults(lying_digest=True))
    code, out, _ = run_cli(capsys, "verify", "--new", "--format", "json")
    assert code == 3
    records = json.loads(out)
    assert records and {(r["verdict"], r["reason"]) for r in records} == {("error", "unavailable")}
    assert all("digest" in r["message"] for r in records)
    # An unreadable release is not recorded: the next --new run tries it again.
    assert (kb / "ledger" / "vllm.json").read_text() == before


def test_an_unreachable_index_is_an_error_and_the_ledger_is_kept(kb, index, capsys, monkeypatch):
    run_cli(capsys, "verify", "--engine", "vllm")
    before = (kb / "ledger" / "vllm.json").read_text()
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")  # the discard port: refused
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 3
    assert "error: vllm:" in out and "its ledger is unchanged" in out
    assert (kb / "ledger" / "vllm.json").read_text() == before


def test_an_interrupted_run_leaves_the_ledger_as_it_was(kb, index, capsys, monkeypatch):
    run_cli(capsys, "verify", "--release", "0.1.0")
    before = (kb / "ledger" / "vllm.json").read_bytes()
    real = verify_module.verify_release
    calls = []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(verify_module, "verify_release", interrupted)
    code, _, _ = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 130
    assert (kb / "ledger" / "vllm.json").read_bytes() == before
    assert not list((kb / "ledger").glob(".vllm.*"))


def test_the_ledger_is_recomputable(kb, index, capsys):
    run_cli(capsys, "verify")
    first = (kb / "ledger" / "vllm.json").read_text()
    (kb / "ledger" / "vllm.json").unlink()
    run_cli(capsys, "verify")
    assert without_timestamps((kb / "ledger" / "vllm.json").read_text()) == without_timestamps(first)


def test_a_locked_ledger_refuses_clearly(kb, index, capsys):
    with Ledger(kb / "ledger").lock():
        code, _, err = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 3 and "locked by gotchas run pid" in err


def test_ledger_option_puts_it_elsewhere(kb, index, capsys, tmp_path):
    run_cli(capsys, "verify", "--ledger", str(tmp_path / "elsewhere"))
    assert (tmp_path / "elsewhere" / "vllm.json").is_file()
    assert not (kb / "ledger" / "vllm.json").exists()
    code, out, _ = run_cli(capsys, "show", "ops-example", "--ledger", str(tmp_path / "elsewhere"))
    assert "holds in vLLM 0.2.0 – 0.10.0 (latest)" in out


def test_a_corrupt_ledger_is_reported_not_overwritten(kb, index, capsys):
    (kb / "ledger").mkdir()
    (kb / "ledger" / "vllm.json").write_text('{"engine": "vllm", "releases": {')
    code, _, err = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 3 and "vllm.json:1: not valid JSON" in err
    assert (kb / "ledger" / "vllm.json").read_text() == '{"engine": "vllm", "releases": {'


def test_new_fills_in_the_history_of_an_edited_entry(kb, index, capsys):
    run_cli(capsys, "verify", "--engine", "vllm")
    entry = kb / "gotchas" / "ops-example.md"
    entry.write_text(entry.read_text().replace('string: "vllm:num_preemptions"', 'string: "vllm:num_"'))
    code, out, _ = run_cli(capsys, "verify", "--new", "--format", "json")
    assert {r["version"] for r in json.loads(out)} == {"0.1.0", "0.2.0", "0.10.0"}
    code, out, _ = run_cli(capsys, "verify", "--new")
    assert "no release to verify" in out


def test_the_registry_floor_bounds_a_run_without_since(kb, index, capsys):
    registry = kb / "gotchas" / "engines.yaml"
    text = registry.read_text()
    vllm_tag = text.index("  tag_pattern: \"v{version}\"\n")  # vLLM's, the first engine's
    end = vllm_tag + len("  tag_pattern: \"v{version}\"\n")
    registry.write_text(text[:end] + "  oldest: \"0.2.0\"\n" + text[end:])
    code, out, _ = run_cli(capsys, "verify", "--format", "json")
    assert {r["version"] for r in json.loads(out)} == {"0.2.0", "0.10.0"}
    code, out, _ = run_cli(capsys, "verify", "--since", "0.1.0", "--format", "json")
    assert {r["version"] for r in json.loads(out)} == {"0.1.0", "0.2.0", "0.10.0"}


def test_a_rerun_that_only_moves_lines_reports_no_status_change(kb, index, capsys):
    run_cli(capsys, "verify", "--engine", "vllm")
    path = kb / "ledger" / "vllm.json"
    path.write_text(path.read_text().replace('"lines": [4, 4]', '"lines": [40, 40]'))
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 0 and "0 status changes" in out
    assert '"lines": [40, 40]' not in path.read_text()


def test_checks_run_on_a_file_while_the_rest_of_the_archive_is_read(kb, index, monkeypatch, capsys):
    """The archive pass hands each wanted file out as it reads it: here the pass cannot go on until a check ran."""
    import threading

    from verifier.sources.pypi import readers as _readers

    index.add("vllm", "vllm-0.12.0.tar.gz", sdist("0.12.0"))
    evaluated = threading.Event()
    real_known = Reader.known

    def noting(reader, form):
        found = real_known(reader, form)
        evaluated.set()
        return found

    real_read = _readers.read_tar_members

    def slow_pass(raw, wanted, on_member=None, **kwargs):
        found = real_read(raw, wanted, **kwargs)
        first = sorted(found.contents)[0]
        on_member(first, found.contents[first])
        assert evaluated.wait(10), "no check ran before the archive pass ended"
        return found

    monkeypatch.setattr(_readers, "read_tar_members", slow_pass)
    monkeypatch.setattr(Reader, "known", noting)
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm", "--release", "0.12.0")
    assert code == 0, out
    assert ledger_of(kb)["releases"]["0.12.0"]["entries"]["ops-example"]["status"] == "holds"


def test_files_handed_out_before_the_archive_turns_out_corrupt_count_for_nothing(kb, index, capsys):
    whole = sdist("0.12.0")
    index.add("vllm", "vllm-0.12.0.tar.gz", whole[: len(whole) - 12])  # the gzip trailer (CRC, size) is cut
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm", "--release", "0.12.0", "--format", "json")
    assert code == 3
    records = json.loads(out)
    assert {(r["verdict"], r["reason"]) for r in records} == {("error", "unavailable")}
    assert not (kb / "ledger" / "vllm.json").exists() or "0.12.0" not in ledger_of(kb)["releases"]


def test_a_later_member_of_the_same_name_is_the_one_checked(kb, index, capsys):
    from .index_server import tar_member

    broken = OLD_SCHED.encode()
    archive = make_sdist({"pkg/metrics.py": METRICS_PY.encode(), "pkg/sched.py": SCHED_PY.encode(), "setup.py": b""},
                         top="vllm-0.12.0", extra_members=[(tar_member("vllm-0.12.0/pkg/sched.py"), broken)])
    index.add("vllm", "vllm-0.12.0.tar.gz", archive)
    run_cli(capsys, "verify", "--engine", "vllm", "--release", "0.12.0")
    zero = ledger_of(kb)["releases"]["0.12.0"]["entries"]["ops-example"]["checks"]["zero"]
    assert zero["verdict"] == "changed"


def test_a_release_whose_files_are_all_unchanged_is_not_evaluated_again(kb, tmp_path, monkeypatch, capsys,
                                                                        isolated_git):
    """Verdicts are carried over from the release before when every file a check reads is the same blob."""
    from .gitrepo import GitRepo

    repo = GitRepo(tmp_path / "engine")
    repo.write("pkg/sched.py", OLD_SCHED)
    repo.write("pkg/metrics.py", METRICS_PY)
    repo.commit("one")
    repo.tag("v0.1.0")
    repo.write("README", "docs only\n")
    repo.commit("two")
    repo.tag("v0.2.0")  # the same files as 0.1.0
    repo.write("pkg/sched.py", SCHED_PY)
    repo.commit("three")
    repo.tag("v0.3.0")
    calls = []
    real = Reader.known
    monkeypatch.setattr(Reader, "known", lambda reader, form: calls.append(
        reader.snapshot.release.version) or real(reader, form))
    run_cli(capsys, "verify", "--engine", "vllm", "--source", f"git:{repo.path}")
    assert "0.1.0" in calls and "0.3.0" in calls and "0.2.0" not in calls
    releases = ledger_of(kb)["releases"]
    assert releases["0.2.0"]["entries"] == releases["0.1.0"]["entries"]
    assert releases["0.2.0"]["entries"]["ops-example"]["checks"]["zero"]["verdict"] == "changed"
    assert releases["0.3.0"]["entries"]["ops-example"]["checks"]["zero"]["verdict"] == "holds"


def test_a_spent_time_budget_is_an_error_that_the_next_run_tries_again(kb, index, capsys, monkeypatch):
    """`verify` runs under the per-entry budget (verifier.evaluate.ENTRY_SECONDS): past it, an entry's checks
    are `error` (exit 3), never `changed`; a release where nothing was evaluated is not recorded, and the next
    run evaluates it, as if it had never been seen."""
    from verifier import evaluate

    monkeypatch.setattr(evaluate, "ENTRY_SECONDS", 0.0)  # spent before the first evaluation
    code, out, _ = run_cli(capsys, "verify", "--engine", "vllm")
    assert code == 3, out
    assert "error: vllm 0.10.0 ops-example/zero: unavailable: time budget of the entry spent" in out
    assert "error: vllm 0.10.0 was not verified (time budget of the entry spent" in out
    assert ledger_of(kb)["releases"] == {}
    monkeypatch.setattr(evaluate, "ENTRY_SECONDS", 120.0)
    code, out, _ = run_cli(capsys, "verify", "--new")
    assert "verified 3 releases" in out, out
    assert ledger_of(kb)["releases"]["0.10.0"]["entries"]["ops-example"]["checks"]["zero"]["verdict"] == "holds"


def test_new_tries_again_a_verdict_that_a_time_budget_refused(kb, index, capsys):
    run_cli(capsys, "verify", "--engine", "vllm")
    path = kb / "ledger" / "vllm.json"
    data = json.loads(path.read_text())
    refused = {"verdict": "error", "reason": "unavailable", "path": "pkg/sched.py",
               "message": "time budget of the run spent (1800 s of matching); not evaluated in this run"}
    checks = data["releases"]["0.2.0"]["entries"]["ops-example"]["checks"]
    checks["zero"] = {**refused, "check": checks["zero"]["check"]}
    path.write_text(json.dumps(data))
    code, out, err = run_cli(capsys, "verify", "--new")
    assert "verified 1 release (0.2.0 – 0.2.0)" in out, (code, out, err)
    assert ledger_of(kb)["releases"]["0.2.0"]["entries"]["ops-example"]["checks"]["zero"]["verdict"] == "holds"
