"""docs/format.md, the entry format in the repository: its tables are the code's registries (fields and keys from
the JSON Schema, matchers, lint codes, exit codes), a stale table fails here, and `gotchas schema --write` rewrites
the tables and nothing else."""

from __future__ import annotations

import re

import pytest

from verifier import docs
from verifier.cli._common import EXIT_CODES
from verifier.kb import load as load_kb
from verifier.lint import RULES
from verifier.matchers import NAMES

from .conftest import REPO, run_cli


def test_the_tables_of_docs_format_are_the_code_s():
    text = (REPO / docs.DOCS_FILE).read_text(encoding="utf-8")
    written, problems = docs.sync(text, docs.tables(load_kb(REPO), EXIT_CODES))
    assert problems == []
    assert written == text, "docs/format.md's tables differ from the code: run `gotchas schema --write`"


def test_every_matcher_lint_code_and_exit_code_is_in_the_docs():
    text = (REPO / docs.DOCS_FILE).read_text(encoding="utf-8")
    assert all(f"| `{name}` |" in text for name in NAMES)
    assert all(f"| `{code}` |" in text for code in RULES)
    assert all(f"| {code} |" in text for code in EXIT_CODES)


def test_readme_and_contributing_send_to_the_docs_and_not_to_a_folder_a_clone_lacks():
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (REPO / name).read_text(encoding="utf-8")
        assert "docs/format.md" in text, name
        assert "design folder" not in text, name


def test_sync_replaces_a_stale_table_and_names_an_unknown_or_missing_one():
    tables = {"a": "| x |\n", "b": "| y |\n"}
    text = "intro\n<!-- generated: a -->\nold\n<!-- end: a -->\nmiddle\n<!-- generated: zz -->\n<!-- end: zz -->\n"
    written, problems = docs.sync(text, tables)
    assert written.startswith("intro\n<!-- generated: a -->\n| x |\n<!-- end: a -->\nmiddle\n")
    assert "<!-- generated: zz --> names no table" in problems[0]
    assert problems[1] == "the table b has no <!-- generated: b --> block"


def test_a_cell_stays_one_line_and_a_bar_is_escaped():
    table = docs._table(("k", "v"), [("`a`", "one | two\nthree")])
    assert table.splitlines()[2] == "| `a` | one \\| two three |"


def test_schema_write_rewrites_the_docs_tables_and_keeps_the_prose(kb_root, monkeypatch, capsys):
    (kb_root / "docs").mkdir()
    page = kb_root / "docs" / "format.md"
    others = [n for n in docs.tables(load_kb(kb_root), EXIT_CODES) if n != "lint-codes"]
    page.write_text("# Format\n\nHand-written.\n\n<!-- generated: lint-codes -->\nstale\n<!-- end: lint-codes -->\n"
                    + "".join(f"<!-- generated: {n} -->\n<!-- end: {n} -->\n" for n in others), encoding="utf-8")
    monkeypatch.chdir(kb_root)
    code, out, err = run_cli(capsys, "schema", "--write")
    assert code == 0, err
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Format\n\nHand-written.\n") and "stale" not in text
    assert "| `G315` |" in text and "| `contains` |" in text
    assert docs.sync(text, docs.tables(load_kb(kb_root), EXIT_CODES)) == (text, [])


def test_schema_write_refuses_a_page_whose_blocks_name_no_table(kb_root, monkeypatch, capsys):
    (kb_root / "docs").mkdir()
    page = kb_root / "docs" / "format.md"
    page.write_text("<!-- generated: nothing -->\n<!-- end: nothing -->\n", encoding="utf-8")
    monkeypatch.chdir(kb_root)
    code, out, err = run_cli(capsys, "schema", "--write")
    assert code == 2 and "docs/format.md" in err and "names no table" in err
    assert page.read_text(encoding="utf-8") == "<!-- generated: nothing -->\n<!-- end: nothing -->\n"


@pytest.mark.parametrize("command", [["verify"], ["check"], []])
def test_help_prints_the_exit_codes_of_the_table(command, capsys):
    with pytest.raises(SystemExit):
        run_cli(capsys, *command, "--help")
    out = " ".join(capsys.readouterr().out.split())
    for code, meaning in EXIT_CODES.items():
        assert re.search(rf"\b{code}\s+{re.escape(' '.join(meaning.split()[:4]))}", out), (code, command)


def test_contributing_s_lint_table_lists_exactly_the_codes_lint_has():
    """CONTRIBUTING.md explains each lint code at more length (with what to do); it names the same codes."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text.split("## Lint rules", 1)[1].split("\n## ", 1)[0]
    codes = re.findall(r"^\| (G\d{3}) \|", section, re.M)
    assert len(codes) == len(set(codes)) and sorted(codes) == sorted(RULES)
