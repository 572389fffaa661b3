"""The matchers of FORMAT.md as tables of (fragment, source, expected verdict and reason)."""

from __future__ import annotations

import textwrap
import time

import pytest

from verifier.code import SourceFile
from verifier.evaluate import evaluate_source
from verifier.model import Check


def run(source: str, path: str = "pkg/mod.py", **check):
    check.setdefault("id", "c")
    check.setdefault("claim", "")
    check.setdefault("engine", "vllm")
    matcher = next(k for k in ("contains", "absent", "string", "matches", "defines", "query") if k in check)
    pattern = check.pop(matcher)
    scope = check.pop("in", None)
    return evaluate_source(Check(path=path, matcher=matcher, pattern=pattern, scope=scope, **check),
                           SourceFile(path, textwrap.dedent(source).encode()))


SCHEDULER = '''
class RequestStatus:
    RUNNING = 1
    PREEMPTED = 2


class Scheduler:
    def schedule(self):
        if self.policy == "priority":
            victim = max(
                self.running,
                key=lambda r: (r.priority, r.arrival_time),
            )
        else:
            victim = self.running.pop()
        self._preempt_request(victim)

    def _preempt_request(self, request):
        assert request.status == RequestStatus.RUNNING
        self._free_request_blocks(request)
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens = 0
        self.waiting.prepend_request(request)


class OtherScheduler:
    def _preempt_request(self, request):
        request.num_computed_tokens = 1
'''

# The same code, reformatted without changing its meaning: statements split over
# lines, extra spaces, trailing comments, a comment between the two statements.
SCHEDULER_REFORMATTED = '''
class RequestStatus:
    RUNNING = 1
    PREEMPTED = 2


class Scheduler:
    def schedule(self):
        if self.policy == "priority":
            victim = max(self.running, key=lambda r: (r.priority, r.arrival_time),)
        else:
            victim = self.running.pop(   )  # LIFO
        self._preempt_request(victim)

    def _preempt_request(self, request):
        assert request.status == RequestStatus.RUNNING
        self._free_request_blocks(
            request
        )
        request.status = \\
            RequestStatus.PREEMPTED   # evicted
        # every computed token is discarded
        request.num_computed_tokens \\
            = 0
        self.waiting.prepend_request(request)


class OtherScheduler:
    def _preempt_request(self, request):
        request.num_computed_tokens = 1
'''

ZERO = "request.num_computed_tokens = 0"
PREEMPTED = "request.status = RequestStatus.PREEMPTED"

CONTAINS_TABLE = [
    # (fragment, extra keys, expected status, expected reason)
    (ZERO, {}, "holds", None),
    (ZERO, {"in": "Scheduler._preempt_request"}, "holds", None),
    ("request.num_computed_tokens = 1", {"in": "Scheduler._preempt_request"}, "changed", "not-found"),
    (ZERO, {"in": "OtherScheduler._preempt_request"}, "changed", "not-found"),
    (ZERO, {"in": "Scheduler.missing"}, "missing", "symbol-missing"),
    ("self.running.pop()", {"in": "Scheduler.schedule"}, "holds", None),
    ("max(self.running, key=lambda r: (r.priority, r.arrival_time))", {"in": "Scheduler.schedule"},
     "holds", None),  # the original has a trailing comma: it does not matter (FORMAT.md, "Comparing code")
    ("max(self.running, key=lambda r: (r.priority, r.deadline))", {"in": "Scheduler.schedule"},
     "changed", "not-found"),
    ("max(self.running, key=lambda $R: ($R.priority, $R.arrival_time) $$$)", {"in": "Scheduler.schedule"},
     "holds", None),
    ("max(self.running, key=lambda $R: ($X.priority, $R.arrival_time) $$$)", {"in": "Scheduler.schedule"},
     "holds", None),  # different names may bind the same text
    ("max(self.running, key=lambda $R: ($R.priority, $R.priority) $$$)", {"in": "Scheduler.schedule"},
     "changed", "not-found"),  # $R bound to `r` cannot also be `arrival_time`... nor `.priority` twice
    ("$OBJ.status = RequestStatus.$STATE", {"in": "Scheduler._preempt_request"}, "holds", None),
    ("request.status = $V $V", {"in": "Scheduler._preempt_request"}, "changed", "not-found"),
    ("self._free_request_blocks($$$)", {}, "holds", None),
    (ZERO, {"after": PREEMPTED}, "holds", None),
    (ZERO, {"after": PREEMPTED, "adjacent": True}, "holds", None),
    (PREEMPTED, {"after": ZERO}, "changed", "out-of-order"),
    ("self.waiting.prepend_request(request)", {"after": PREEMPTED, "adjacent": True}, "changed", "not-adjacent"),
    ("self.waiting.prepend_request(request)", {"after": PREEMPTED}, "holds", None),
    (ZERO, {"after": "request.status = RequestStatus.WAITING"}, "changed", "not-found"),
    (ZERO, {"in": "Scheduler._preempt_request", "after": "self._free_request_blocks(request)", "adjacent": True},
     "changed", "not-adjacent"),
]


@pytest.mark.parametrize("source", [SCHEDULER, SCHEDULER_REFORMATTED], ids=["original", "reformatted"])
@pytest.mark.parametrize("fragment,extra,status,reason", CONTAINS_TABLE)
def test_contains(source, fragment, extra, status, reason):
    verdict = run(source, contains=fragment, **extra)
    assert (verdict.status, verdict.reason) == (status, reason), verdict


def test_holds_reports_lines_and_innermost_symbol():
    verdict = run(SCHEDULER_REFORMATTED, contains=ZERO, **{"in": "Scheduler"})
    assert verdict.status == "holds"
    assert verdict.symbol == "Scheduler._preempt_request"
    lines = SCHEDULER_REFORMATTED.split("\n")
    first, last = verdict.lines
    assert lines[first - 1].strip() == "request.num_computed_tokens \\"
    assert lines[last - 1].strip() == "= 0"
    assert last == first + 1


def test_changed_hints_the_closest_line():
    verdict = run(SCHEDULER, contains="request.num_computed_tokens = 2", **{"in": "Scheduler._preempt_request"})
    assert verdict.reason == "not-found"
    line = SCHEDULER.split("\n").index("        request.num_computed_tokens = 0") + 1
    assert f"mod.py:{line}:" in verdict.hint


def test_symbol_missing_hints_where_the_name_lives():
    verdict = run(SCHEDULER, contains=ZERO, **{"in": "Planner._preempt_request"})
    assert verdict.reason == "symbol-missing"
    line = SCHEDULER.split("\n").index("    def _preempt_request(self, request):") + 1
    assert f"Scheduler._preempt_request is defined at pkg/mod.py:{line}" in verdict.hint
    assert "OtherScheduler._preempt_request" in verdict.hint


def test_ellipsis_stays_inside_balanced_brackets():
    source = """
    x = len(a) + f(b)
    y = len(c.output_ids)
    """
    verdict = run(source, contains="len($$$.output_ids)")
    assert verdict.status == "holds" and verdict.lines == (3, 3)
    assert run("x = len(a) + g(b.output_ids)\n", contains="len($$$.output_ids)").reason == "not-found"


def test_strings_are_compared_by_value_and_comments_not_at_all():
    source = 'x = "a # not a comment"  # real comment\n'
    assert run(source, contains='x = "a # not a comment"').status == "holds"
    assert run(source, contains="x = 'a # not a comment'").status == "holds"  # quote style does not matter
    assert run(source, contains="x = 'a # not a Comment'").reason == "not-found"
    assert run(source, contains="real comment").reason == "not-found"


SCOPES = '''
import functools

X: int = 5
"""The X attribute docstring."""

if TYPE_CHECKING:
    from foo import Bar

try:
    import fast
    HAVE_FAST = True
except ImportError:
    HAVE_FAST = False


class Config:
    max_num_seqs: int = 128
    """Maximum number of sequences per iteration."""

    policy = "fcfs"

    @functools.cache
    @property
    def limit(self):
        return self.max_num_seqs * 2

    def outer(self):
        local_var = "not a symbol"

        def inner():
            return "deep inside"

        return inner

    class Nested:
        def method(self):
            return "nested class method"


class Other:
    def limit(self):
        return 3
'''

SCOPE_TABLE = [
    ("Config.max_num_seqs", "string", "Maximum number of sequences", "holds", None),
    ("Config.max_num_seqs", "contains", "128", "holds", None),
    ("Config.policy", "contains", "128", "changed", "not-found"),
    ("Config.limit", "contains", "@functools.cache", "holds", None),
    ("Config.limit", "contains", "self.max_num_seqs * 2", "holds", None),
    ("Other.limit", "contains", "self.max_num_seqs * 2", "changed", "not-found"),
    ("Config.outer.inner", "string", "deep inside", "holds", None),
    ("Config.outer.local_var", "string", "not a symbol", "missing", "symbol-missing"),
    ("Config.Nested.method", "string", "nested class method", "holds", None),
    ("X", "string", "attribute docstring", "holds", None),
    ("HAVE_FAST", "contains", "False", "holds", None),
    ("HAVE_FAST", "contains", "True", "holds", None),
    ("Bar", "contains", "Bar", "missing", "symbol-missing"),
]


@pytest.mark.parametrize("scope,matcher,pattern,status,reason", SCOPE_TABLE)
def test_scopes(scope, matcher, pattern, status, reason):
    verdict = run(SCOPES, **{"in": scope, matcher: pattern})
    assert (verdict.status, verdict.reason) == (status, reason), verdict


@pytest.mark.parametrize("symbol,status", [
    ("Config", "holds"), ("Config.limit", "holds"), ("Config.outer.inner", "holds"),
    ("Config.Nested.method", "holds"), ("X", "holds"), ("Config.max_num_seqs", "holds"),
    ("Config.missing", "missing"), ("inner", "missing"), ("Nested", "missing"),
])
def test_defines(symbol, status):
    verdict = run(SCOPES, defines=symbol)
    assert verdict.status == status
    if status == "missing":
        assert verdict.reason == "symbol-missing"


STRINGS = '''
class Schedule:
    retraction_policy: A[
        str,
        Arg(
            help=(
                "The policy. 'length' retracts short-output, "
                "long-input requests first.\\tTabbed "
                'and  spaced'
            ),
        ),
    ] = "length"
    log = f"Preemptions: {count} so far\\n"
    raw = r"C:\\path\\n"
    data = b"bytes \\x41"
'''

STRING_TABLE = [
    ("Schedule.retraction_policy", "retracts short-output, long-input requests first", "holds"),
    ("Schedule.retraction_policy", "first. Tabbed and spaced", "holds"),  # escapes resolved, whitespace folded
    ("Schedule.retraction_policy", "short-output,long-input", "changed"),
    ("Schedule.log", "Preemptions: {count} so far", "holds"),
    ("Schedule.raw", "C:\\path\\n", "holds"),  # raw: the backslashes stay
    ("Schedule.data", "bytes A", "holds"),
    ("Schedule.retraction_policy", "length' retracts", "holds"),
]


@pytest.mark.parametrize("scope,text,status", STRING_TABLE)
def test_string(scope, text, status):
    verdict = run(STRINGS, string=text, **{"in": scope})
    assert verdict.status == status, verdict


def test_string_ignores_comments():
    assert run("x = 1  # Preemptions: many\n", string="Preemptions").reason == "not-found"


ABSENT_TABLE = [
    ("request.num_computed_tokens = 0", "Scheduler._preempt_request", "changed", "present"),
    ("request.num_computed_tokens = 0", "OtherScheduler._preempt_request", "holds", None),
    ("request.num_computed_tokens = 0", "Planner.gone", "missing", "symbol-missing"),
    ("self.running.pop()", None, "changed", "present"),
    ("self.running.popleft()", None, "holds", None),
]


@pytest.mark.parametrize("fragment,scope,status,reason", ABSENT_TABLE)
def test_absent(fragment, scope, status, reason):
    verdict = run(SCHEDULER, absent=fragment, **({"in": scope} if scope else {}))
    assert (verdict.status, verdict.reason) == (status, reason)


MATCHES_TABLE = [
    (r"num_computed_tokens\s*=\s*0$", "Scheduler._preempt_request", "holds", None),
    (r"num_computed_tokens\s*=\s*1$", "Scheduler._preempt_request", "changed", "not-found"),
    (r"^class \w+Scheduler:", None, "holds", None),
    (r"(unclosed", None, "error", "invalid"),
]


@pytest.mark.parametrize("pattern,scope,status,reason", MATCHES_TABLE)
def test_matches(pattern, scope, status, reason):
    verdict = run(SCHEDULER, matches=pattern, **({"in": scope} if scope else {}))
    assert (verdict.status, verdict.reason) == (status, reason)


def test_catastrophic_regex_is_bounded():
    source = "x = '" + "a" * 5000 + "!'\n"
    started = time.monotonic()
    verdict = run(source, matches=r"(?:a|a?)+$|(a*)*b(a*)*c")
    assert time.monotonic() - started < 10
    assert (verdict.status, verdict.reason) == ("error", "invalid")
    assert "longer than" in verdict.message


QUERY_TABLE = [
    ('(assignment left: (attribute attribute: (identifier) @a (#eq? @a "num_computed_tokens")) right: (integer) @v)',
     "Scheduler._preempt_request", "holds", None),
    ('(call function: (attribute attribute: (identifier) @m (#eq? @m "popleft")))', None, "changed", "not-found"),
    ("((call) @c", None, "error", "invalid"),
    ("(no_such_node) @x", None, "error", "invalid"),
    ('((identifier) @x (#match? @x "^(a+)+$"))', None, "error", "invalid"),
]


@pytest.mark.parametrize("query,scope,status,reason", QUERY_TABLE)
def test_query(query, scope, status, reason):
    verdict = run(SCHEDULER, query=query, **({"in": scope} if scope else {}))
    assert (verdict.status, verdict.reason) == (status, reason), verdict


def test_query_is_confined_to_the_scope():
    query = '(assignment right: (integer) @v (#eq? @v "1"))'
    assert run(SCHEDULER, query=query, **{"in": "OtherScheduler"}).status == "holds"
    assert run(SCHEDULER, query=query, **{"in": "Scheduler"}).reason == "not-found"


def test_text_files_fold_whitespace():
    text = "FROM base\nRUN pip install \\\n    vllm==0.30.0\n"
    assert run(text, path="docker/Dockerfile", contains="pip install \\ vllm==0.30.0").status == "holds"
    assert run(text, path="docker/Dockerfile", contains="pip  install").status == "holds"
    assert run(text, path="docker/Dockerfile", contains="pip uninstall").reason == "not-found"
    assert run(text, path="docker/Dockerfile", absent="pip uninstall").status == "holds"
    assert run(text, path="docker/Dockerfile", matches=r"vllm==\d").status == "holds"


@pytest.mark.parametrize("extra", [{"in": "X"}, {"string": "x"}, {"defines": "X"}, {"query": "(x)"}])
def test_python_only_keys_on_a_text_file_are_invalid(extra):
    extra = dict(extra)
    if "in" in extra:
        extra["contains"] = "FROM"
    verdict = run("FROM base\n", path="Dockerfile", **extra)
    assert (verdict.status, verdict.reason) == ("error", "invalid")


def test_unparsable_scope_is_an_error_not_changed():
    broken = "class Scheduler:\n    def _preempt_request(self:\n        request.x = 1\n"
    verdict = run(broken, contains="request.num_computed_tokens = 0", **{"in": "Scheduler._preempt_request"})
    assert verdict.status == "error" and verdict.reason == "unparsable"


def test_syntax_error_elsewhere_does_not_hide_a_holds():
    source = "def ok():\n    return 1\n\ndef broken(:\n    pass\n"
    assert run(source, contains="return 1", **{"in": "ok"}).status == "holds"


def test_ambiguous_fragment_is_bounded():
    source = "x = (" + ", ".join(["a"] * 3000) + ")\n"
    started = time.monotonic()
    verdict = run(source, contains="$$$ a $$$ a $$$ a $$$ b")
    assert time.monotonic() - started < 20
    assert (verdict.status, verdict.reason) == ("error", "invalid")


def test_non_utf8_source_still_matches():
    data = "x = 'caf\xe9'\nrequest.num_computed_tokens = 0\n".encode("latin-1")
    from verifier.code import SourceFile as SF
    verdict = evaluate_source(Check("c", "", "vllm", "m.py", "contains", ZERO), SF("m.py", data))
    assert verdict.status == "holds" and verdict.lines == (2, 2)


def test_non_ascii_offsets_map_to_the_right_lines():
    source = 'NAME = "héllo wörld ✓"\n\nclass A:\n    def f(self):\n        return "ünïcode"\n'
    verdict = run(source, string="ünïcode", **{"in": "A.f"})
    assert verdict.status == "holds" and verdict.lines == (5, 5) and verdict.symbol == "A.f"


@pytest.mark.parametrize("query", ['((_) @a . (_) @b . (_) @c . (_) @d (#eq? @a "zzz"))', "(_ (_ (_ (_ (_) @e))))"])
def test_pathological_queries_on_a_large_file_stay_bounded(query):
    source = "def f():\n" + "    x = (a, b, c, d, e, f, g)\n" * 5000
    started = time.monotonic()
    verdict = run(source, query=query)
    assert time.monotonic() - started < 10
    assert verdict.status in ("holds", "changed")


def test_the_string_reported_is_the_first_in_source_order():
    source = "\n".join(f'X{i} = "the same text {i}"' for i in range(60)) + "\n"
    lines = {run(source, string="the same text").lines for _ in range(5)}
    assert lines == {(1, 1)}


# An import binds a name; it does not define it (FORMAT.md, "Verdicts"). The hint says where the name comes from.
IMPORTS = """\
from .model import ModelConfig
from .cache import CacheConfig as Cache
from vllm.config.load import LoadConfig
from . import utils

try:
    from .speculative import SpeculativeConfig
except ImportError:
    pass
"""


@pytest.mark.parametrize("path,symbol,origin", [
    ("vllm/config/__init__.py", "ModelConfig.max_logprobs", "vllm/config/model.py"),
    ("vllm/config/__init__.py", "Cache", "vllm/config/cache.py"),
    ("vllm/config/__init__.py", "LoadConfig", "vllm/config/load.py"),
    ("vllm/config/__init__.py", "utils.helper", "vllm/config/__init__.py"),  # from the package itself: no hint
    ("vllm/config/__init__.py", "SpeculativeConfig", "vllm/config/speculative.py"),  # inside try: still counted
    ("python/sglang/srt/configs/__init__.py", "LoadConfig", None),  # another project's module: no hint
])
def test_an_imported_name_is_missing_with_a_hint_to_its_module(path, symbol, origin):
    verdict = run(IMPORTS, path=path, defines=symbol) if "." not in symbol else run(IMPORTS, path=path, **{
        "in": symbol, "contains": "x"})
    assert (verdict.status, verdict.reason) == ("missing", "symbol-missing")
    if origin in (path, None):
        assert verdict.hint is None
    else:
        assert f"look in {origin}" in verdict.hint and f"as a form: {{path: {origin}}}" in verdict.hint


def test_a_name_that_is_not_imported_gets_no_import_hint():
    verdict = run(IMPORTS, path="vllm/config/__init__.py", defines="ParallelConfig")
    assert verdict.status == "missing" and verdict.hint is None


@pytest.mark.parametrize("path,module,level,expected", [
    ("vllm/config/__init__.py", "model", 1, "vllm/config/model.py"),
    ("vllm/a/b/c.py", "x.y", 2, "vllm/a/x/y.py"),
    ("vllm/a/b/c.py", "", 1, "vllm/a/b/__init__.py"),
    ("python/sglang/srt/managers/x.py", "sglang.srt.utils", 0, "python/sglang/srt/utils.py"),
    ("python/sglang/srt/managers/x.py", "torch.nn", 0, None),
])
def test_module_path_of_an_import(path, module, level, expected):
    from verifier.code._python import module_path

    assert module_path(path, module, level) == expected
