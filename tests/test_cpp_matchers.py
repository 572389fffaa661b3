"""The C and C++ comparison beyond tokens (#30): parentheses that group nothing and trailing commas before a `}`
left out on both sides (verifier/code/_cpp_parens.py), `adjacent` over C++ statements, and `query` in
tree-sitter-cpp's grammar. Each rule has a positive case and a near miss: code that differs only by a pair that
does group something must not match."""

from __future__ import annotations

import pytest

from verifier.code import SourceFile, fragment
from verifier.code._cpp_parens import canonical, fragment_dropped
from verifier.evaluate import evaluate_source
from verifier.model import Check


def run(matcher: str, pattern: str, source: bytes, scope: str | None = "f", path: str = "tools/server/server.cpp",
        **rest):
    check = Check(id="c", claim="", engine="llama-cpp", path=path, matcher=matcher, pattern=pattern, scope=scope,
                  **rest)
    return evaluate_source(check, SourceFile(path, source))


def body(code: str) -> bytes:
    return ("void f() {\n    " + code + "\n}\n").encode()


def holds(pattern: str, code: str) -> bool:
    verdict = run("contains", pattern, body(code))
    assert verdict.status in ("holds", "changed"), verdict
    return verdict.status == "holds"


# --- parentheses -------------------------------------------------------------------------------------------------

#: (code with a pair that groups nothing, the same code without it)
REDUNDANT = [
    ("x = (0);", "x = 0;"),
    ("return (a);", "return a;"),
    ("if ((a && b)) { g(); }", "if (a && b) { g(); }"),
    ("y = (a).b;", "y = a.b;"),
    ("y = a + (b * c);", "y = a + b * c;"),
    ("f((x));", "f(x);"),
    ("y = (a + b) + c;", "y = a + b + c;"),  # the left of a left-associative operator
    ("y = (a * b) + c;", "y = a * b + c;"),
    ("y = ((a));", "y = a;"),
    ("y = ((a + b)) * c;", "y = (a + b) * c;"),  # one pair groups, the other does not
    ("int n_ctx = (4096);", "int n_ctx = 4096;"),
    ("n = s.n ? s.n : (n_left / 2);", "n = s.n ? s.n : n_left / 2;"),
    ("n = (a || b) ? c : d;", "n = a || b ? c : d;"),
    ("n = c ? a : (b ? d : e);", "n = c ? a : b ? d : e;"),
    ("y = !(a);", "y = !a;"),
    ("y = -(s.x);", "y = -s.x;"),
    ("a[(i)] = (b)++;", "a[i] = b++;"),
    ("y = (p->x)->y;", "y = p->x->y;"),
    ("x = (y = z);", "x = y = z;"),
    ("(a) = b;", "a = b;"),
    ("while ((x = next())) { }", "while (x = next()) { }"),
    ("do { } while ((x));", "do { } while (x);"),
    ("delete (p);", "delete p;"),
    ("int v[] = {(a + b), 2};", "int v[] = {a + b, 2};"),
    ('s = ("a" "b");', 's = "a" "b";'),
]

#: (code with a pair that groups something, or that C++ might read otherwise without it, the code without it)
NEEDED = [
    ("y = (a + b) * c;", "y = a + b * c;"),
    ("y = a - (b - c);", "y = a - b - c;"),
    ("y = !(a && b);", "y = !a && b;"),
    ("y = (a & b) == c;", "y = a & b == c;"),
    ("f((a, b));", "f(a, b);"),  # a comma expression
    ("FOO((a + b));", "FOO(a + b);"),  # a macro's argument: `a + b` may come apart in its expansion
    ("x = (std::max(a, b));", "x = std::max(a, b);"),  # a comma inside: a macro's argument would split there
    ("n = sizeof (x);", "n = sizeof x;"),
    ("q = (max)(a, b);", "q = max(a, b);"),  # the callee: keeps a function-like macro from expanding
    ("p = &(A::m);", "p = &A::m;"),  # a pointer, not a pointer to member
    ("k = (*p).x;", "k = *p.x;"),
    ("n = c ? a : (b = d);", "n = c ? a : b = d;"),  # C reads the assignment otherwise
    ("n = (a = b) ? c : d;", "n = a = b ? c : d;"),
    ("T v((a));", "T v(a);"),  # a variable, not a function declaration
    ("y = -(-a);", "y = --a;"),
]


@pytest.mark.parametrize("with_pair,without", REDUNDANT)
def test_a_pair_that_groups_nothing_does_not_matter_either_way(with_pair, without):
    assert holds(without, with_pair), "the file has the pair"
    assert holds(with_pair, without), "the fragment has the pair"
    assert holds(with_pair, with_pair) and holds(without, without)


@pytest.mark.parametrize("with_pair,without", NEEDED)
def test_a_pair_that_may_group_something_is_kept(with_pair, without):
    assert not holds(without, with_pair)
    assert not holds(with_pair, without)
    assert holds(with_pair, with_pair), "the code as written still matches itself"


def texts(code: str) -> list[str]:
    tokens = fragment(code).cpp_tokens
    return [t.text for t in canonical(tokens, fragment_dropped(code, tokens))]


def test_a_cast_is_no_pair_and_decltype_keeps_its_own():
    assert texts("y = (int) x;") == ["y", "=", "(", "int", ")", "x", ";"]
    assert texts("y = (int)(x);") == ["y", "=", "(", "int", ")", "(", "x", ")", ";"]  # a cast's operand: kept
    assert texts("using T = decltype((x));") == ["using", "T", "=", "decltype", "(", "(", "x", ")", ")", ";"]
    assert not holds("using T = decltype(x);", "using T = decltype((x));")  # a reference type, not the variable's


def test_a_fragment_is_parsed_as_a_file_then_as_a_body_and_a_run_keeps_its_pair():
    assert texts("int32_t n_ctx = (4096);") == texts("int32_t n_ctx = 4096;")  # a declaration, as a file
    assert texts("y = a + (b * c);") == texts("y = a + b * c;")  # at file level this reads as something else
    assert texts("x = ($X);") == texts("x = $X;")  # `$NAME` is one name
    assert texts("x = ($$$);") == ["x", "=", "(", "$$$", ")", ";"]  # `$$$` may stand for `a, b`
    assert texts("] = (0);") == ["]", "=", "(", "0", ")", ";"]  # no C++: as written


def test_a_fragment_that_does_not_parse_keeps_its_pairs_and_still_matches_the_code_as_written():
    assert holds("] = (0);", "v[0] = (0);")
    assert holds("] = 0;", "v[0] = (0);")  # the file's pair groups nothing
    assert not holds("] = (0);", "v[0] = 0;")  # the fragment's own pair is not known to: kept
    # what the fragment's parse keeps, the file's may not (a cast or a pair: `(a) - b` is ambiguous without types)
    assert holds("x = ($$$);", "x = (a);") and holds("x = ($$$);", "x = (a, b);")


def test_nothing_is_left_out_where_the_parser_saw_an_error():
    broken = b"void f() {\n    x = (0);\n    y = (a) + + ;\n}\n"
    assert SourceFile("a.cpp", broken).root.has_error
    assert run("contains", "x = 0;", broken).status == "holds"  # an error elsewhere changes nothing here
    assert run("contains", "y = (a) +", broken).status == "holds"
    assert (run("contains", "y = a +", broken).status, run("contains", "y = a +", broken).reason) == (
        "error", "unparsable")


def test_a_bound_value_is_what_the_pair_holds():
    verdict = run("contains", "int32_t n_ctx = $N;", b"struct common_params {\n    int32_t n_ctx = (4096);\n};\n",
                  "common_params.n_ctx", path="common/common.h", values=(("N", ("4096",)),))
    assert verdict.status == "holds" and dict(verdict.values) == {"N": "4096"}


# --- trailing commas -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("with_comma,without", [
    ("int v[] = {1, 2,};", "int v[] = {1, 2};"),
    ('std::vector<std::string> names = {"a", "b",};', 'std::vector<std::string> names = {"a", "b"};'),
    ("auto p = point{.x = 1, .y = 2,};", "auto p = point{.x = 1, .y = 2};"),
])
def test_a_trailing_comma_before_a_brace_does_not_matter(with_comma, without):
    assert holds(without, with_comma) and holds(with_comma, without)


def test_an_enumerator_list_s_trailing_comma_does_not_matter_and_one_before_a_parenthesis_does():
    source = b"enum server_state {\n    SERVER_STATE_LOADING_MODEL,\n    SERVER_STATE_READY,\n};\n"
    assert run("contains", "SERVER_STATE_READY }", source, None).status == "holds"
    assert run("contains", "{ SERVER_STATE_LOADING_MODEL, SERVER_STATE_READY }", source, None).status == "holds"
    assert texts("FOO(a,);") == ["FOO", "(", "a", ",", ")", ";"]  # an empty macro argument: not a trailing comma
    assert holds("{1, $$$}", "int v[] = {1,};")  # `$$$` standing for nothing, as written


# --- adjacent --------------------------------------------------------------------------------------------------

ADJACENT = b'''void f(server_slot & slot) {
    slot.n_past = 0;
    // a comment between them does not count
    slot.cache_tokens.clear();
    if (slot.x) slot.y = 1;
    slot.z = 2;
    if (slot.w) { slot.v = 1; }
    slot.u = 3;
    switch (k) {
        case 1: a = 1; b = 2; break;
    }
    { c = 3; }
    d = 4; e = 5;
}
struct common_params {
    int32_t n_ctx = 4096;
    int32_t n_batch = 2048;
};
'''


@pytest.mark.parametrize("after,pattern,scope,adjacent", [
    ("slot.n_past = 0;", "slot.cache_tokens.clear();", "f", True),
    ("slot.n_past = 0;", "slot.z = 2;", "f", False),  # two statements between
    ("if (slot.w) { slot.v = 1; }", "slot.u = 3;", "f", True),
    # a body without braces is a block of its own statement, as a Python block is: the `after` ends in it
    ("if (slot.x) slot.y = 1;", "slot.z = 2;", "f", False),
    ("slot.y = 1;", "slot.z = 2;", "f", False),
    ("a = 1;", "b = 2;", "f", True),  # after a case label
    ("c = 3; }", "d = 4;", "f", True),  # a block is a statement
    ("c = 3;", "d = 4;", "f", False),  # ...whose statements are not its neighbours'
    ("d = 4;", "e = 5;", "f", True),  # on one line
    ("int32_t n_ctx = 4096;", "int32_t n_batch = 2048;", "common_params", True),  # a class's members
])
def test_adjacent_asks_for_consecutive_statements_of_one_block(after, pattern, scope, adjacent):
    verdict = run("contains", pattern, ADJACENT, scope, after=after, adjacent=True)
    assert (verdict.status, verdict.reason) == (("holds", None) if adjacent else ("changed", "not-adjacent")), verdict
    assert run("contains", pattern, ADJACENT, scope, after=after).status == "holds"  # in order, adjacent or not


# --- query -----------------------------------------------------------------------------------------------------

QUERY_SOURCE = b'''struct common_params {
    int32_t n_ctx = 4096; // context size
    bool ctx_shift = true;
};
void f() {
    LOG_INF("n_tokens = %" PRId64 "\\n", n);
    params.n_ctx = value;
}
'''


def test_a_query_reads_the_cpp_tree_inside_its_scope():
    field = ('(field_declaration declarator: (field_identifier) @name default_value: (true) @value '
             '(#eq? @name "ctx_shift"))')
    verdict = run("query", field, QUERY_SOURCE, "common_params", path="common/common.h")
    assert verdict.status == "holds" and verdict.lines == (3, 3) and verdict.symbol == "common_params.ctx_shift"
    assert run("query", field.replace("(true)", "(false)"), QUERY_SOURCE, "common_params",
               path="common/common.h").reason == "not-found"
    assert run("query", field, QUERY_SOURCE, "f", path="common/common.h").status == "changed"  # not in that scope
    # the file as its tree reads it: a format macro between literals is a literal, every offset kept
    call = '(call_expression function: (identifier) @f arguments: (argument_list (concatenated_string)) (#eq? @f "LOG_INF"))'
    assert run("query", call, QUERY_SOURCE, "f", path="common/common.h").lines == (6, 6)


def test_a_query_in_python_s_grammar_is_invalid_on_a_cpp_file_and_lint_compiles_it_with_the_file_s():
    from verifier.matchers import REGISTRY

    python_query = "(call function: (identifier) @f)"  # tree-sitter-cpp's is `call_expression`
    verdict = run("query", python_query, QUERY_SOURCE, None, path="common/common.h")
    assert (verdict.status, verdict.reason) == ("error", "invalid") and "does not compile" in verdict.message
    validate = REGISTRY["query"].validate
    assert validate(python_query, "python") is None and validate(python_query, "cpp")[0] == "G308"
    cpp_query = "(field_declaration default_value: (number_literal) @v)"
    assert validate(cpp_query, "cpp") is None and validate(cpp_query, "python")[0] == "G308"


def test_lint_compiles_a_query_with_the_grammar_of_its_file(kb_root):
    from .conftest import VALID_ENTRY
    from .test_lint import lint_text

    entry = VALID_ENTRY.replace('    string: "vllm:num_preemptions"',
                                '    query: "(field_declaration default_value: (number_literal) @v)"')
    on_cpp = entry.replace("    path: pkg/metrics.py", "    path: common/common.h")
    assert not [d for d in lint_text(kb_root, on_cpp)[0] if d.code in ("G306", "G308")]
    assert [d.code for d in lint_text(kb_root, entry)[0] if d.code in ("G306", "G308")] == ["G308"]


# --- metavariables ---------------------------------------------------------------------------------------------

def bound(pattern: str, code: str, name: str = "N") -> str | None:
    """What `$name` bound where the fragment first occurs in `code` (a function's body), or None when it does not."""
    source = SourceFile("tools/server/server.cpp", body(code))
    found = source.find_bound(fragment(pattern), source.whole())
    return found[0][1][name] if found else None


@pytest.mark.parametrize("pattern,code,value", [
    ("int32_t n_ctx = $N;", "int32_t n_ctx = 4096;", "4096"),  # one token, as before
    ("int32_t n_ctx = $N;", "int32_t n_ctx = 4 * 1024;", "4 * 1024"),  # a whole expression, as in Python
    ("int32_t n_ctx = $N;", "int32_t n_ctx = (4 * 1024);", "4 * 1024"),  # what a pair that groups nothing holds
    ("$N.n_past = 0;", "slots[i].n_past = 0;", "slots[i]"),
    ("$N->n_past = 0;", "ctx.slots[i]->n_past = 0;", "ctx.slots[i]"),
    ("f($N);", "f(a + b);", "a + b"),
    ("$N v = {};", "std::vector<int> v = {};", "std::vector<int>"),  # a type
    ("x = $N;", "x = {1, 2};", "{1, 2}"),  # a braced initializer
    ("f($N);", "f(a, b);", None),  # two arguments are no expression
    ("x = $N;", "x = a, b;", None),  # `(x = a), b`: the comma expression starts at `x`
    ("x = $N + 1;", "x = a * b + 1;", "a * b"),
])
def test_a_name_binds_one_token_or_one_whole_expression(pattern, code, value):
    assert bound(pattern, code) == value


def test_a_name_written_twice_binds_the_same_code():
    assert holds("$A = $A + 1;", "x.y = x.y + 1;")
    assert not holds("$A = $A + 1;", "x.y = x.z + 1;")


# --- named values ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("code,allowed,status", [
    ("int32_t n_ctx = 4096u;", "4096", "holds"),  # a suffix is no part of the value
    ("int32_t n_ctx = 4'096;", "4096", "holds"),  # nor is a digit separator
    ("int32_t n_ctx = 0x1000;", "4096", "holds"),
    ("int32_t n_ctx = 4097u;", "4096", "changed"),  # another value is another value
    ("float n_ctx = 0.80f;", "0.8", "holds"),
    ("float n_ctx = 0.85f;", "0.8", "changed"),
    ("int32_t n_ctx = 0x1f;", "31", "holds"),  # a hex digit f is no float suffix
    ("int32_t n_ctx = 0x1f;", "1", "changed"),
])
def test_a_named_value_in_c_is_compared_by_its_value(code, allowed, status):
    written = code.split(" = ")[1].rstrip(";")
    verdict = run("contains", code.split(" = ")[0] + " = $N;", f"struct common_params {{\n    {code}\n}};\n".encode(),
                  "common_params.n_ctx", path="common/common.h", values=(("N", (allowed,)),))
    assert verdict.status == status, verdict
    if status == "holds":
        assert dict(verdict.values) == {"N": written}
    else:
        assert f"N is {written} (the claim allows {allowed})" in verdict.hint


@pytest.mark.parametrize("written,shown", [
    ("4096u", "4096"), ("1024ull", "1024"), ("4'096", "4096"), ("0.80f", "0.8"), (".5f", "0.5"), ("0x10u", "16"),
    ("0x1f", "31"), ("-1", "-1"), ("n_ctx_train", "n_ctx_train"), ("1024 * 1024", "1024 * 1024"), ('"auto"', "auto"),
])
def test_prose_shows_a_c_number_by_its_value(written, shown):
    from verifier.model import bound_word

    assert bound_word(written) == shown


def test_lint_reads_values_in_a_cpp_check_and_still_refuses_them_where_text_is_compared(kb_root):
    from .conftest import VALID_ENTRY
    from .test_lint import lint_text

    entry = VALID_ENTRY.replace("    contains: request.num_computed_tokens = 0\n    after: request.status = PREEMPTED\n"
                                "    adjacent: true\n", "    contains: int32_t n_ctx = $N;\n    values: {N: [4096]}\n")
    assert "$N" in entry
    on_cpp = entry.replace("    path: pkg/sched.py", "    path: common/common.h")
    assert "path: common/common.h" in on_cpp
    assert not [d for d in lint_text(kb_root, on_cpp)[0] if d.code == "G315"]
    on_text = entry.replace("    path: pkg/sched.py", "    path: docs/defaults.md")
    assert [d.code for d in lint_text(kb_root, on_text)[0] if d.code == "G315"] == ["G315"]
