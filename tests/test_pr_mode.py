"""Pull-request mode: `gotchas check --changed-since REF` on a repository with a known history."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from .conftest import VALID_ENTRY, run_cli
from .gitrepo import ISOLATED_GIT_ENV, GitRepo

OTHER = VALID_ENTRY.replace("id: ops-example", "id: ops-other").replace(
    "title: An example gotcha that is well-formed", "title: Another gotcha that is well-formed")


@pytest.fixture
def repo(kb_root, monkeypatch):
    """The KB as a git repository: `main` holds two good entries; each test then makes a 'pull request'."""
    for key, value in ISOLATED_GIT_ENV.items():
        monkeypatch.setenv(key, value)
    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    (kb_root / "gotchas" / "ops-other.md").write_text(OTHER)
    repo = GitRepo(kb_root)
    repo.commit("the KB")
    repo.git("checkout", "--quiet", "-b", "pr")
    monkeypatch.chdir(kb_root)
    return repo


def test_a_pr_that_breaks_a_check_fails_with_an_annotation_at_the_check(repo, engine_tree, capsys):
    entry = repo.path / "gotchas" / "ops-other.md"
    entry.write_text(OTHER.replace("contains: request.num_computed_tokens = 0", "contains: request.num_computed_tokens = 1"))
    repo.commit("break a check")
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{engine_tree}", "--format", "github")
    assert code == 1
    annotations = [line for line in out.splitlines() if line.startswith("::")]
    assert annotations == [annotations[0]]
    assert annotations[0].startswith("::error file=gotchas/ops-other.md,line=12,")
    assert "zero: changed (not-found)" in annotations[0]


def test_a_pr_with_an_unknown_key_is_annotated_at_its_line(repo, capsys):
    entry = repo.path / "gotchas" / "ops-other.md"
    entry.write_text(OTHER.replace("    path: pkg/metrics.py", "    path: pkg/metrics.py\n    severity: high"))
    repo.commit("add a key")
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--offline", "--format", "github")
    assert code == 1
    assert "::error file=gotchas/ops-other.md,line=22,col=1,title=G201::check metric: unknown check key 'severity'" in out \
        or "::error file=gotchas/ops-other.md,line=22,col=1,title=G201::unknown check key 'severity'" in out


def test_a_pr_touching_only_prose_checks_only_that_entry(repo, engine_tree, capsys):
    """And mutates only that entry: its checks' records, then `mutate`'s (meaning mutants, all caught: the checks
    pin their claims; neutral rewrites, none of which changes a verdict), and none of the other entry."""
    entry = repo.path / "gotchas" / "ops-other.md"
    entry.write_text(OTHER.replace("Latency climbs.", "Latency climbs sharply."))
    repo.commit("prose")
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{engine_tree}", "--format", "json")
    assert code == 0
    records = json.loads(out)
    assert {r["entry"] for r in records} == {"ops-other"}
    assert {r["kind"] for r in records} == {"check", "meaning", "neutral"}
    assert {r["check"] for r in records if r["kind"] == "meaning"} == {"zero", "metric"}
    assert all(r["caught"] for r in records if r["kind"] == "meaning")
    assert not any(r["caught"] for r in records if r["kind"] == "neutral")


def test_uncommitted_and_new_entries_count_as_changed(repo, engine_tree, capsys):
    (repo.path / "gotchas" / "ops-new.md").write_text(VALID_ENTRY.replace("id: ops-example", "id: ops-new"))
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{engine_tree}", "--format", "json",
                           "--no-mutate")
    assert {r["entry"] for r in json.loads(out)} == {"ops-new"}


def test_a_change_to_the_vocabulary_checks_everything(repo, engine_tree, capsys):
    concepts = repo.path / "gotchas" / "concepts.yaml"
    concepts.write_text(concepts.read_text() + "new-term: A new term.\n")
    repo.commit("vocabulary")
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{engine_tree}", "--format", "json",
                           "--no-mutate")
    assert {r["entry"] for r in json.loads(out)} == {"ops-example", "ops-other"}


def test_nothing_changed(repo, capsys):
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--offline")
    assert code == 0 and "no entry changed" in out


def test_a_bad_ref_is_a_usage_error(repo, capsys):
    code, _, err = run_cli(capsys, "check", "--changed-since", "no-such-branch", "--offline")
    assert code == 2 and "cannot compare with 'no-such-branch'" in err
    code, _, err = run_cli(capsys, "check", "--changed-since=--output=x", "--offline")
    assert code == 2


def test_markdown_summary_and_junit(repo, engine_tree, capsys):
    entry = repo.path / "gotchas" / "ops-other.md"
    entry.write_text(OTHER.replace("contains: request.num_computed_tokens = 0", "contains: request.num_computed_tokens = 1"))
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{engine_tree}", "--format", "markdown")
    assert code == 1
    assert "| `ops-other` | zero | vllm | HEAD | ❌ changed | `pkg/sched.py` | not-found" in out
    assert "| `ops-other` | metric | vllm | HEAD | ✅ holds | `pkg/metrics.py`:1 |" in out
    # after the table, mutate's report on the changed entry: the check that holds pins its claim
    assert "metric: 2 of 2 meaning mutants caught" in out.split("| `ops-other` | metric |")[1]
    # JUnit carries the check verdicts only (never mutate's report): no mutants to make for it
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--source", f"dir:{engine_tree}", "--format", "junit",
                           "--no-mutate")
    root = ET.fromstring(out.split("\n", 1)[1])
    assert root.get("tests") == "2" and root.get("failures") == "1"
    failure = root.find(".//testcase[@name='zero [vllm HEAD]']/failure")
    assert failure is not None and failure.get("message") == "changed: not-found"
