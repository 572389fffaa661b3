"""Presenting what the commands found: lint diagnostics and check results (text, JSON, GitHub workflow
annotations, Markdown, JUnit), a `verify` run, and what `show`, `trace` and `mutate` print. One module per
report; this one is the surface callers import (`report.render`, `report.terminal`...). Every command's output
formats and their writers are one table, `OUTPUT_FORMATS` (`_formats`): `--format` offers `choices(command)`,
and prints what `writer(command, format)` writes. Markdown is written through `verifier.md`, the one escaper.

Text for a terminal (and for a workflow's log, which renders ANSI sequences) goes through `terminal`, once per
output: data (a title, a ledger's hint, a path) can hold ESC and the rest, and a terminal acts on them.
"""

from __future__ import annotations

from ._check import FORMATS, annotation, as_json, check_markdown, github, junit, render, summary, text
from ._follow import follow_markdown, follow_text
from ._formats import OUTPUT_FORMATS, choices, writer
from ._mutate import mutate_github, mutate_report
from ._run import RUN_FORMATS, render_run, run_markdown
from ._show import NoSuchRelease, show_at, show_entry, show_json, show_records, show_text
from ._terminal import printable, terminal
from ._trace import trace_text

__all__ = ["FORMATS", "OUTPUT_FORMATS", "RUN_FORMATS", "annotation", "as_json", "check_markdown", "choices",
           "follow_markdown", "follow_text", "github", "junit", "mutate_github", "mutate_report", "printable",
           "render", "render_run", "run_markdown", "NoSuchRelease", "show_at", "show_entry", "show_json",
           "show_records", "show_text", "summary", "terminal", "text", "trace_text", "writer"]
