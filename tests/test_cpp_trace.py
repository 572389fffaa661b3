"""`gotchas trace`, `gotchas follow` and relocation hints on C++ checks (#30), over llama-cpp-python sdists that
vendor a llama.cpp tree, served as a package index on 127.0.0.1; and the searches of `locate` over C and C++ files.

    0.3.0  examples/server/server.cpp; the slot loop's variable is `s`
    0.3.1  examples/server/server.cpp; the variable is `slot` (the checks' code, as 0.3.2 lays it out)
    0.3.2  moved to tools/server/server.cpp, re-laid out, `(n_left / 2)` written without its parentheses
    0.3.3  `slot.params` re-worded as `slot.task->params`
    0.3.4  update_slots moved to tools/server/server-context.cpp, unchanged
"""

from __future__ import annotations

import pytest

from verifier import locate

from .conftest import run_cli
from .index_server import IndexServer, make_sdist
from .test_vendored_engine import REGISTRY, llama_entry  # llama.cpp vendored in llama-cpp-python's sdists

SERVER = '''#include "common.h"
struct server_context {
    std::vector<server_slot> slots;
    void update_slots();
};

void server_context::update_slots() {
    for (server_slot & {slot} : slots) {
        if ({slot}.n_past + 1 >= {slot}.n_ctx) {
            const int n_left    = {slot}.n_past - {slot}.{params}.n_keep;
            const int n_discard = {slot}.{params}.n_discard ? {slot}.{params}.n_discard : (n_left / 2);
            LOG_WRN("slot context shift, n_keep = %d, n_discard = %d\\n", {slot}.{params}.n_keep, n_discard);
        }
    }
}
'''

RELAID = '''#include "common.h"
struct server_context {
    std::vector<server_slot> slots;

    void update_slots();
};

void server_context::update_slots()
{
    for (server_slot & slot : slots) {
        if (slot.n_past + 1 >= slot.n_ctx) {
            const int n_left = slot.n_past - slot.{params}.n_keep;
            const int n_discard =
                slot.{params}.n_discard ? slot.{params}.n_discard : n_left / 2;
            LOG_WRN("slot context shift, n_keep = %d, n_discard = %d\\n",
                    slot.{params}.n_keep, n_discard);
        }
    }
}
'''

def fill(text: str, **names: str) -> str:
    for name, value in names.items():
        text = text.replace("{" + name + "}", value)
    return text


RELEASES = {
    "0.3.0": {"examples/server/server.cpp": fill(SERVER, slot="s", params="params")},
    "0.3.1": {"examples/server/server.cpp": fill(SERVER, slot="slot", params="params")},
    "0.3.2": {"tools/server/server.cpp": fill(RELAID, params="params")},
    "0.3.3": {"tools/server/server.cpp": fill(RELAID, params="task->params")},
    "0.3.4": {"tools/server/server.cpp": "int main() { return 0; }\n",
              "tools/server/server-context.cpp": fill(RELAID, params="task->params")},
}

ENTRY = llama_entry("config-llama-server-context-shift",
                    "llama-server discards half of a slot's tokens when its context fills", '''\
  - id: half
    claim: Unless the request sets n_discard, the shift discards half of the tokens after n_keep.
    path: tools/server/server.cpp
    in: server_context.update_slots
    contains: "const int n_discard = slot.params.n_discard ? slot.params.n_discard : (n_left / 2);"
  - id: warning
    claim: The shift is logged as a warning.
    path: tools/server/server.cpp
    in: server_context.update_slots
    string: "slot context shift"
  - id: method
    claim: The slots are updated by server_context::update_slots.
    path: tools/server/server.cpp
    defines: server_context.update_slots
''', symptom="Long conversations lose their middle.", workaround="Pass `--no-context-shift`.")


def sdist(version: str) -> bytes:
    files = {f"vendor/llama.cpp/{path}": text.encode() for path, text in RELEASES[version].items()}
    files["vendor/llama.cpp/common/common.h"] = b"struct common_params { int32_t n_ctx = 4096; };\n"
    files["vendor/llama.cpp/convert_hf_to_gguf.py"] = b"def update_slots():\n    return 'slot context shift'\n"
    return make_sdist(files, top=f"llama_cpp_python-{version}")


@pytest.fixture
def index(kb_root, monkeypatch, tmp_path):
    (kb_root / "gotchas" / "engines.yaml").write_text(REGISTRY)
    (kb_root / "gotchas" / "config-llama-server-context-shift.md").write_text(ENTRY)
    monkeypatch.chdir(kb_root)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        for n, version in enumerate(RELEASES):
            server.add("llama-cpp-python", f"llama_cpp_python-{version}.tar.gz", sdist(version),
                       upload_time=f"2024-1{n}-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        yield server


def blocks(out: str) -> dict[str, str]:
    return {b.split(" (")[0]: b for b in out.split("\n\n") if b.strip()}


def test_trace_finds_the_moved_file_and_the_renamed_local_in_cpp(index, capsys):
    code, out, err = run_cli(capsys, "trace", "config-llama-server-context-shift")
    assert code == 0, out + err
    found = blocks(out)
    half = found["config-llama-server-context-shift / half"]
    # 0.3.1: the same code (with the parentheses and the layout 0.3.2 does not write) in the file the server had,
    # found by the definitions of its scope across the C++ files
    assert "form 1: holds in 0.3.1; server_context.update_slots is defined at examples/server/server.cpp:7-15" \
        in half
    assert "- until: 0.3.1\n      path: examples/server/server.cpp\n" in half
    # 0.3.0: the loop's variable is `s`: the check's local as a metavariable
    assert "form 2: holds in 0.3.0; local names as metavariables (slot)" in half
    assert "contains: 'const int n_discard = $SLOT.params.n_discard ? $SLOT.params.n_discard : (n_left / 2);'" \
        in half
    assert "11|             const int n_discard = s.params.n_discard ? s.params.n_discard : (n_left / 2);" in half
    assert "with these forms: holds from 0.3.0 on" in half
    for check in ("warning", "method"):
        block = found[f"config-llama-server-context-shift / {check}"]
        assert "form 1: holds in 0.3.0 – 0.3.1" in block and "path: examples/server/server.cpp" in block
    # never the outer package's Python file that has the same name and text
    assert "convert_hf_to_gguf.py" not in out


def test_a_relocation_hint_points_at_where_the_cpp_code_went(index, kb_root, capsys):
    import json

    code, out, err = run_cli(capsys, "verify", "--engine", "llama-cpp")
    assert code == 1, out + err
    ledger = json.loads((kb_root / "ledger" / "llama-cpp.json").read_text())
    checks = ledger["releases"]["0.3.4"]["entries"]["config-llama-server-context-shift"]["checks"]
    assert checks["warning"]["verdict"] == "missing"  # the file is there, the method is not
    assert "now at tools/server/server-context.cpp:15 in server_context.update_slots; " \
           "as a form: {path: tools/server/server-context.cpp}" in checks["warning"]["hint"]
    assert checks["method"]["verdict"] == "missing"
    assert "now at tools/server/server-context.cpp:8-19 in server_context.update_slots; " \
           "as a form: {path: tools/server/server-context.cpp}" in checks["method"]["hint"]


def test_follow_proposes_the_reworded_cpp_code_and_the_moves(index, capsys):
    code, out, err = run_cli(capsys, "follow", "--release", "0.3.3")
    found = blocks(out)
    half = found["config-llama-server-context-shift / half"]
    assert "changed not-found; held at 0.3.2" in half
    # the code of 0.3.3 aligned with what held at 0.3.2, as 0.3.3 writes it (its layout kept, dedented); nothing
    # of the claim lost, and the C++ meaning mutants that caught the old form catch it
    assert "proposal: text, holds at tools/server/server.cpp:13-14 in server_context.update_slots; keeps the " \
           "claim" in half
    assert "      contains: |-\n        const int n_discard =\n" \
           "            slot.task->params.n_discard ? slot.task->params.n_discard : n_left / 2;\n" in half
    assert "config-llama-server-context-shift / warning" not in found  # it holds at 0.3.3
    code, out, err = run_cli(capsys, "follow", "--release", "0.3.4")
    found = blocks(out)
    for check in ("warning", "method"):
        block = found[f"config-llama-server-context-shift / {check}"]
        assert "proposal: move, holds at tools/server/server-context.cpp" in block and "keeps the claim" in block
        assert "path: tools/server/server-context.cpp" in block


def test_the_searches_read_each_language_s_files_and_cpp_names():
    files = {"common/arg.cpp": b'void f() { params.n_ctx = value; LOG("context size %d", n); }\n',
             "common/common.h": b"struct common_params {\n    int32_t n_ctx = 4096;\n};\n",
             "tools/server/server.cpp": b"struct server_context { void update_slots(); };\n"
                                        b"void server_context::update_slots() { x = (n_ctx); }\n",
             "gguf-py/gguf/constants.py": b"class common_params:\n    n_ctx = 4096\n"}
    symbol = [str(p) for p in locate.find_symbol(None, "common_params.n_ctx", files)]
    assert symbol == ["common/common.h:2 in common_params.n_ctx", "gguf-py/gguf/constants.py:2 in common_params.n_ctx"]
    assert [str(p) for p in locate.find_symbol(None, "server_context::update_slots", files)] == [
        "tools/server/server.cpp:2 in server_context.update_slots"]
    # a C++ fragment, read the C++ way in C and C++ files: its parentheses that group nothing aside
    assert [str(p) for p in locate.find_fragment(None, "x = n_ctx;", files)] == [
        "tools/server/server.cpp:2 in server_context.update_slots"]
    assert [str(p) for p in locate.find_text(None, "context size", files)] == ["common/arg.cpp:1 in f"]
    assert locate.files_of("cpp") == "cpp" and locate.files_of("python") == locate.files_of("text") == "python"
    assert locate.search_kind("symbol", "python") == "symbol" and locate.search_kind("symbol", "cpp") == "symbol:cpp"


@pytest.mark.parametrize("code,general", [
    ("const int n_discard = slot.task->params.n_discard;", "const int n_discard = $SLOT.task->params.n_discard;"),
    ("int32_t n_ctx = 4096;", "int32_t n_ctx = 4096;"),  # a declaration's name, a type: no locals
    ("this->n_ctx = std::max(a, b);", "this->n_ctx = std::max($A, $B);"),
    ("x = llama::defaults::n_ctx;", "$X = llama::defaults::n_ctx;"),  # a target is; a qualified name is not
    ("n += ctx[i];", "n += $CTX[i];"),
])
def test_trace_makes_cpp_locals_metavariables_and_leaves_types_and_keywords(code, general):
    from verifier.trace import generalize

    assert generalize(code, {}, language="cpp") == general


def test_a_cpp_claim_keeps_its_operators_and_keywords():
    from verifier.follow import claim_tokens

    tokens = claim_tokens("if (!slot.ctx_shift && n > 0) { return false; }", language="cpp")
    assert {"!", "&&", ">", "0", "if", "return", "false", "ctx_shift"} <= set(tokens)
    assert "&" not in tokens  # `&&` is one C++ operator, not two Python ones


def test_follow_reads_llama_cpp_s_tools_and_examples_as_its_own_code_and_cpp_definitions_by_kind():
    from verifier.code import SourceFile
    from verifier.follow import _aside, _scope_kind

    assert not _aside("tools/server/server.cpp") and not _aside("examples/server/server.cpp")
    assert _aside("tests/test-chat.cpp") and _aside("tools/lint.py") and _aside("examples/run.py")
    source = SourceFile("common/common.h", b"struct common_params {\n    int32_t n_ctx = 4096;\n    void reset() { }\n"
                                          b"};\nnamespace ns { enum e { A }; }\n")
    assert [_scope_kind(source, s) for s in ("common_params", "common_params.n_ctx", "common_params.reset", "ns",
                                             "ns.e.A", "gone")] == ["class", "field", "function", "class", "field",
                                                                    None]
