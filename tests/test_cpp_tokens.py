"""The C and C++ tokenizer (verifier/code/_cpp_tokens.py, #30): what is one token, what is dropped, offsets, and
that it never fails."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier.code._cpp_tokens import tokenize
from verifier.code._tokens import ELLIPSIS_META, META, NAME, NUMBER, OP, STRING


def texts(source: str, **kw) -> list[str]:
    return [t.text for t in tokenize(source, **kw)]


def test_layout_and_comments_are_not_tokens():
    one = "int32_t n_ctx = 4096; // the context\n/* a block\n   comment */ bool fa = false;"
    other = "int32_t   n_ctx=4096;\n\n  bool /* inline */ fa\n  = false ;"
    assert texts(one) == texts(other) == ["int32_t", "n_ctx", "=", "4096", ";", "bool", "fa", "=", "false", ";"]
    assert texts("a = 1; \\\n b = 2;") == ["a", "=", "1", ";", "b", "=", "2", ";"]
    assert texts("x = 1; // comment \\\n still comment\ny") == ["x", "=", "1", ";", "y"]  # a continued // comment


@pytest.mark.parametrize("literal", [
    '"size of the prompt context (default: %d, 0 = loaded from model)"', r'"a \"quoted\" word"', "u8\"x\"",
    "L\"wide\"", "'c'", r"'\n'", "'\\''", 'R"(raw "quotes" and \\ backslashes)"', 'R"json({"a": ")"})json"',
    'u8R"x(\nline one\nline two\n)x"'])
def test_a_string_or_character_literal_is_one_token(literal):
    tokens = tokenize(f"f({literal}, 1);")
    assert [t.kind for t in tokens] == [NAME, OP, STRING, OP, NUMBER, OP, OP]
    assert tokens[2].text == literal


@pytest.mark.parametrize("number", ["4096", "0.0f", "1e-5f", "0x1F", "0b1010", "1'000'000", "4096u", "10ULL", ".5",
                                    "0x1.8p3", "42_km"])
def test_a_number_is_one_token_with_its_separators_and_suffix(number):
    assert [(t.kind, t.text) for t in tokenize(f"x = {number};")][2] == (NUMBER, number)


def test_operators_and_template_brackets():
    assert texts("a->b; c::d; e <=> f; g <<= 1; h->*i;") == [
        "a", "->", "b", ";", "c", "::", "d", ";", "e", "<=>", "f", ";", "g", "<<=", "1", ";", "h", "->*", "i", ";"]
    assert texts("std::vector<std::vector<int>> v;") == texts("std::vector<std::vector<int> > v;")
    assert texts("#include <vector>") == ["#", "include", "<", "vector", ">"]


def test_metavariables_only_in_fragments():
    assert [(t.kind, t.text) for t in tokenize("params.n_ctx = $V; $$$", fragment=True)][-3:] == [
        (META, "$V"), (OP, ";"), (ELLIPSIS_META, "$$$")]
    assert "$V" not in texts("params.n_ctx = $V;")


def test_offsets_point_at_the_source():
    source = 'int a = 1; /* x */ const char * s = "hi";'
    for token in tokenize(source):
        assert source[token.start:token.end] == token.text
    assert [t.text for t in tokenize(source, start=11)] == ["const", "char", "*", "s", "=", '"hi"', ";"]


@pytest.mark.parametrize("broken", ['"unterminated', "/* unterminated", 'R"x(no end', "'", "\\", "0x", "@ ` $"])
def test_what_does_not_end_never_fails(broken):
    tokens = tokenize(f"a {broken}")
    assert tokens[0].text == "a" and all(t.start < t.end for t in tokens)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1'\"\\/*R(){}<>=;:\n u8xL$")), max_size=60))
def test_any_text_tokenizes_into_ordered_tokens_of_its_own_characters(text):
    tokens = tokenize(text)
    previous = 0
    for token in tokens:
        assert previous <= token.start < token.end <= len(text)
        assert text[token.start:token.end] == token.text
        previous = token.end
