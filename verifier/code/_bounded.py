"""Regular expressions and tree-sitter queries from untrusted entries, bounded in time and size.

A bound is checked before the work it bounds: a regular expression's length and
expanded size before `regex` compiles it (compiling unrolls counted repeats: a
few characters can ask for gigabytes), a query's length, patterns and captures
before tree-sitter compiles it. What cannot be bounded in the process itself is
run in another: tree-sitter's query engine cannot be interrupted from Python
(it collects every match of a query before it returns, and a short query can
take minutes on one large file), so queries run in a child process that the
kernel stops past a CPU time and a memory limit.

`InvalidPattern` says the entry's own pattern is at fault (a verdict that may be
kept: the same pattern fails the same way on the same file); `Unavailable` says
the machinery failed (the child could not start, or was not answered in time on
a busy machine), and is never kept.
"""

from __future__ import annotations

import functools
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import regex
import tree_sitter

from . import _limits
from ._python import LANGUAGE

#: Seconds one regular expression may run over one scope.
REGEX_TIMEOUT = 1.0
#: Characters a regular expression may have (the KB's longest has about 200).
REGEX_MAX_LENGTH = 2_000
#: How large a regular expression may be once its counted repeats are unrolled: `regex` compiles
#: `x{n}` as n copies of x, nested repeats multiply (`(?:a{1000}){1000}` is a million nodes: 270 MB and
#: seconds, before any search). Each node of the parsed pattern counts as many times as the minimum counts
#: of the repeats around it multiply; at this bound a compiled pattern takes at most about 0.75 MiB and
#: 5 ms (the KB's largest ever counted under 200).
REGEX_MAX_EXPANSION = 5_000
#: Compiled regular expressions kept: more than a KB has (a cycle over more would miss every time), and at
#: most about 380 MiB were all of them as large as REGEX_MAX_EXPANSION lets them be.
REGEX_CACHE = 512

#: In-progress matches a query may hold at once.
QUERY_MATCH_LIMIT = 256
#: Characters, patterns and captures a tree-sitter query may have.
QUERY_MAX_LENGTH = 4_000
QUERY_MAX_PATTERNS = 16
QUERY_MAX_CAPTURES = 32
#: CPU seconds a query may run over one file (all its scopes), in its own process.
QUERY_SECONDS = 2.0
#: Memory (address space) that process may take for the query, beyond what it took to parse the file.
QUERY_MEMORY = 512 * 1024 * 1024
#: Seconds of wall-clock time the run waits for that process at most: past this the machine, not the query,
#: is too slow (`Unavailable`).
QUERY_WAIT = 120.0

_HERE = Path(__file__).resolve().parent
# py-tree-sitter evaluates these predicates with Python's unbounded `re`.
_REGEX_PREDICATE = re.compile(r"#(?:any-)?(?:not-)?match\?")
_FLAGS = regex.MULTILINE | regex.VERSION0


class InvalidPattern(ValueError):
    """A regex or query that cannot be compiled or run within its bounds; the message says why."""


class Unavailable(Exception):
    """The machinery could not run a pattern (not the pattern's fault): never kept as a verdict."""


# --- regular expressions --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=REGEX_CACHE)
def compile_regex(pattern: str) -> regex.Pattern:
    if len(pattern) > REGEX_MAX_LENGTH:
        raise InvalidPattern(f"regular expression of {len(pattern)} characters; at most {REGEX_MAX_LENGTH}")
    try:
        size = regex_expansion(pattern, REGEX_MAX_EXPANSION)
        if size > REGEX_MAX_EXPANSION:
            raise InvalidPattern(f"regular expression too large once its counted repeats are unrolled (over "
                                 f"{REGEX_MAX_EXPANSION:,} nodes: nested {{n}} multiply); use fewer or smaller counts")
        # not kept in `regex`'s own cache too: REGEX_CACHE bounds what is kept
        return regex.compile(pattern, _FLAGS, cache_pattern=False)
    except (regex.error, OverflowError, RecursionError, ValueError) as exc:
        if isinstance(exc, InvalidPattern):
            raise
        raise InvalidPattern(f"regular expression does not compile: {exc}") from None


def regex_expansion(pattern: str, limit: int) -> int:
    """How many nodes `regex` compiles `pattern` to once its counted repeats are unrolled, counted up to a
    little past `limit` (the count stops there). Raises what parsing raises (`regex.error` and the like).

    The pattern is parsed by `regex`'s own parser, the one `regex.compile` runs before it compiles (a
    scanner of our own would have to agree with it on escapes, sets, comments and verbose mode, where
    `{ 1 0 0 0 }` is a count); parsing is linear in the pattern and bounded by REGEX_MAX_LENGTH.
    """
    from regex import _regex_core

    # `regex`'s parser internals, which types-regex does not declare: typed Any. Whether they are there is checked
    # at run time (the AttributeError below).
    core: Any = _regex_core
    try:
        flags = _FLAGS
        while True:  # as regex.compile does: an inline flag set for the whole pattern means parsing again
            source = core.Source(pattern)
            info = core.Info(flags, source.char_type, {})
            info.guess_encoding = core.UNICODE
            source.ignore_space = bool(info.flags & regex.VERBOSE)
            try:
                parsed = core._parse_pattern(source, info)
                break
            except core._UnscopedFlagSet:
                flags = info.global_flags
        node_class, repeat_class = core.RegexBase, core.GreedyRepeat  # lazy and possessive repeats derive from it
    except AttributeError as exc:  # another `regex` than the one this was written for: refuse, never run unbounded
        raise InvalidPattern(f"cannot bound regular expressions with this version of `regex` ({exc})") from None
    total = 0
    stack = [(parsed, 1)]
    while stack:  # each node, times the minimum counts of the repeats around it
        node, times = stack.pop()
        total += times
        if total > limit:
            break
        if isinstance(node, repeat_class):
            times *= max(node.min_count, 1)
        for value in vars(node).values():
            if isinstance(value, node_class):
                stack.append((value, times))
            elif isinstance(value, (list, tuple)):
                stack.extend((item, times) for item in value if isinstance(item, node_class))
    return total


def search_regex(pattern: str, text: str, start: int, end: int, timeout: float = REGEX_TIMEOUT):
    """The first match in text[start:end], or None; InvalidPattern when it runs too long."""
    compiled = compile_regex(pattern)
    try:
        return compiled.search(text, start, end, timeout=timeout)
    except TimeoutError:
        raise InvalidPattern(f"regular expression ran longer than {timeout:g} s (catastrophic backtracking?)") from None


# --- tree-sitter queries --------------------------------------------------------------------------------------

#: The grammars a query may be written in, by the language of the file it reads (`model.language_of`).
GRAMMARS = ("python", "cpp")


def _language(grammar: str) -> tree_sitter.Language:
    if grammar == "cpp":
        from ._cpp import LANGUAGE as CPP

        return CPP
    return LANGUAGE


@functools.lru_cache(maxsize=512)
def compile_query(source: str, grammar: str = "python") -> tree_sitter.Query:
    """The query compiled with the grammar of the files it reads (`GRAMMARS`); InvalidPattern past the bounds."""
    if grammar not in GRAMMARS:
        raise ValueError(f"no tree-sitter grammar {grammar!r}")
    if len(source) > QUERY_MAX_LENGTH:
        raise InvalidPattern(f"query of {len(source)} characters; at most {QUERY_MAX_LENGTH}")
    if _REGEX_PREDICATE.search(source):
        raise InvalidPattern("regex predicates (#match? and its kin) are not supported in queries; use `matches:`")
    try:
        query = tree_sitter.Query(_language(grammar), source)
    except (tree_sitter.QueryError, ValueError, RuntimeError) as exc:
        raise InvalidPattern(f"query does not compile: {exc}") from None
    if query.pattern_count > QUERY_MAX_PATTERNS:
        raise InvalidPattern(f"query of {query.pattern_count} patterns; at most {QUERY_MAX_PATTERNS}")
    if query.capture_count > QUERY_MAX_CAPTURES:
        raise InvalidPattern(f"query of {query.capture_count} captures; at most {QUERY_MAX_CAPTURES}")
    return query


def query_first(source: str, data: bytes, ranges: list[tuple[int, int]], grammar: str = "python"
                ) -> tuple[int, int, int] | None:
    """The first match of the query lying wholly within one of the byte ranges of `data` (source in `grammar`,
    one of `GRAMMARS`, parsed as it is): (index of that range, start byte, end byte), trying the ranges in order;
    None when none has one.

    The query is checked here (`compile_query`), then run in a child process: past QUERY_SECONDS of CPU, or
    QUERY_MEMORY of memory more than the file's tree took, InvalidPattern; Unavailable when the child could
    not parse the file or run at all.
    """
    compile_query(source, grammar)
    if not ranges:
        return None
    _limits.check(data)  # as every parse in this package: a nest or token count past its bound is not parsed
    header = json.dumps({"query": source, "grammar": grammar, "ranges": ranges, "match_limit": QUERY_MATCH_LIMIT,
                         "seconds": QUERY_SECONDS, "memory": QUERY_MEMORY}).encode()
    try:
        # started in this package's folder: `-c` puts the working folder first on sys.path, and the run's (a KB
        # checkout, say) may hold anything
        done = subprocess.run([sys.executable, "-c", _QUERY_CHILD], input=header + b"\n" + data,
                              capture_output=True, timeout=QUERY_WAIT, check=False, cwd=_HERE)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"the query's process was not done after {QUERY_WAIT:g} s (a busy machine?)") from None
    except OSError as exc:
        raise Unavailable(f"the query's process could not start: {exc}") from None
    if done.returncode == 0:
        try:
            found = json.loads(done.stdout)["found"]
        except (ValueError, KeyError, TypeError):
            found = False
        if found is None:
            return None
        if isinstance(found, list) and len(found) == 3 and all(type(n) is int for n in found):
            return found[0], found[1], found[2]
    elif done.returncode == -signal.SIGPROF:
        raise InvalidPattern(f"query ran longer than {QUERY_SECONDS:g} s of CPU on this file")
    elif done.stderr.startswith(_RUNNING) and done.returncode != -signal.SIGKILL:
        # it failed while the query ran (not killed from outside): out of its memory, or tree-sitter crashed
        raise InvalidPattern(f"query failed on this file, likely past its {QUERY_MEMORY >> 20} MiB of memory "
                             f"({_ending(done)})")
    raise Unavailable(f"the query's process failed ({_ending(done)})")


def _ending(done: subprocess.CompletedProcess) -> str:
    if done.returncode < 0:
        try:
            return signal.Signals(-done.returncode).name
        except ValueError:
            return f"signal {-done.returncode}"
    last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
    return last[0][:200] if last else f"exit status {done.returncode}"


_RUNNING = b"running the query\n"
# The child: the file's tree first, then the query, limited to QUERY_MEMORY more memory than it has then (on
# Linux) and under a CPU timer whose signal ends the process (tree-sitter's C loop cannot be interrupted
# otherwise). It says on stderr when the query starts, and answers {"found": [range, start, end] or null}.
_QUERY_CHILD = """\
import json, resource, signal, sys
header = json.loads(sys.stdin.buffer.readline())
data = sys.stdin.buffer.read()
import tree_sitter
if header["grammar"] == "cpp":
    import tree_sitter_cpp as grammar
else:
    import tree_sitter_python as grammar
language = tree_sitter.Language(grammar.language())
root = tree_sitter.Parser(language).parse(data).root_node
query = tree_sitter.Query(language, header["query"])
try:
    with open("/proc/self/statm") as statm:
        used = int(statm.read().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + header["memory"], resource.RLIM_INFINITY))
except (OSError, ValueError):
    pass  # elsewhere than Linux: time is bounded, memory is not
sys.stderr.buffer.write(b"running the query\\n")
sys.stderr.flush()
signal.setitimer(signal.ITIMER_PROF, header["seconds"])
found = None
for index, (start, end) in enumerate(header["ranges"]):
    cursor = tree_sitter.QueryCursor(query, match_limit=header["match_limit"])
    cursor.set_byte_range(start, end)
    for _pattern, captures in cursor.matches(root):
        nodes = [n for group in captures.values() for n in (group if isinstance(group, list) else [group])]
        first = min((n.start_byte for n in nodes), default=start)
        last = max((n.end_byte for n in nodes), default=end)
        if first >= start and last <= end and (found is None or (first, last) < (found[1], found[2])):
            found = [index, first, last]
    if found is not None:
        break
signal.setitimer(signal.ITIMER_PROF, 0)
sys.stdout.write(json.dumps({"found": found}))
"""
