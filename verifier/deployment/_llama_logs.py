"""Which llama.cpp build a start-up log (or a `--version` paste, or a response) states: read line by line, never
executed.

What llama.cpp prints (its source, read release by release; `[V]` is the llama-cpp-python release that vendors it):

| where | releases | text |
| --- | --- | --- |
| start-up, INFO | [0.3.0]-[0.3.17] (common/common.cpp `common_init`) | `build: 4763 (f777a73e) with <compiler> for <target>` |
| start-up, TRACE only (`-lv 4`) | [0.3.24], [0.3.36] | `common_params_print_info: build 11312 (0c1e57098) with ...` |
| examples, older servers | | `main: build = 4291 (ce8784bd)` |
| JSON logs | before 0.3.0 | `build info | ... build=3579 commit="fc4ca27b"` |
| `--version` | [0.3.0]-[0.3.24] | `version: 4763 (f777a73e)` |
| `--version` | later builds | `version: 0.3.0-dev (build 10621, commit c1d0e7a00)` |
| responses, `/props` | | `"system_fingerprint": "b4763-f777a73e"`, `"build_info": "b4763-f777a73e"` |
| llama-bench | | `build: f777a73e (4763)` |

A build made without git prints build 0 and commit `unknown`; one from a shallow clone counts 1 (the
llama-cpp-python sdists' own copy does): the commit still names the code, the number says nothing. A recent
server's default log has no build line at all; audit then says so.

The settings the server resolved (`llama_context: n_ctx = 8192`, `n_seq_max = 4`) are logged, the flags given are
not: they are shown in a note and decide no condition (`-c 0` logs the model's context, `-np -1` the slots chosen).
"""  # noqa: E501 - a row of the table above cannot be wrapped

from __future__ import annotations

import re

from ._settings import Settings

ENGINE = "llama-cpp"
_SHA = r"(?P<c>[0-9a-f]{7,40}|unknown)"


class _JsonBuild:
    r"""`build info ... build=N commit="SHA"` on one line (the JSON logs), found as `re.search` of
    `\bbuild info\b.*?\bbuild=N commit="SHA"` finds it, in linear time: that pattern rescans the rest of the
    line from every `build info`, so a serve log's line of thousands of them took seconds, a longer one hours."""

    _HEAD = re.compile(r"\bbuild info\b")
    _TAIL = re.compile(r"\bbuild=(?P<n>\d+) commit=\"" + _SHA + "\"")

    def search(self, text: str) -> re.Match | None:
        """The first `build=N commit=...` after the first `build info` of its line (the pattern's own match
        would hold the same groups)."""
        line_end, head = -1, None
        for tail in self._TAIL.finditer(text):
            if tail.start() > line_end:  # a line not looked at yet: its first `build info`, once
                line_start = text.rfind("\n", 0, tail.start()) + 1
                line_end = text.find("\n", tail.start())
                line_end = len(text) if line_end < 0 else line_end
                head = self._HEAD.search(text, line_start, line_end)
            if head is not None and head.end() <= tail.start():
                return tail
        return None


#: The lines that state the build: (pattern, what it is). The number is `n`, the commit `c`.
BUILD_LINES: list[tuple[re.Pattern[str] | _JsonBuild, str]] = [
    (re.compile(r"\bbuild: (?P<n>\d+) \(" + _SHA + r"\) with "), "start-up"),
    (re.compile(r"\bbuild (?P<n>\d+) \(" + _SHA + r"\) with "), "start-up (trace)"),
    (re.compile(r"\bbuild = (?P<n>\d+) \(" + _SHA + r"\)"), "start-up"),
    (_JsonBuild(), "start-up (JSON)"),
    (re.compile(r"\bversion: (?P<n>\d+) \(" + _SHA + r"\)"), "--version"),
    (re.compile(r"\bversion: \S+ \(build (?P<n>\d+), commit " + _SHA + r"\)"), "--version"),
    (re.compile(r"\"(?:system_fingerprint|build_info)\"\s*:\s*\"b(?P<n>\d+)-" + _SHA + "\""), "build_info"),
    (re.compile(r"\bbuild: (?P<c>[0-9a-f]{7,40}) \((?P<n>\d+)\)"), "llama-bench"),
]
#: Where a line shaped like llama.cpp's build line starts (`_buildish`).
_BUILD_START = re.compile(r"\bbuild(?::| =| \d)")


def _buildish(text: str) -> bool:
    r"""Whether a line of `text` is shaped like llama.cpp's build line, `build: ... with ... for ...`, though none
    of the patterns reads it (cut short, edited): `re.search` of `\bbuild(?::| =| \d)[^\n]* with [^\n]* for `,
    in linear time (that pattern tried every split of the rest of the line from every start: a long line of
    `build: 1 with ` took minutes). The first start of a line has the most of the line after it, so when it
    fails the line does."""
    at = 0
    while (start := _BUILD_START.search(text, at)) is not None:
        end = text.find("\n", start.end())
        end = len(text) if end < 0 else end
        with_ = text.find(" with ", start.end(), end)
        if with_ >= 0 and text.find(" for ", with_ + len(" with "), end) >= 0:
            return True
        at = end + 1
    return False


#: Lines every llama.cpp start-up logs, with or without a build line.
_STARTUP = re.compile(r"\bllama_model_loader: |\bllama_(?:new_)?context(?:_with_model)?: |"
                      r"\bserver is listening on |\bmain: loading model\b")
_RESOLVED = {"n_ctx": re.compile(r"\bllama_(?:new_)?context(?:_with_model)?: n_ctx\s*= (\d+)"),
             "n_seq_max": re.compile(r"\bllama_(?:new_)?context(?:_with_model)?: n_seq_max\s*= (\d+)")}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def looks_like_llama_log(text: str) -> bool:
    """Whether the text has a llama.cpp build line or start-up lines (a cheap sniff)."""
    return any(pattern.search(text) for pattern, _ in BUILD_LINES) or _buildish(text) \
        or bool(_STARTUP.search(text))


def build_of(line: str) -> tuple[int, str | None] | None:
    """(build number, commit or None for `unknown`) a line states, or None."""
    for pattern, _ in BUILD_LINES:
        match = pattern.search(line)
        if match:
            commit = match.group("c")
            return int(match.group("n")), None if commit == "unknown" else commit
    return None


def parse_llama_log(text: str, name: str) -> tuple[int, Settings] | None:
    """(line, settings) of the last llama.cpp start-up in the text: its build as the version (`b4763`) and commit,
    no flags (they are not logged), notes on what it could not read; None when the text has no llama.cpp line."""
    last: tuple[int, Settings] | None = None
    resolved: dict[str, str] = {}
    for number, raw in enumerate(text.split("\n"), 1):
        if not any(word in raw for word in ("build", "version", "llama", "server", "fingerprint")):
            continue
        line = _ANSI.sub("", raw.rstrip("\r"))
        found = build_of(line)
        if found is not None:
            build, commit = found
            settings = Settings(ENGINE, f"{name}:{number}", version=f"b{build}", commit=commit, logged=True,
                                has_flags=False)
            last, resolved = (number, settings), {}
            continue
        if _buildish(line):
            settings = Settings(ENGINE, f"{name}:{number}", logged=True, has_flags=False)
            settings.notes.append(f"{name}:{number}: a llama.cpp build line that cannot be read ({line.strip()[:120]!r}"
                                  "); the build is not known")
            last, resolved = (number, settings), {}
            continue
        for key, pattern in _RESOLVED.items():
            match = pattern.search(line)
            if match:
                resolved[key] = match.group(1)
        if last is None and _STARTUP.search(line):
            settings = Settings(ENGINE, f"{name}:{number}", logged=True, has_flags=False)
            settings.notes.append(f"{name}:{number}: a llama.cpp start-up log with no build line (llama-server "
                                  "0.3.24 on logs it only at trace level, -lv 4); give the build with --engine "
                                  "llama-cpp==bNNNN")
            last = (number, settings)
    if last is not None and resolved:
        shown = ", ".join(f"{k} = {v}" for k, v in resolved.items())
        last[1].notes.append(f"{last[1].origin}: the log shows what llama.cpp resolved ({shown}), not the flags "
                             "given: no condition is decided by it")
    return last
