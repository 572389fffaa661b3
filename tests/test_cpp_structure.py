"""C and C++ structure (verifier/code/_cpp.py, #30): the definitions of a file by dotted symbol, on code shaped like
llama.cpp's (`common/common.h`'s parameter struct, `common/arg.cpp`'s option table, `tools/server/server.cpp`'s
methods defined outside their class), and what is not a definition."""

from __future__ import annotations

import pytest

from verifier.code import _cpp

SOURCE = b'''#include "arg.h"
// the parameters, with their defaults
struct common_params {
    int32_t n_predict = -1; // new tokens to predict
    int32_t n_ctx     = 4096;
    bool flash_attn = false;
    std::string model = ""; // NOLINT
    std::vector<std::string> antiprompt;
    struct common_params_sampling sampling;
    enum llama_pooling_type pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;
    float rope_freq_base{0.0f};
    int32_t * ptr = nullptr;
    int32_t ids[4] = {0, 1, 2, 3};
    void reset();
};
struct forward_only;
int prototype(int x);
extern int declared_elsewhere;
namespace {
static void helper() { int local = 1; }
}
namespace ns { namespace inner { int f(int x) { return x; } } }
namespace a::b { int g() { return 0; } }
struct server_context {
    llama_model * model = nullptr;
    void update_slots();
    bool load_model(const common_params & params) { return true; }
    struct nested { int a = 1; };
    ~server_context() { }
};
void server_context::update_slots() {
    if (x) { }
}
template <typename T> static T clamp(T v) { return v; }
#ifdef GGML_USE_CUDA
static int cuda_only() { return 1; }
#else
static int cuda_only() { return 0; }
#endif
extern "C" { int c_api(void) { return 0; } }
static const std::vector<std::string> names = {"a", "b"};
static std::string * pointer_returning() { return nullptr; }
common_params_context common_params_parser_init(common_params & params, llama_example ex) {
    auto add_opt = [&](common_arg arg) { ctx_arg.options.push_back(std::move(arg)); };
    add_opt(common_arg(
        {"-c", "--ctx-size"}, "N",
        string_format("size of the prompt context (default: %d, 0 = loaded from model)", params.n_ctx),
        [](common_params & params, int value) {
            params.n_ctx = value;
        }
    ).set_env("LLAMA_ARG_CTX_SIZE"));
    return ctx_arg;
}
enum server_state {
    SERVER_STATE_LOADING_MODEL,  // Server is starting up, model not fully loaded yet
    SERVER_STATE_READY,          // Server is ready and model is loaded
};
typedef struct { int x = 0; } anonymous_t;
using json = nlohmann::ordered_json;
'''


@pytest.fixture(scope="module")
def found():
    tree = _cpp.parse(SOURCE)
    assert not tree.root_node.has_error
    return tree.root_node, list(_cpp.definitions(tree.root_node))


def _lines(rng) -> str:
    return SOURCE[rng[0]:rng[1]].decode()


def test_definitions_are_named_by_their_qualified_dotted_symbol(found):
    _, definitions = found
    names = [name for name, _ in definitions]
    assert names == [
        "common_params", "helper", "ns", "a.b", "server_context", "server_context.update_slots", "clamp",
        "cuda_only", "cuda_only", "c_api", "names", "pointer_returning", "common_params_parser_init",
        "server_state", "anonymous_t", "json",
        "common_params.n_predict", "common_params.n_ctx", "common_params.flash_attn", "common_params.model",
        "common_params.antiprompt", "common_params.sampling", "common_params.pooling_type",
        "common_params.rope_freq_base", "common_params.ptr", "common_params.ids",
        "ns.inner", "a.b.g",
        "server_context.model", "server_context.load_model", "server_context.nested", "server_context.~server_context",
        "server_state.SERVER_STATE_LOADING_MODEL", "server_state.SERVER_STATE_READY",
        "ns.inner.f", "server_context.nested.a"]
    # not definitions: a forward declaration, a prototype, `extern`, a method declared in its class (its
    # definition outside is), a lambda, a local, a parameter
    assert "common_params.reset" not in names
    for name in ("forward_only", "prototype", "declared_elsewhere", "add_opt", "local", "value", "params", "arg"):
        assert not [n for n in names if n == name or n.endswith("." + name)], name


def test_a_symbol_resolves_to_its_definitions_dotted_or_with_colons(found):
    root, definitions = found
    (field,) = _cpp.resolve(root, "common_params.n_ctx", definitions)
    assert _lines(field) == "int32_t n_ctx     = 4096;"
    assert _cpp.resolve(root, "common_params::n_ctx") == [field]
    (method,) = _cpp.resolve(root, "server_context::update_slots")
    assert _lines(method).startswith("void server_context::update_slots() {") and _lines(method).endswith("}")
    (inline,) = _cpp.resolve(root, "server_context.load_model")
    assert "return true;" in _lines(inline)
    assert len(_cpp.resolve(root, "cuda_only")) == 2  # both branches of the #ifdef define it
    (parser_init,) = _cpp.resolve(root, "common_params_parser_init")
    assert '.set_env("LLAMA_ARG_CTX_SIZE")' in _lines(parser_init)
    assert _lines(_cpp.resolve(root, "ns.inner.f")[0]).startswith("int f(int x)")
    assert _lines(_cpp.resolve(root, "a::b::g")[0]).startswith("int g()")
    assert _lines(_cpp.resolve(root, "server_state.SERVER_STATE_READY")[0]) == "SERVER_STATE_READY"
    assert _cpp.resolve(root, "common_params.reset") == []  # declared, not defined here
    assert _cpp.resolve(root, "n_ctx") == []  # a member is named with its struct
    assert _cpp.resolve(root, "helper") and _cpp.resolve(root, "clamp") and _cpp.resolve(root, "c_api")


@pytest.mark.parametrize("path,cpp", [("tools/server/server.cpp", True), ("common/common.h", True),
                                      ("ggml/src/ggml.c", True), ("ggml/src/ggml-cuda/ggml-cuda.cu", True),
                                      ("convert_hf_to_gguf.py", False), ("CMakeLists.txt", False)])
def test_which_files_are_read_as_c_or_cpp(path, cpp):
    assert _cpp.is_cpp_path(path) is cpp


# --- checks on C and C++ files: `in` scopes, code compared by tokens ---------------------------------------------

def run(pattern_key: str, pattern: str, scope: str | None = None, path: str = "common/arg.cpp", source=SOURCE,
        **rest):
    from verifier.code import SourceFile
    from verifier.evaluate import evaluate_source
    from verifier.model import Check

    check = Check(id="c", claim="", engine="llama-cpp", path=path, matcher=pattern_key, pattern=pattern, scope=scope,
                  **rest)
    return evaluate_source(check, SourceFile(path, source))


def test_contains_in_a_struct_field_pins_its_default_whatever_the_layout():
    verdict = run("contains", "int32_t n_ctx = 4096;", "common_params.n_ctx", path="common/common.h")
    assert verdict.status == "holds" and verdict.symbol == "common_params.n_ctx"
    assert verdict.lines == (5, 5)
    assert run("contains", "int32_t n_ctx = 8192;", "common_params.n_ctx", path="common/common.h").status == "changed"
    relaid = SOURCE.replace(b"    int32_t n_ctx     = 4096;", b"    int32_t   n_ctx =  // the context size\n    4096 ;")
    assert run("contains", "int32_t n_ctx = 4096;", "common_params.n_ctx", path="common/common.h",
               source=relaid).status == "holds"


def test_contains_in_a_function_finds_an_option_handler_and_absent_its_absence():
    fragment = '{"-c", "--ctx-size"}, "N"'
    assert run("contains", fragment, "common_params_parser_init").status == "holds"
    assert run("contains", "params.n_ctx = value;", "common_params_parser_init").status == "holds"
    assert run("contains", '.set_env("LLAMA_ARG_CTX_SIZE")', "common_params_parser_init").status == "holds"
    assert run("absent", "params.n_batch = value;", "common_params_parser_init").status == "holds"
    assert run("absent", "params.n_ctx = value;", "common_params_parser_init").status == "changed"
    # the text of a comment or a string is not code: a fragment is not found inside them
    assert run("contains", "loaded from model", "common_params_parser_init").status == "changed"


def test_metavariables_and_runs_bind_tokens_in_cpp():
    verdict = run("contains", "int32_t n_ctx = $N;", "common_params", path="common/common.h")
    assert verdict.status == "holds"
    assert run("contains", "add_opt(common_arg($$$).set_env($ENV));", "common_params_parser_init").status == "holds"
    assert run("contains", "if ($$$) { }", "server_context.update_slots", path="tools/server/server.cpp").status \
        == "holds"


def test_a_symbol_a_cpp_file_does_not_define_is_missing_and_in_is_refused_for_other_files():
    verdict = run("contains", "x", "server_context.no_such_method", path="tools/server/server.cpp")
    assert verdict.status == "missing"
    other = run("contains", "x", "anything", path="CMakeLists.txt", source=b"project(x)\n")
    assert (other.status, other.reason) == ("error", "invalid")
    assert other.message == "`in` needs a Python, C or C++ file; CMakeLists.txt is none of them"
    adjacent = run("contains", "x", None, path="CMakeLists.txt", source=b"project(x)\n", after="y", adjacent=True)
    assert adjacent.status == "error" and adjacent.message == (
        "`adjacent` needs a Python, C or C++ file; CMakeLists.txt is not one")


def test_lint_lets_in_and_adjacent_name_a_cpp_scope_and_refuses_them_elsewhere(kb_root):
    from .conftest import VALID_ENTRY
    from .test_lint import lint_text

    cpp = VALID_ENTRY.replace("    path: pkg/sched.py", "    path: tools/server/server.cpp", 1)
    assert not [d for d in lint_text(kb_root, cpp)[0] if d.code == "G306"]
    other = VALID_ENTRY.replace("    path: pkg/sched.py", "    path: docker/Dockerfile", 1)
    found = [(d.code, d.message) for d in lint_text(kb_root, other)[0]]
    assert ("G306", "check zero: 'in' needs a Python, C or C++ file; docker/Dockerfile is none of them") in found
    assert ("G306", "check zero: 'adjacent' needs a Python, C or C++ file; docker/Dockerfile is not one") in found


def test_a_match_names_the_innermost_definition_and_a_broken_scope_is_unparsable():
    verdict = run("contains", "return true;", "server_context", path="tools/server/server.cpp")
    assert verdict.status == "holds" and verdict.symbol == "server_context.load_model"
    broken = SOURCE.replace(b"    if (x) { }", b"    if (x { ]")
    verdict = run("contains", "if (y) { }", "server_context.update_slots", path="tools/server/server.cpp",
                  source=broken)
    # as for Python: not found where the parser saw errors is no evidence the code changed
    assert (verdict.status, verdict.reason) == ("error", "unparsable")


def test_string_defines_and_query_read_cpp():
    server = b'''void f(server_slot & slot) {
    SLT_WRN(slot, "%s", "the slot context shift is disabled, "
                        "the request is truncated\\n");
    auto tpl = R"(<|im_start|>{{ role }}\\n)";
}
'''
    verdict = run("string", "context shift is disabled, the request is truncated", "f", path="tools/server/server.cpp",
                  source=server)
    assert verdict.status == "holds" and verdict.lines == (2, 3)
    assert run("string", "<|im_start|>{{ role }}\\n", "f", path="tools/server/server.cpp", source=server).status \
        == "holds"  # a raw string, as written
    assert run("string", "shift is enabled", "f", path="tools/server/server.cpp", source=server).status == "changed"
    assert run("defines", "server_context.update_slots", path="tools/server/server.cpp").status == "holds"
    assert run("defines", "server_context.gone", path="tools/server/server.cpp").status == "missing"
    # a query in tree-sitter-cpp's grammar (test_cpp_matchers has more)
    query = run("query", '(field_declaration declarator: (field_identifier) @f (#eq? @f "n_ctx"))', "common_params",
                path="common/common.h")
    assert query.status == "holds" and query.lines == (5, 5)
    assert run("query", "(identifier) @x", None, path="docker/Dockerfile", source=b"FROM x\n").message == (
        "'query' needs a Python, C or C++ file; docker/Dockerfile is not one")


CHECKS = [("contains", "int32_t n_ctx = 4096;", "common_params.n_ctx"),
          ("contains", '{"-c", "--ctx-size"}, "N"', "common_params_parser_init"),
          ("contains", "params.n_ctx = value;", "common_params_parser_init"),
          ("absent", "params.n_batch = value;", "common_params_parser_init"),
          ("contains", "if ($$$) { }", "server_context.update_slots"),
          ("string", "size of the prompt context", "common_params_parser_init"),
          ("contains", "return true;", "server_context.load_model"),
          ("contains", "float rope_freq_base{0.0f};", "common_params"),
          # written with a pair that groups nothing, and a trailing comma: the code has neither
          ("contains", "int32_t n_ctx = (4096);", "common_params.n_ctx"),
          ("contains", "int32_t ids[4] = {0, 1, 2, 3,};", "common_params.ids"),
          ("contains", "string_format($$$, (params.n_ctx))", "common_params_parser_init")]


def _relaid(source: bytes, gaps) -> bytes:
    """`source` with the whitespace between the tokens of each line that is not a preprocessor directive (those
    end at their line's end) replaced by gaps drawn from `gaps`: what a formatter may do."""
    from verifier.code._cpp_tokens import tokenize

    out = []
    draw = iter(gaps)
    for line in source.decode().split("\n"):
        if line.lstrip().startswith("#") or "//" in line:  # a directive, or a line comment that must end the line
            out.append(line + "\n")
            continue
        tokens = tokenize(line)
        if not tokens:
            out.append(line + "\n")
            continue
        pieces = [line[:tokens[0].start]]
        for a, b in zip(tokens, tokens[1:]):
            between = line[a.end:b.start]
            pieces.append(a.text + (between if between.strip() else next(draw, between or "")))
        pieces.append(tokens[-1].text + line[tokens[-1].end:] + "\n")
        out.append("".join(pieces))
    return "".join(out).encode()


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([" ", "  ", "\n", "\n    ", "\n\t", " \\\n "]), min_size=400, max_size=400))
def test_a_relayout_flips_no_verdict(gaps):
    relaid = _relaid(SOURCE, [g if g.strip(" \t\n") != "\\" else g for g in gaps])
    assert not _cpp.parse(relaid).root_node.has_error
    for matcher, pattern, scope in CHECKS:
        before = run(matcher, pattern, scope, path="tools/server/server.cpp")
        after = run(matcher, pattern, scope, path="tools/server/server.cpp", source=relaid)
        assert before.status == "holds" and after.status == "holds", (matcher, pattern, after)


#: Where the sample's code may take a pair that groups nothing, or a trailing comma (as people and formatters write
#: them), found by the grammar's own shapes: a default member initializer, an initializer, the right of `=`, a
#: returned value, an argument that is a name, a literal or a member; the end of an initializer or enumerator list.
_WRAPPABLE = """(field_declaration default_value: (_) @v) (init_declarator value: (number_literal) @v)
    (assignment_expression right: (_) @v) (return_statement (_) @v)
    (argument_list [(identifier) (string_literal) (field_expression) (number_literal)] @v)"""
_LISTS = "[(initializer_list) (enumerator_list)] @list"


def _with_pairs_and_commas(source: bytes, wrap, comma) -> bytes:
    """`source` with each wrappable expression in a pair of parentheses where `wrap` says so (drawn in order),
    and a trailing comma added to each list where `comma` says so."""
    import tree_sitter

    root = _cpp.parse(source).root_node
    edits = []  # (offset, text), applied from the end
    for node in tree_sitter.QueryCursor(tree_sitter.Query(_cpp.LANGUAGE, _WRAPPABLE)).captures(root).get("v", ()):
        if node.type not in ("initializer_list", "argument_list", "comment") and next(wrap, False):
            edits += [(node.start_byte, b"("), (node.end_byte, b")")]
    for node in tree_sitter.QueryCursor(tree_sitter.Query(_cpp.LANGUAGE, _LISTS)).captures(root).get("list", ()):
        items = [c for c in node.named_children if c.type != "comment"]
        ends = [c.type for c in node.children if c.type != "comment"][-2:]
        if items and ends[-1] == "}" and ends[0] != "," and next(comma, False):
            edits.append((items[-1].end_byte, b","))
    out = bytearray(source)
    for offset, text in sorted(edits, key=lambda e: e[0], reverse=True):
        out[offset:offset] = text
    return bytes(out)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.booleans(), min_size=60, max_size=60), st.lists(st.booleans(), min_size=8, max_size=8),
       st.lists(st.sampled_from([" ", "\n    ", "\n\t"]), min_size=400, max_size=400))
def test_pairs_that_group_nothing_and_trailing_commas_flip_no_verdict(wrap, comma, gaps):
    """Parentheses around what a place holds whole, and trailing commas, added anywhere the sample can take them
    (and the layout changed as well): every check that holds still holds, on the same lines."""
    changed = _with_pairs_and_commas(SOURCE, iter(wrap), iter(comma))
    relaid = _relaid(changed, gaps)
    assert not _cpp.parse(relaid).root_node.has_error
    for matcher, pattern, scope in CHECKS:
        before = run(matcher, pattern, scope, path="tools/server/server.cpp")
        after = run(matcher, pattern, scope, path="tools/server/server.cpp", source=changed)
        assert before.status == "holds" and after.status == "holds", (matcher, pattern, after)
        assert after.lines == before.lines
        assert run(matcher, pattern, scope, path="tools/server/server.cpp", source=relaid).status == "holds"


def test_wrapping_adds_pairs_where_it_says():
    every = _with_pairs_and_commas(SOURCE, iter([True] * 100), iter([True] * 100))
    assert b"int32_t n_ctx     = (4096);" in every and b"params.n_ctx = (value);" in every
    assert b"int32_t ids[4] = {0, 1, 2, 3,};" in every and b"SERVER_STATE_READY,          // Server" in every
    assert b"SERVER_STATE_READY,," not in every
    assert b'return (ctx_arg);' in every and b'{"-c", "--ctx-size",}, ("N"),' in every


def test_a_format_macro_between_string_literals_parses_and_is_its_name_in_the_value():
    server = b'''void f() {
    SLT_INF(*ret, "selected slot by LRU, t_last = %" PRId64 "\\n", t_last);
    snprintf(buf, 11, "%09" PRId64, ns);
}
'''
    assert not _cpp.parse(server).root_node.has_error
    assert _cpp.masked(server).count(b'"') == server.count(b'"') + 4 and len(_cpp.masked(server)) == len(server)
    verdict = run("string", "t_last = %PRId64", "f", path="tools/server/server-context.cpp", source=server)
    assert verdict.status == "holds" and verdict.lines == (2, 2)
    assert run("contains", 'snprintf(buf, 11, "%09" PRId64, ns);', "f", path="tools/server/server-context.cpp",
               source=server).status == "holds"  # the code itself is compared as written


def test_a_bare_macro_line_is_read_as_blank_but_an_enum_s_last_enumerator_stays():
    old_parser = b'''bool gpt_params_find_arg(int argc, char ** argv, gpt_params & params) {
    if (arg == "-s" || arg == "--seed") {
        CHECK_ARG
        params.seed = std::stoul(argv[i]);
        return true;
    }
    return false;
}
LLAMA_COMMON_ATTRIBUTE_FORMAT(1, 2)
static std::string format(const char * fmt, ...) { return fmt; }
enum server_state {
    SERVER_STATE_LOADING_MODEL,
    SERVER_STATE_READY
};
'''
    tree = _cpp.parse(old_parser)
    assert not tree.root_node.has_error and len(_cpp.masked(old_parser)) == len(old_parser)
    names = [name for name, _ in _cpp.definitions(tree.root_node)]
    assert {"gpt_params_find_arg", "format", "server_state.SERVER_STATE_READY"} <= set(names)
    assert run("contains", "CHECK_ARG params.seed = std::stoul(argv[i]);", "gpt_params_find_arg",
               path="common/common.cpp", source=old_parser).status == "holds"  # the code compared is as written


@pytest.mark.parametrize("style", ["LLVM", "Google", "WebKit", "{BasedOnStyle: Mozilla, ColumnLimit: 40}",
                                   "{BasedOnStyle: LLVM, ColumnLimit: 200, BreakBeforeBraces: Allman}"])
def test_clang_format_flips_no_verdict(style, tmp_path):
    """What the issue asks of a re-layout: clang-format (from the package index, the test extra) in five styles,
    narrow and wide; every check that holds on the sample still holds, on the lines clang-format moved it to."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    binary = shutil.which("clang-format") or str(Path(sys.executable).with_name("clang-format"))
    if not Path(binary).exists():
        pytest.skip("clang-format is a test extra: pip install -e '.[test]'")
    relaid = subprocess.run([binary, f"--style={style}", "--assume-filename=server.cpp", "--sort-includes=false"],
                            input=SOURCE, capture_output=True, check=True, timeout=60).stdout
    assert relaid != SOURCE
    for matcher, pattern, scope in CHECKS:
        verdict = run(matcher, pattern, scope, path="tools/server/server.cpp", source=relaid)
        assert verdict.status == "holds", (style, matcher, pattern, verdict)


def test_what_a_matcher_reads_is_said_in_words():
    from verifier.model import language_of, languages_words

    assert [language_of(p) for p in ("a/b.py", "common/arg.cpp", "ggml.h", "Dockerfile")] == [
        "python", "cpp", "cpp", "text"]
    assert languages_words(("python",)) == "a Python file"
    assert languages_words(("python", "cpp")) == "a Python, C or C++ file"
    verdict = run("string", "x", None, path="docker/Dockerfile", source=b"FROM x\n")
    assert verdict.message == "'string' needs a Python, C or C++ file; docker/Dockerfile is not one"
