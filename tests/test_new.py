"""`gotchas new` writes an entry skeleton that lints clean."""

from __future__ import annotations

import builtins

import pytest

from verifier import kb as kb_module
from verifier import lint
from verifier.cli import main
from verifier.entries import load_entry


@pytest.fixture
def kb(kb_root, monkeypatch):
    monkeypatch.chdir(kb_root)
    return kb_root


def lint_of(kb, entry_id):
    loaded = load_entry(kb / "gotchas" / f"{entry_id}.md", display=f"gotchas/{entry_id}.md")
    return lint.lint(loaded, kb_module.load(kb)), loaded


def test_new_from_options_lints_clean(kb, capsys):
    code = main(["new", "--id", "perf-something-slow", "--title", 'A "quoted": title', "--scheme", "perf",
                 "--severity", "performance", "--engine", "vllm", "--engine", "sglang", "--concept", "kv-cache"])
    assert code == 0 and "wrote gotchas/perf-something-slow.md" in capsys.readouterr().out
    diagnostics, loaded = lint_of(kb, "perf-something-slow")
    assert diagnostics == []
    assert loaded.entry.title == 'A "quoted": title'
    assert [c.engine for c in loaded.entry.checks] == ["vllm", "sglang"]


def test_new_asks_for_what_is_missing_and_retries_bad_answers(kb, capsys, monkeypatch):
    answers = iter(["nope", "ops", "dire", "outage", "ops-asked-entry", "Asked title", "vllm", "not-a-concept", "preemption kv-cache"])
    monkeypatch.setattr("sys.stdin.isatty", lambda: True)
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(answers))
    assert main(["new"]) == 0
    out = capsys.readouterr().out
    assert "unknown scheme 'nope'" in out and "unknown severity 'dire'" in out and "unknown concept 'not-a-concept'" in out
    diagnostics, loaded = lint_of(kb, "ops-asked-entry")
    assert diagnostics == [] and loaded.entry.concepts == ("preemption", "kv-cache")
    assert loaded.entry.severity == "outage"


def test_new_without_a_terminal_needs_every_field(kb, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    assert main(["new", "--id", "ops-x", "--scheme", "ops"]) == 2
    assert "missing --severity" in capsys.readouterr().err


def test_new_refuses_an_existing_id(kb, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    (kb / "gotchas" / "ops-taken.md").write_text("x")
    assert main(["new", "--id", "ops-taken", "--title", "t", "--scheme", "ops", "--severity", "cost",
                 "--engine", "vllm", "--concept", "kv-cache"]) == 2
    assert "exists already" in capsys.readouterr().err
