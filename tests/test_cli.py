"""`gotchas check` end to end, in-process and as a subprocess, with its exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import SCHED_PY, VALID_ENTRY, run_cli


def test_offline_lint_clean_exits_0(kb, capsys):
    code, out, _ = run_cli(capsys, "check", "--offline")
    assert code == 0
    assert "1 entry: 0 lint problems; 0 check verdicts" in out


def test_holds_against_a_directory(kb, engine_tree, capsys):
    code, out, _ = run_cli(capsys, "check", "--source", f"dir:{engine_tree}", "--format", "json")
    assert code == 0
    records = json.loads(out)
    assert {r["check"]: r["verdict"] for r in records} == {"zero": "holds", "metric": "holds"}
    zero = next(r for r in records if r["check"] == "zero")
    for key in ("entry", "check", "engine", "version", "verdict", "reason", "path", "lines", "hint"):
        assert key in zero
    assert zero["entry"] == "ops-example" and zero["engine"] == "vllm" and zero["version"] == "HEAD"
    assert zero["path"] == "pkg/sched.py" and zero["lines"] == [4, 4] and zero["symbol"] == "Scheduler.preempt"


def test_kb_found_from_a_subdirectory(kb, engine_tree, capsys, monkeypatch):
    monkeypatch.chdir(kb / "gotchas")
    code, out, _ = run_cli(capsys, "check", "ops-example", "--source", f"dir:{engine_tree}")
    assert code == 0 and "holds" in out


def test_changed_exits_1_with_reason_and_hint(kb, engine_tree, capsys):
    (engine_tree / "pkg" / "sched.py").write_text(SCHED_PY.replace("request.num_computed_tokens = 0\n", "pass\n"))
    code, out, _ = run_cli(capsys, "check", "--source", f"dir:{engine_tree}", "--format", "json")
    assert code == 1
    zero = next(r for r in json.loads(out) if r["check"] == "zero")
    assert (zero["verdict"], zero["reason"]) == ("changed", "not-found")


def test_github_annotations_point_at_the_check(kb, engine_tree, capsys):
    (engine_tree / "pkg" / "metrics.py").unlink()
    code, out, _ = run_cli(capsys, "check", "--source", f"dir:{engine_tree}", "--format", "github")
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("::")]
    assert len(lines) == 1
    assert lines[0].startswith("::error file=gotchas/ops-example.md,line=19,title=ops-example missing::metric")
    assert "file-missing" in lines[0]


def test_github_lint_annotations(kb, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(VALID_ENTRY.replace("scheme: ops", "scheme: ops\nsev: 1"))
    code, out, _ = run_cli(capsys, "check", "--offline", "--format", "github")
    assert code == 1
    assert "::error file=gotchas/ops-example.md,line=5,col=1,title=G201::unknown field 'sev'" in out


def test_machinery_error_exits_3_not_changed(kb, engine_tree, tmp_path, capsys):
    outside = tmp_path / "outside.py"
    outside.write_text("x = 1\n")
    (engine_tree / "pkg" / "metrics.py").unlink()
    (engine_tree / "pkg" / "metrics.py").symlink_to(outside)
    code, out, _ = run_cli(capsys, "check", "--source", f"dir:{engine_tree}", "--format", "json")
    assert code == 3
    metric = next(r for r in json.loads(out) if r["check"] == "metric")
    assert (metric["verdict"], metric["reason"]) == ("error", "unavailable")
    assert "outside the source tree" in metric["message"]


def test_several_engines_need_a_choice(kb, engine_tree, capsys):
    text = VALID_ENTRY.replace("engines: [vllm]", "engines: [vllm, sglang]").replace(
        "    path: pkg/metrics.py", "    engine: sglang\n    path: pkg/metrics.py").replace(
        "  - id: zero\n", "  - id: zero\n    engine: vllm\n")
    (kb / "gotchas" / "ops-example.md").write_text(text)
    code, _, err = run_cli(capsys, "check", "--source", f"dir:{engine_tree}")
    assert code == 2 and "--engine" in err
    code, out, _ = run_cli(capsys, "check", "--engine", "vllm", "--source", f"dir:{engine_tree}", "--format", "json")
    assert code == 0 and [r["check"] for r in json.loads(out)] == ["zero"]
    code, out, _ = run_cli(capsys, "check", "--source", f"vllm=dir:{engine_tree}")
    assert code == 0 and "sglang checks not verified" in out


@pytest.mark.parametrize("argv,message", [
    (["check", "no-such-entry", "--offline"], "no entry 'no-such-entry'"),
    (["check", "--engine", "tgi", "--offline"], "unknown engine 'tgi'"),
    (["check", "--source", "dir:/no/such/dir"], "is not a directory"),
    (["check", "--source", "vllm=svn:x"], "expected pypi, git:URL_OR_PATH or dir:PATH"),
])
def test_usage_errors_exit_2(kb, capsys, argv, message):
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and message in err


def test_no_kb_exits_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "check", "--offline")
    assert code == 2 and "no knowledge base here" in err


def test_malformed_entry_as_a_subprocess_has_no_traceback(kb):
    (kb / "gotchas" / "ops-example.md").write_text(
        VALID_ENTRY.replace("scheme: ops", "scheme: [ops").replace("## Notes", "## Trivia"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, "-m", "verifier", "check", "--offline"], cwd=kb, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr + proc.stdout
    assert "gotchas/ops-example.md:5:" in proc.stdout and "G103" in proc.stdout
    assert "gotchas/ops-example.md:38:1: G403" in proc.stdout


def test_real_kb_is_lint_clean(capsys, monkeypatch):
    from .conftest import REPO

    monkeypatch.chdir(REPO)
    code, out, _ = run_cli(capsys, "check", "--offline")
    assert code == 0, out
