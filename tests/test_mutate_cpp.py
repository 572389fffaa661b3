"""`gotchas mutate` on C and C++ checks (#30): the meaning mutants of llama.cpp-like code (a field's default, an
operator, a call, a statement) are made from tree-sitter-cpp's tree and caught by checks that pin them, a check
that pins half its claim lets a named mutant survive, and re-layouts by clang-format (layout only, in its styles
and the engine's own `.clang-format`) and comments between statements change no verdict. End to end through a
package index on 127.0.0.1 serving a llama-cpp-python-like sdist, as `verify` reads it."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from verifier import mutants_cpp

from .conftest import make_kb
from .index_server import IndexServer, make_sdist
from .test_vendored_engine import REGISTRY, llama_entry  # llama.cpp vendored in llama-cpp-python's sdists

COMMON_H = b'''#pragma once
#include <string>

struct common_params {
    int32_t n_predict = -1; // new tokens to predict
    int32_t n_ctx     = 4096; // context size
    bool ctx_shift    = true; // context shift on infinite text generation
    enum llama_pooling_type pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;
    std::string hostname = "127.0.0.1";
    std::vector<std::string> cors_methods = {"GET", "POST"};
};
'''

SERVER_CONTEXT = b'''#include "server-context.h"

struct server_context_impl {
    common_params params_base;
    bool add_bos_token = true;

    void pre_decode() {
        for (auto & slot : slots) {
            if (slot.state == SLOT_STATE_GENERATING && slot.prompt.n_tokens() + 1 >= slot.n_ctx) {
                if (!params_base.ctx_shift) {
                    send_error(slot, "context shift is disabled", ERROR_TYPE_SERVER);
                    slot.release();
                    return;
                }
                int n_keep = slot.task->params.n_keep < 0 ? slot.task->n_tokens() : slot.task->params.n_keep;
                if (add_bos_token) n_keep += 1;
                n_keep = std::min(slot.n_ctx - 4, n_keep);
                const int n_left    = slot.prompt.n_tokens() - n_keep;
                int       n_discard = slot.task->params.n_discard ? slot.task->params.n_discard : (n_left / 2);
                SLT_WRN(slot, "slot context shift, n_keep = %d, n_left = %d, n_discard = %d, t = %" PRId64 "\\n", n_keep, n_left, n_discard, t);
                slot.mem.seq_rm(slot.id, n_keep, n_keep + n_discard);
                slot.mem.seq_add(slot.id, n_keep + n_discard, slot.prompt.tokens.pos_next(), -n_discard);
            }
        }
    }
};
'''

# The engine's own style: narrow, and with options that rewrite tokens (braces inserted, `const` moved, strings
# split), which `gotchas mutate` turns off: it re-lays, it does not rewrite.
CLANG_FORMAT = b'''---
Language: Cpp
BasedOnStyle: LLVM
ColumnLimit: 60
InsertBraces: true # NOTE: may lead to incorrect formatting
QualifierAlignment: Right
BreakStringLiterals: true
IntegerLiteralSeparator:
  Decimal: 3
...
'''

CHECKS = '''\
  - id: ctx-shift-default
    claim: Context shift is on by default.
    path: common/common.h
    in: common_params.ctx_shift
    contains: bool ctx_shift = true;
  - id: cors-methods
    claim: CORS allows GET and POST.
    path: common/common.h
    in: common_params.cors_methods
    contains: 'std::vector<std::string> cors_methods = {"GET", "POST"};'
  - id: n-discard-half
    claim: Unless the request sets n_discard, the shift discards half of the tokens after n_keep.
    path: tools/server/server-context.cpp
    in: server_context_impl.pre_decode
    contains: "int n_discard = slot.task->params.n_discard ? slot.task->params.n_discard : (n_left / 2);"
  - id: keeps-some
    claim: The shift keeps at most n_ctx - 4 tokens at the start.
    path: tools/server/server-context.cpp
    in: server_context_impl.pre_decode
    contains: n_keep = std::min($$$);
  - id: disabled-error
    claim: With context shift off, a full slot ends with the error "context shift is disabled".
    path: tools/server/server-context.cpp
    in: server_context_impl.pre_decode
    contains: |
      if (!params_base.ctx_shift) {
          send_error(slot, "context shift is disabled", ERROR_TYPE_SERVER);
          slot.release();
          return;
      }
  - id: warns
    claim: The shift logs "slot context shift".
    path: tools/server/server-context.cpp
    in: server_context_impl.pre_decode
    string: slot context shift
  - id: no-abort
    claim: The shift never aborts the server.
    path: tools/server/server-context.cpp
    in: server_context_impl.pre_decode
    absent: GGML_ABORT($$$)
  - id: has-pre-decode
    claim: The server context has a pre_decode step.
    path: tools/server/server-context.cpp
    defines: server_context_impl.pre_decode
  - id: removes-then-adds
    claim: The discarded tokens are removed before the rest is moved back.
    path: tools/server/server-context.cpp
    in: server_context_impl.pre_decode
    contains: slot.mem.seq_add(slot.id, n_keep + n_discard, $$$);
    after: slot.mem.seq_rm(slot.id, n_keep, n_keep + n_discard);
'''

ENTRY = llama_entry("config-llama-server-context-shift",
                    "llama-server silently drops half of a conversation when a slot's context fills", CHECKS,
                    symptom="Long generations lose their beginning.")


def sdist(server_context: bytes = SERVER_CONTEXT) -> bytes:
    return make_sdist({"vendor/llama.cpp/common/common.h": COMMON_H,
                       "vendor/llama.cpp/tools/server/server-context.cpp": server_context,
                       "vendor/llama.cpp/.clang-format": CLANG_FORMAT,
                       "llama_cpp/server/app.py": b"# llama-cpp-python's own server: not llama.cpp's code\n"},
                      top="llama_cpp_python-0.3.36")


@contextlib.contextmanager
def served_kb(root, entry: str = ENTRY, server_context: bytes = SERVER_CONTEXT):
    """A KB with `entry` as the current directory, and llama-cpp-python 0.3.36 on a local index as pip's."""
    make_kb(root)
    (root / "gotchas" / "engines.yaml").write_text(REGISTRY)
    (root / "gotchas" / "config-llama-server-context-shift.md").write_text(entry)
    with pytest.MonkeyPatch.context() as patch, IndexServer() as index:
        patch.chdir(root)
        patch.setenv("GOTCHAS_CACHE_DIR", str(root / "cache"))
        patch.setenv("no_proxy", "127.0.0.1")
        patch.setenv("NO_PROXY", "127.0.0.1")
        index.add("llama-cpp-python", "llama_cpp_python-0.3.36.tar.gz", sdist(server_context),
                  upload_time="2026-10-01T00:00:00Z")
        patch.setenv("PIP_INDEX_URL", index.url)
        yield patch


def mutate(*extra) -> tuple[int, str]:
    """`gotchas mutate --engine llama-cpp ...` in this process: (exit code, stdout)."""
    from verifier.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["mutate", "--engine", "llama-cpp", "--seconds", "300", *extra])
    return code, out.getvalue() + err.getvalue()


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    """The JSON records of one run of `gotchas mutate` on the entry, and its text report."""
    with served_kb(tmp_path_factory.mktemp("kb")):
        code, out = mutate("--format", "json")
        assert code == 0, out
        found = json.loads(out)
        code, text = mutate()
        assert code == 0, text
    return found, text


def of(records, check: str) -> dict[str, dict]:
    found = {}
    for r in records[0]:
        if r["check"] == check:
            found.setdefault(r["description"], r)
    return found


def test_a_field_default_flipped_is_caught_by_the_check_that_pins_it(records):
    made = of(records, "ctx-shift-default")
    assert set(made) == {"flip true", "delete the statement bool ctx_shift    = true;"}
    flip = made["flip true"]
    assert flip["caught"] and flip["changed_checks"] == ["ctx-shift-default"]
    assert (flip["verdict_before"], flip["verdict_after"], flip["path"], flip["line"]) == (
        "holds", "changed", "common/common.h", 7)


def test_each_operator_of_a_pinned_expression_is_changed_and_caught(records):
    made = of(records, "n-discard-half")
    expected = {"swap `/` for `*`", "change the number 2 to 3", "swap the two branches of `?:`",
                "negate the condition slot.task->params.n_discard", "read .n_discard_mutated instead of .n_discard",
                "read .params_mutated instead of .params", "read .task_mutated instead of .task"}
    assert expected <= set(made)
    assert any(d.startswith("delete the statement int       n_discard") for d in made)
    assert all(r["caught"] for r in made.values()), [d for d, r in made.items() if not r["caught"]]


def test_a_check_that_pins_half_its_claim_lets_the_other_half_change(records):
    """`std::min($$$)` pins the call, not what it is called with: the 4 and the `-` may change unseen."""
    made = of(records, "keeps-some")
    for survivor in ("change the number 4 to 5", "swap `-` for `+`", "read .n_ctx_mutated instead of .n_ctx",
                     "drop the argument n_keep", "drop the argument slot.n_ctx - 4"):
        assert made[survivor]["caught"] is False, survivor
    assert made["call max instead of min"]["caught"] and made["delete the statement n_keep = std::min(slot.n_ctx - "
                                                              "4, n_keep);"]["caught"]
    _, text = records
    assert "keeps-some: 2 of 7 meaning mutants caught" in text
    assert "    survived: change the number 4 to 5 (tools/server/server-context.cpp:17)" in text
    assert "-                n_keep = std::min(slot.n_ctx - 4, n_keep);" in text  # shown as a diff
    assert "+                n_keep = std::min(slot.n_ctx - 5, n_keep);" in text


def test_statements_of_a_block_are_deleted_and_swapped(records):
    made = of(records, "disabled-error")
    assert made["drop `!`"]["caught"] and made["change the string \"context shift is disabled\""]["caught"]
    assert made["delete the statement slot.release();"]["caught"]
    swaps = [r for d, r in made.items() if d.startswith("swap two statements: ")]
    assert [r["line"] for r in swaps] == [11, 12] and all(r["caught"] for r in swaps)
    # the order the check claims: its statement is swapped with the one before, and the check sees it
    (swap,) = [r for r in records[0] if r["check"] == "removes-then-adds" and r["description"].startswith("swap two")]
    assert swap["line"] == 21 and swap["caught"] and swap["verdict_after"] == "changed"


def test_a_string_check_pins_the_text_it_names_not_the_rest_of_the_literal(records):
    """`string: slot context shift` pins those words: a change in the middle of the message goes unseen. The
    literal is three pieces with a `PRId64` between them: the macro is never edited as if it were a string."""
    made = of(records, "warns")
    changed = [d for d in made if d.startswith("change the string")]
    assert changed == ['change the string "slot context shift, n_keep = %d, n_left']
    (edit,) = [r for r in records[0] if r["description"] == changed[0]]
    assert edit["caught"] is False
    assert "call SLT_WRN_mutated instead of SLT_WRN" in made
    assert not any("PRId64" in d for d in made)


def test_the_code_an_absent_check_forbids_is_put_into_its_scope(records):
    made = of(records, "no-abort")
    insert = made["put the code the check says is absent into its scope"]
    assert insert["caught"] and insert["verdict_after"] == "changed"
    renamed = of(records, "has-pre-decode")
    assert renamed["rename the definition pre_decode"]["caught"]


def test_the_engine_s_own_style_and_clang_format_s_styles_change_no_verdict(records):
    if mutants_cpp.clang_format() is None:
        pytest.skip("clang-format is a test extra: pip install -e '.[test]'")
    neutral = [r for r in records[0] if r["kind"] == "neutral"]
    names = {r["description"] for r in neutral if r["path"] == "tools/server/server-context.cpp"}
    assert {"re-laid by clang-format LLVM", "re-laid by clang-format Google", "re-laid by clang-format Chromium",
            "re-laid by clang-format Mozilla", "re-laid by clang-format WebKit",
            "re-laid by clang-format LLVM, ColumnLimit 40", "re-laid by clang-format LLVM, ColumnLimit 200",
            "re-laid by clang-format, the engine's .clang-format",
            "a comment line before every statement of every block",
            "a comment before every statement of every block, on its line"} <= names
    assert not [r["description"] for r in neutral if r["caught"]]
    _, text = records
    assert "reformats that changed a verdict: 0" in text and "(a matcher bug)" not in text


def test_the_engine_s_own_style_is_taken_for_its_layout_only():
    """Its options that rewrite tokens are off: no braces inserted, `const` not moved, no string split, no
    digit separators; what is left re-lays the file."""
    if mutants_cpp.clang_format() is None:
        pytest.skip("clang-format is a test extra: pip install -e '.[test]'")
    text = SERVER_CONTEXT.decode() + "const int k = 1000000;\n"
    (own,) = [m for m in mutants_cpp.neutral_mutants("tools/server/server-context.cpp", text, formatters={},
                                                     style_file=CLANG_FORMAT.decode())
              if "clang-format" in m.description]
    assert own.text != text and max(len(line) for line in own.text.splitlines()) < 100  # re-laid narrow
    assert "if (add_bos_token)\n" in own.text and "{ n_keep += 1; }" not in own.text and "if (add_bos_token) {" \
        not in own.text
    assert "const int k = 1000000;" in own.text and "int const" not in own.text
    assert '"slot context shift, n_keep = %d, n_left = %d, n_discard = %d, t = %"' in own.text
    assert mutants_cpp.layout_only_style_file(CLANG_FORMAT.decode()).count("InsertBraces") == 1


def test_without_clang_format_the_re_layouts_are_skipped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(mutants_cpp, "clang_format", lambda: None)
    with served_kb(tmp_path / "kb"):
        code, out = mutate()
        assert code == 0, out
        code, records = mutate("--format", "json")
    assert "note: clang-format is not installed: the C and C++ files were not re-laid" in out
    assert "ctx-shift-default: 2 of 2 meaning mutants caught" in out and "no verdict changed" in out
    neutral = {(r["path"], r["description"]) for r in json.loads(records) if r["kind"] == "neutral"}
    assert ("common/common.h", "a comment line before every statement of every block") in neutral
    assert not [d for _, d in neutral if "clang-format" in d]


def test_redundant_parentheses_and_trailing_commas_change_no_verdict(records):
    """The comparison ignores them (CONTRIBUTING.md's table for C and C++ code): a pair around each value that holds
    no comma, a comma before each `}`; a value that holds one keeps its pair, and is not given one."""
    text = {"common/common.h": COMMON_H.decode(), "tools/server/server-context.cpp": SERVER_CONTEXT.decode()}
    made = {(m.path, m.description): m.text for path in text for m in mutants_cpp.neutral_mutants(
        path, text[path], formatters={})}
    parens = made[("common/common.h", "redundant parentheses around every initialized and assigned value")]
    assert "bool ctx_shift    = (true);" in parens and "int32_t n_predict = (-1);" in parens
    assert 'std::string hostname = ("127.0.0.1");' in parens and '= {"GET", "POST"};' in parens
    commas = made[("common/common.h", "a trailing comma in every initializer and enumerator list")]
    assert 'cors_methods = {"GET", "POST",};' in commas
    context = made[("tools/server/server-context.cpp", "redundant parentheses around every initialized and assigned "
                                                       "value")]
    assert "n_keep = std::min(slot.n_ctx - 4, n_keep);" in context  # holds a comma: no pair
    assert "int       n_discard = (slot.task->params.n_discard ? slot.task->params.n_discard : (n_left / 2));" \
        in context
    neutral = {r["description"]: r for r in records[0] if r["kind"] == "neutral" and r["path"] == "common/common.h"}
    for description in ("redundant parentheses around every initialized and assigned value",
                        "a trailing comma in every initializer and enumerator list"):
        assert neutral[description]["caught"] is False


def test_the_rewrites_are_those_contributing_documents_as_ignored():
    """`IGNORED` says which rewrites are neutral; CONTRIBUTING.md's table of what the comparison of C and C++ code
    ignores must say the same, or a rewrite would be judged against a rule nobody wrote down."""
    from .conftest import REPO

    text = (REPO / "CONTRIBUTING.md").read_text()
    table = text[text.index("What the comparison of C and C++ code ignores"):]
    table = table[:table.index("\n\n", table.index("| in C and C++ code |"))]
    rows = {line.split(" | ")[0].lstrip("| "): line.rsplit(" | ", 1)[1].rstrip(" |") for line in table.splitlines()
            if line.startswith("| ") and " | " in line}
    pairs = next(v for k, v in rows.items() if k.startswith("a pair of parentheses that groups nothing"))
    commas = next(v for k, v in rows.items() if k.startswith("a trailing comma before `}`"))
    assert mutants_cpp.IGNORED == {"parentheses": pairs == "ignored", "trailing commas": commas == "ignored"}


def test_a_neutral_rewrite_of_a_cpp_file_that_changes_a_verdict_is_an_error(tmp_path, monkeypatch):
    """A matcher bug, simulated: a C++ check compares tokens, whatever the layout, so a verdict a rewrite changes
    is the matcher's fault (exit 1), never the check's (unlike a Python fragment that is not Python)."""
    real = mutants_cpp._rewrites

    def broken(root, data):
        yield from real(root, data)
        yield "a rewrite that is not neutral", data.replace(b"ctx_shift    = true", b"ctx_shift = false")

    monkeypatch.setattr(mutants_cpp, "_rewrites", broken)
    monkeypatch.setattr(mutants_cpp, "default_formatters", lambda: {})
    with served_kb(tmp_path / "kb"):
        code, out = mutate()
    assert code == 1, out
    assert "1 changed a verdict (a matcher bug)" in out
    assert "a rewrite that is not neutral in common/common.h changed ctx-shift-default" in out


def test_a_mutant_that_parses_worse_than_the_original_is_dropped():
    """`absent: '} else {'` forbids what is no statement: put into the scope, it breaks the file's parse, so no
    mutant is made (a verdict on it would judge the parser); a statement the check forbids is put in."""
    from verifier.model import Form, Verdict

    text = SERVER_CONTEXT.decode()
    verdict = Verdict("holds", path="tools/server/server-context.cpp", lines=(7, 25))
    broken = Form("llama-cpp", "tools/server/server-context.cpp", "absent", "} else {", "server_context_impl.pre_decode")
    assert list(mutants_cpp.meaning_mutants(broken, verdict, text)) == []
    fine = Form("llama-cpp", "tools/server/server-context.cpp", "absent", "slot.release($X)",
                "server_context_impl.pre_decode")
    (inserted,) = mutants_cpp.meaning_mutants(fine, verdict, text)
    assert "    void pre_decode() {\nslot.release(mutated_x);\n" in inserted.text
    assert mutants_cpp.parse_damage(inserted.text.encode()) == mutants_cpp.parse_damage(SERVER_CONTEXT) == 0


@pytest.mark.parametrize("literal,changed", [
    ("4096", "4097"), ("1", "0"), ("0", "1"), ("-1", "0"), ("0x10u", "17u"), ("1'000", "1001"), ("0.5f", "0.55f"),
    ("1e-5", "2.0"), ("true", "false"), ("false", "true"),
])
def test_a_literal_is_changed_as_cpp_writes_it(literal, changed):
    """Digit separators, suffixes, hexadecimal, a sign that tree-sitter-cpp reads as part of the number."""
    from verifier.model import Form, Verdict

    text = f"struct common_params {{\n    auto value = {literal};\n}};\n"
    form = Form("llama-cpp", "common/common.h", "contains", f"auto value = {literal};", "common_params.value")
    made = [m.text for m in mutants_cpp.meaning_mutants(form, Verdict("holds", lines=(2, 2)), text)
            if m.description.startswith(("change the number", "flip"))]
    assert made == [text.replace(f"= {literal};", f"= {changed};")]


def test_a_format_macro_between_literals_is_never_edited_as_a_string():
    """`_cpp.parse` reads `PRId64` as a literal of its length; a mutant edits the file's own text, around it."""
    from verifier.model import Form, Verdict

    text = SERVER_CONTEXT.decode()
    form = Form("llama-cpp", "tools/server/server-context.cpp", "string", "slot context shift",
                "server_context_impl.pre_decode")
    made = list(mutants_cpp.meaning_mutants(form, Verdict("holds", lines=(20, 20)), text))
    assert len(made) >= 8
    kept = [m for m in made if not m.description.startswith(("delete", 'drop the argument "slot'))]  # all of it
    assert all('%" PRId64 "\\n"' in m.text for m in kept) and all(m.text != text for m in made)
