"""verifier.md, the one Markdown escaper: data is shown as written and never becomes markup, in every Markdown a
command writes (check's job summary, verify --report, follow --report, audit, surface/diff, docs/format.md's
tables). Each output is read back by a CommonMark parser with raw HTML on and GFM tables, as GitHub reads a job
summary: no HTML, no link but a web one, every cell where it was."""

from __future__ import annotations

import re

import pytest
from markdown_it import MarkdownIt

from verifier import md

#: What hostile data holds: an HTML comment that would hide the rest of a summary, a script, a cell separator, a
#: line break, terminal escapes, a javascript: link, emphasis, a code span that would swallow the rest.
HOSTILE = ["<!-- hidden", "<script>alert(1)</script>", "a | b", "one\ntwo\r\nthree", "\x1b[2J\x1b]0;t\x07\x9b31m",
           "[x](javascript:alert(1))", "![i](data:text/html,x)", "*bold* _em_ ~~gone~~", "`code` ``", "&lt;b&gt;",
           "<https://example.com>", "[ref]: javascript:alert(1)", "# heading", "- item", "1. first", "\\", "\u202e"]

_PARSER = MarkdownIt("commonmark", {"html": True}).enable("table")
_CONTROLS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _tokens(text: str):
    def walk(tokens):
        for token in tokens:
            yield token
            if token.children:
                yield from walk(token.children)
    return list(walk(_PARSER.parse(text)))


def _assert_inert(markdown: str) -> None:
    """No raw HTML, no link or image but http(s) or relative, no control character written."""
    tokens = _tokens(markdown)
    assert not [t for t in tokens if t.type in ("html_inline", "html_block")], markdown
    for t in tokens:
        if t.type in ("link_open", "image"):
            target = str(t.attrs.get("href") or t.attrs.get("src") or "")
            assert re.match(r"(https?://|mailto:|[^:]*$)", target), (target, markdown)
    assert not _CONTROLS.search(markdown.replace("\n", "")), markdown


def _cells(markdown: str) -> list[list[str]]:
    """The text of each body cell, row by row."""
    rows: list[list[str]] = []
    inside: list[str] | None = None
    for t in _tokens(markdown):
        if t.type == "tr_open":
            inside = []
        elif t.type in ("td_open", "th_open") and inside is not None:
            inside.append("")
        elif t.type in ("text", "code_inline") and inside:
            inside[-1] += t.content
        elif t.type == "tr_close" and inside is not None:
            rows.append(inside)
            inside = None
    return rows[1:]  # the header row apart


@pytest.mark.parametrize("value", HOSTILE)
def test_text_shows_the_value_as_written_and_nothing_else(value):
    row = f"| a | b |\n|---|---|\n| {md.text(value)} | after |\n"
    _assert_inert(row)
    shown = " ".join(value.split()) if "\n" in value or "\r" in value else value
    expected = _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                             else f"\\u{ord(m.group()):04x}", shown)
    assert _cells(row) == [[expected, "after"]]  # one cell, as written: not split, not formatted, not hidden


@pytest.mark.parametrize("value", HOSTILE)
def test_text_at_the_start_of_a_line_begins_no_block(value):
    line = md.text(value, start=True)
    tokens = _tokens(line + "\n")
    assert [t.type for t in tokens if t.nesting == 1] == ["paragraph_open"], line
    _assert_inert(line)


@pytest.mark.parametrize("value", HOSTILE)
def test_a_code_span_holds_the_value(value):
    row = f"| a | b |\n|---|---|\n| {md.code(value)} | after |\n"
    _assert_inert(row)
    cells = _cells(row)
    assert len(cells) == 1 and cells[0][1] == "after"
    spans = [t.content for t in _tokens(row) if t.type == "code_inline"]
    assert len(spans) == 1 and "hidden" not in row.split("|")[-2]


def test_a_code_span_is_fenced_by_more_backticks_than_it_holds():
    assert md.code("a`b") == "``a`b``"
    assert md.code("`a") == "`` `a ``"
    assert md.code(" a ") == "`  a  `"  # CommonMark takes one space off each end of a span with one at both
    assert md.code("a|b") == "`a\\|b`" and md.code("a|b", table=False) == "`a|b`"
    assert md.code("") == ""
    for value in ("a`b", "`a", "a``b`", " a ", "x ` y"):
        spans = [t.content for t in _tokens(md.code(value, table=False)) if t.type == "code_inline"]
        assert spans == [value], value


@pytest.mark.parametrize("value", HOSTILE)
def test_inline_markdown_stays_in_its_cell_and_holds_no_html_or_unsafe_link(value):
    row = f"| a | b |\n|---|---|\n| {md.inline(value)} | after |\n"
    _assert_inert(row)
    cells = _cells(row)
    assert len(cells) == 1 and len(cells[0]) == 2 and cells[0][1] == "after"


def test_inline_markdown_keeps_its_formatting():
    assert md.inline("Start with `--scheduling-policy priority`: *faster*") == \
        "Start with `--scheduling-policy priority`: *faster*"
    assert md.inline("see [the docs](https://docs.vllm.ai/x) or [here](../y/)") == \
        "see [the docs](https://docs.vllm.ai/x) or [here](../y/)"
    assert md.inline("`a<b` and a<b") == "`a<b` and a&lt;b"  # inside a code span `<` is text already
    assert md.inline("`x|y` and a|b") == "`x\\|y` and a\\|b"
    assert md.inline("two\n lines   folded") == "two lines folded"


@pytest.mark.parametrize("link", ["[x](javascript:alert(1))", "[x](JavaScript:alert(1))", "[x](javascript&#58;y)",
                                  "[x](javascript\\:y)", "[x](<javascript:y>)", "[x]( javascript:y)",
                                  "![x](data:image/svg+xml,x)", "[x](vbscript:y)", "[x](file:///etc/passwd)"])
def test_a_link_to_anything_but_the_web_stays_text(link):
    written = md.inline(link)
    assert not [t for t in _tokens(written) if t.type in ("link_open", "image")], written
    _assert_inert(written)


def test_an_unclosed_backtick_opens_no_span_and_a_code_span_is_found_as_commonmark_finds_it():
    assert md.inline("a ` <b>") == "a ` &lt;b&gt;"
    assert md.inline("\\`<b>`") == "\\`&lt;b&gt;`"  # an escaped backtick opens nothing: the `<` is escaped
    assert md.inline("`` a ` <b> ``") == "`` a ` <b> ``"
    hostile = "`" * 3000 + " <b> " + "`` x " * 3000
    _assert_inert(md.inline(hostile))


def test_a_fenced_line_cannot_close_its_fence():
    block = "```diff\n" + md.fence("- ``` <script>\x1b[2J") + "\n```\n"
    fences = [t for t in _tokens(block) if t.type == "fence"]
    assert len(fences) == 1 and "\\x1b[2J" in fences[0].content and "\x1b" not in block


def test_check_markdown_summary_is_inert_for_hostile_data():
    from verifier import report
    from verifier.model import Check, CheckResult, Diagnostic, Release, Verdict

    check = Check(id="zero", claim="c", engine="vllm", path="pkg/<!--x|y-->.py", matcher="contains", pattern="x",
                  line=3)
    result = CheckResult("ops-[x](javascript:alert(1))", check, Release("vllm", "0.1.0"),
                         Verdict("changed", "not-found", message="m", hint="<script>alert(1)</script> |\x1b[2J",
                                 path="pkg/`a`|b.py", lines=(1, 2)), "gotchas/e.md")
    diagnostic = Diagnostic("gotchas/<b>.md", 1, "G201", "unknown field '<!--' | [x](javascript:alert(1))")
    written = report.render("markdown", [diagnostic], [result], ["note <img src=x onerror=alert(1)>"], 1)
    _assert_inert(written)
    for row in _cells(written):
        assert len(row) in (4, 7), row  # each row's cells where they were: no `|` of the data split one


def test_audit_markdown_is_inert_for_hostile_titles_and_workarounds():
    from verifier import audit
    from verifier.deployment import Installed

    entry = {"id": "ops-x", "title": "Title <!-- hidden | [x](javascript:alert(1))",
             "workaround": "Run `a | b` <script>alert(1)</script>\n# not a heading", "engines": ["vllm"],
             "parts": [], "severity": "outage"}
    installed = Installed("vllm", "0.1.0", "requirements.txt:1")
    target = audit.Target(installed, "0.1.0")
    finding = audit.Finding("vllm", "0.1.0", installed, entry, audit.BITES, ("--flag is <b>",))
    dropped = audit.Dropped("vllm", "0.1.0", "ops-y", "--x is <!-- y")
    result = audit.Audit([target], [finding], [dropped], ["note <!-- x"])
    kb = {"engines": {"vllm": {"name": "vLLM <b>", "releases": ["0.1.0"]}}}
    written = audit.markdown(kb, result, "https://gotchas.example")
    _assert_inert(written)
    assert "https://gotchas.example/entries/ops-x/" in written
    rows = _cells(written)
    assert len(rows) == 1 and len(rows[0]) == 5, rows


def test_docs_tables_are_written_through_the_escaper():
    from verifier import docs

    table = docs._table(("a", "b"), [("`x|y` <b>", "one\ntwo")])
    assert table == "| a | b |\n|---|---|\n| `x\\|y` &lt;b&gt; | one two |\n"
