"""Every command's output formats, in one table: command -> format name -> the writer of that format.

A command's `--format` choices are its names here (`choices`), and what it prints in a format is what
`writer(command, name)` returns, so that no format is offered without a writer and no writer goes unoffered.
The writers of one command take the same arguments (what the command found) and return the text to print;
`tests/test_formats.py` resolves every one and compares the table with every command's `--format`.

A writer is named "module:function" and imported when it is asked for: this table imports nothing, so every
writer's module may read it (`report.render` does, and `audit.render`), and `audit`'s writers come with what
audit imports, which the other commands never need.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

_CHECK = "verifier.report._check"
_RUN = "verifier.report._run"
_MUTATE = "verifier.report._mutate"
_SHOW = "verifier.report._show"
_SURFACE = "verifier.report._surface"
_AUDIT = "verifier.audit"

#: command -> format -> "module:function". The arguments each command's writers take:
#: check (diagnostics, results, notes, entries); verify (kb, runs, changes, diagnostics, notes, entries, site_url,
#: problems); mutate (kb, reports); show (kb, entry, ledger, engine, release); audit (kb, result, site_url);
#: surface (engine, name, surface, kinds); diff (engine, name, result, changes, titles, named, about).
OUTPUT_FORMATS: dict[str, dict[str, str]] = {
    "check": {"text": f"{_CHECK}:text", "json": f"{_CHECK}:as_json", "github": f"{_CHECK}:github",
              "markdown": f"{_CHECK}:check_markdown", "junit": f"{_CHECK}:junit"},
    "verify": {"text": f"{_RUN}:verify_text", "json": f"{_RUN}:verify_json", "markdown": f"{_RUN}:verify_markdown"},
    "mutate": {"text": f"{_MUTATE}:mutate_text", "json": f"{_MUTATE}:mutate_json",
               "github": f"{_MUTATE}:mutate_annotations"},
    "show": {"text": f"{_SHOW}:show_text", "json": f"{_SHOW}:show_json"},
    "audit": {"text": f"{_AUDIT}:text", "json": f"{_AUDIT}:as_json", "markdown": f"{_AUDIT}:markdown",
              "sarif": f"{_AUDIT}:sarif"},
    "surface": {"text": f"{_SURFACE}:surface_as_text", "json": f"{_SURFACE}:surface_as_json",
                "markdown": f"{_SURFACE}:surface_as_markdown"},
    "diff": {"text": f"{_SURFACE}:diff_as_text", "json": f"{_SURFACE}:diff_as_json",
             "markdown": f"{_SURFACE}:diff_as_markdown"},
}


def choices(command: str) -> tuple[str, ...]:
    """The formats `command` writes, for its `--format` (the first is the default's place: text)."""
    return tuple(OUTPUT_FORMATS[command])


def writer(command: str, fmt: str) -> Callable[..., str]:
    """The function that writes `command`'s output in `fmt` (a KeyError for a format the command lacks)."""
    module, _, name = OUTPUT_FORMATS[command][fmt].partition(":")
    found: Callable[..., str] = getattr(importlib.import_module(module), name)
    return found
