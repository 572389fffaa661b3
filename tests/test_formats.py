"""Every command's output formats are one table (`report.OUTPUT_FORMATS`): each `--format` choice of each command
has a writer there, each writer there is offered, and each resolves to a function; the site's, audit's and the
verify report's links to an entry or a release are one builder's (`verifier.urls`); every list of releases is in
one order (`model.version_key`)."""

from __future__ import annotations

import argparse
import inspect

import pytest

from verifier import report
from verifier.cli import build_parser
from verifier.model import version_key
from verifier.urls import entry_url, release_url


def _format_choices() -> dict[str, tuple[str, ...]]:
    """Each command's `--format` choices, as the command line offers them."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = {}
    for name, command in commands.choices.items():
        for action in command._actions:
            if "--format" in action.option_strings:
                found[name] = tuple(action.choices or ())
    return found


def test_every_format_choice_of_every_command_has_its_writer_and_no_writer_is_unoffered():
    offered = _format_choices()
    assert offered, "no command has --format: the parser changed shape"
    assert {c: tuple(w) for c, w in report.OUTPUT_FORMATS.items()} == offered
    for command in ("check", "verify", "mutate", "show", "audit", "surface", "diff"):
        assert command in offered, command


@pytest.mark.parametrize("command", sorted(report.OUTPUT_FORMATS))
def test_each_writer_resolves_and_the_writers_of_a_command_take_the_same_arguments(command):
    shapes = set()
    for fmt in report.choices(command):
        writer = report.writer(command, fmt)
        assert callable(writer), (command, fmt)
        shapes.add(tuple(inspect.signature(writer).parameters))
    assert len(shapes) == 1, (command, shapes)
    with pytest.raises(KeyError):
        report.writer(command, "no-such-format")


def test_the_check_and_verify_formats_are_the_table_s():
    assert report.FORMATS == report.choices("check")
    assert report.RUN_FORMATS == report.choices("verify")


def test_mutate_and_show_write_through_the_table(monkeypatch):
    import verifier.report._mutate as mutate_module

    monkeypatch.setattr(mutate_module, "mutate_json", lambda kb, reports: "written by the table\n")
    assert report.mutate_report("json", None, []) == "written by the table\n"
    assert report.mutate_report("github", None, []) == ""
    assert report.mutate_report("text", None, []).startswith("0 entries x engine")


# --- entry and release URLs ------------------------------------------------------------------------------------

def test_one_builder_gives_the_site_s_relative_links_and_the_absolute_ones_of_audit_and_the_report():
    assert entry_url("ops-example") == "entries/ops-example/"
    assert entry_url("ops-example", "https://gotchas.example") == "https://gotchas.example/entries/ops-example/"
    assert entry_url("ops-example", "https://gotchas.example/kb/") == "https://gotchas.example/kb/entries/ops-example/"
    assert release_url("vllm", "0.10.1") == "engines/vllm/0.10.1/"
    assert release_url("vllm", "0.10.1+cu126", "/gotchas") == "/gotchas/engines/vllm/0.10.1%2Bcu126/"
    # a name from data is one part of the path: it never adds a `/`, `?`, `#` or a space of its own
    assert entry_url("../x?y#z w") == "entries/..%2Fx%3Fy%23z%20w/"


def test_the_site_audit_and_the_verify_report_link_through_the_one_builder():
    from verifier import audit
    from verifier.site import writer

    assert writer.Builder.entry_url is entry_url and writer.Builder.release_url is release_url
    assert audit._url("https://gotchas.example/", "ops-x") == "https://gotchas.example/entries/ops-x/"
    assert audit._url("", "ops-x") is None


# --- the order of releases -------------------------------------------------------------------------------------

def test_releases_are_in_pep_440_order_with_pre_post_dev_and_local_releases():
    versions = ["0.10.0.post1", "0.10.0", "0.10.0rc1", "0.10.0.dev3", "0.10.0+cu126", "0.9.2", "0.10.0a1",
                "0.10.0.post1.dev2", "1!0.1", "0.10.1", "HEAD", "main", "0.10.0rc1.post1"]
    assert sorted(versions, key=version_key) == [
        "0.9.2", "0.10.0.dev3", "0.10.0a1", "0.10.0rc1", "0.10.0rc1.post1", "0.10.0", "0.10.0+cu126",
        "0.10.0.post1.dev2", "0.10.0.post1", "0.10.1", "1!0.1",
        "HEAD", "main"]  # what is not PEP 440 (a checkout) comes after every release, by its text
    assert sorted(["0.10.0", "0.10"], key=version_key) == ["0.10", "0.10.0"]  # equal versions: by their text


def test_the_ledger_the_surfaces_and_the_reports_sort_by_the_one_order():
    from verifier import ledger
    from verifier.report import _run, _trace
    from verifier.surface import store

    assert ledger.version_key is version_key
    assert store.version_key is version_key and _run.version_key is version_key and _trace.version_key is version_key
