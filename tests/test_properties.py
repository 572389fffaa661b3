"""Property tests: random front matter and random fragments never make the loader or matcher raise."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verifier import kb as kb_module
from verifier import lint
from verifier.code import SourceFile
from verifier.entries import parse_entry
from verifier.evaluate import evaluate_source
from verifier.matchers import NAMES as MATCHERS
from verifier.model import Check

from .conftest import REPO, VALID_ENTRY

KB = kb_module.load(REPO)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

yaml_scalars = st.one_of(st.text(max_size=30), st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
yaml_values = st.recursive(yaml_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(string.ascii_lowercase + "-_", max_size=10), inner, max_size=4)),
    max_leaves=12)
keys = st.sampled_from(["id", "title", "scheme", "concepts", "engines", "references", "history", "withdrawn",
                        "checks", "claim", "path", "in", "after", "adjacent", *MATCHERS, "other"])


def dump(value, indent=0) -> str:
    """A small YAML writer that may also produce odd but legal YAML."""
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "\n" + "\n".join(f"{pad}{k!r}: {dump(v, indent + 2)}" for k, v in value.items())
    if isinstance(value, list):
        if not value:
            return "[]"
        return "\n" + "\n".join(f"{pad}- {dump(v, indent + 2).lstrip()}" for v in value)
    return repr(value) if not isinstance(value, str) else '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


@SETTINGS
@given(st.dictionaries(keys, yaml_values, max_size=9), st.text(max_size=200))
def test_random_front_matter_never_raises(front, body):
    text = "---" + dump(front) + "\n---\n" + body
    loaded = parse_entry(text.encode("utf-8", "surrogatepass"), "gotchas/x.md", "x")
    diagnostics = lint.lint(loaded, KB)
    assert all(d.line >= 1 and d.code in lint.RULES for d in diagnostics)


@SETTINGS
@given(st.binary(max_size=400))
def test_random_bytes_never_raise(data):
    loaded = parse_entry(data, "gotchas/x.md", "x")
    diagnostics = lint.lint(loaded, KB)
    assert all(d.code in lint.RULES for d in diagnostics)


@SETTINGS
@given(st.integers(min_value=0, max_value=len(VALID_ENTRY) - 1), st.text(max_size=20))
def test_mutated_valid_entry_never_raises(position, insert):
    text = VALID_ENTRY[:position] + insert + VALID_ENTRY[position:]
    loaded = parse_entry(text.encode("utf-8", "surrogatepass"), "gotchas/ops-example.md", "ops-example")
    assert all(d.code in lint.RULES for d in lint.lint(loaded, KB))


SOURCE = SourceFile("pkg/mod.py", b"""
class Scheduler:
    @property
    def schedule(self):
        victim = max(self.running, key=lambda r: (r.priority, r.arrival_time),)
        request.num_computed_tokens = 0  # reset
        return f"Preemptions: {n}" "more"
""")
fragment_alphabet = st.sampled_from(list("$ ()[]{}.,:=+-*'\"#\\\n") + ["$$$", "$X", "self", "running", "pop", "r", "0"])
fragments = st.lists(fragment_alphabet, min_size=0, max_size=15).map("".join)


@SETTINGS
@given(st.sampled_from(MATCHERS), fragments, st.one_of(st.none(), st.sampled_from(["Scheduler", "Scheduler.schedule", "X.y", "."])),
       st.one_of(st.none(), fragments), st.booleans())
def test_random_checks_never_raise(matcher, pattern, scope, after, adjacent):
    check = Check("c", "", "vllm", SOURCE.path, matcher, pattern, scope=scope,
                  after=after if matcher == "contains" else None, adjacent=adjacent and matcher == "contains")
    verdict = evaluate_source(check, SOURCE)
    assert verdict.status in ("holds", "changed", "missing", "error")
    if verdict.status == "changed":
        assert verdict.reason in ("not-found", "out-of-order", "not-adjacent", "present")
    if verdict.status == "missing":  # only a scope can be missing here: the file is given
        assert verdict.reason == "symbol-missing" and (scope is not None or matcher == "defines")


@SETTINGS
@given(st.binary(max_size=300), fragments)
def test_random_sources_never_raise(data, pattern):
    source = SourceFile("pkg/random.py", data)
    for matcher in ("contains", "absent", "string"):
        verdict = evaluate_source(Check("c", "", "vllm", source.path, matcher, pattern or "x"), source)
        assert verdict.status in ("holds", "changed", "error")  # no scope: never missing
