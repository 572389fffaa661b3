"""With which settings, and which version, an engine started: read from the lines it logs at start-up, never
executed (the logged arguments are split with `tokenize` and read piece by piece with `ast.literal_eval`).

What the releases log (their source, read release by release):

| engine | releases | version line | arguments line |
| --- | --- | --- | --- |
| vLLM | 0.8.0-0.8.5.post1 | `vLLM API server version X` | `args: Namespace(...)` (every argument) |
| vLLM | 0.9.0-0.14.1 | `vLLM API server version X` | `non-default args: {...}` |
| vLLM | 0.15.0-0.34.0 | banner `█ ▀▄▀ █  version X`; `vLLM server version X, serving model M` (1) | as 0.9.0 |
| SGLang | 0.4.0-0.5.18 | none | `server_args=ServerArgs(...)` (every argument) |
| SGLang | 0.5.19-0.5.23 | none | `server_args={...}` (every argument, resolved) |
| llama.cpp | 0.3.0-0.3.17 | `build: N (commit) with ...` (`_llama_logs`; later at trace level only) | none |

(1) when the logo is off (`VLLM_DISABLE_LOG_LOGO=1`) or the user configured logging. The banner is one message of
several lines, each with the log prefix, ended by CR LF.

vLLM prefixes its lines `INFO MM-DD HH:MM:SS [file.py:N] ` (from 0.10.1 the API server's also `(APIServer pid=N) `,
coloured on a terminal); SGLang `[YYYY-MM-DD HH:MM:SS] `. Neither prefix is relied on: the markers are found anywhere
in a line, after ANSI colour codes are removed."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from ._llama_logs import looks_like_llama_log, parse_llama_log
from ._read import DeploymentError, _read_text
from ._settings import UNKNOWN, Settings, flag_key

#: The longest line whose logged arguments are read (they are tokenized whole).
MAX_LINE = 1 << 20

#: (marker, engine, separator, closer): the marker ends with the opening bracket of what is read.
_ARGS = [
    ("non-default args: {", "vllm", ":", "}"),
    ("args: Namespace(", "vllm", "=", ")"),
    ("server_args=ServerArgs(", "sglang", "=", ")"),
    ("server_args={", "sglang", ":", "}"),
]
_VERSIONS = ["vLLM API server version ", "vLLM gRPC server version ", "vLLM server version "]
_BANNER = "▀▄▀ █"  # the logo's row that carries `version X` (vLLM 0.15.0 on)
_BANNER_VERSION = "  version "
_MARKERS = [marker for marker, *_ in _ARGS] + _VERSIONS + [_BANNER]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_VERSION_WORD = re.compile(r"[0-9][0-9A-Za-z.+!_-]*")
_LOOKED_FOR = ("vLLM's `vLLM API server version X`, `vLLM server version X` or its banner, and its `non-default "
               "args: {...}` or `args: Namespace(...)`; SGLang's `server_args=ServerArgs(...)` or `server_args={...}`; "
               "llama.cpp's `build: N (commit)` or `version: N (commit)`")


@dataclass
class _StartUp:
    engine: str
    version: str | None = None
    version_line: int | None = None
    args: tuple[int, str, str, str] | None = None  # line, marker, separator, the text inside the brackets


def looks_like_log(text: str) -> bool:
    """Whether the text has a start-up arguments line or a version line of an engine (a cheap sniff)."""
    if any(marker in text for marker, *_ in _ARGS) or any(marker in text for marker in _VERSIONS):
        return True
    return _BANNER in text and _BANNER_VERSION in text or looks_like_llama_log(text)


def parse_log(path: str | Path) -> Settings:
    """The settings and version an engine logged at its last start-up in the file."""
    return parse_log_text(_read_text(Path(path)), str(path))


def parse_log_text(text: str, name: str) -> Settings:
    """The settings and version an engine logged at its last start-up in `text` (origins are `name:LINE`).

    vLLM 0.9.0 on logs only its non-default arguments (the others have their defaults); vLLM 0.8.x and SGLang log
    every argument. A value that is not a Python literal (an object's repr) is UNKNOWN. A log with a version line
    but no arguments gives the version and no flags, with a note. llama.cpp's logs give its build (`_llama_logs`),
    when the last start-up in the file is its."""
    last: _StartUp | None = None
    last_line = 0
    for number, line in _lines(text):
        version = _version(line)
        if version is not None:
            last, last_line = _StartUp("vllm", version, number), number
            continue
        found = _args(line, number, name)
        if found is not None:
            engine, args = found
            if last is None or last.engine != engine or last.args is not None:
                last = _StartUp(engine)
            last.args, last_line = args, number
    llama = parse_llama_log(text, name)
    if llama is not None and llama[0] > last_line:
        return llama[1]
    if last is None:
        raise DeploymentError(f"{name}: no start-up arguments or version found (looked for {_LOOKED_FOR})")
    if last.args is None:
        settings = Settings(last.engine, f"{name}:{last.version_line}", version=last.version)
        settings.logged = True  # a setting left alone may be logged as None
        settings.notes.append(f"{name}:{last.version_line}: vLLM {last.version} started, but its start-up "
                              "arguments were not found after it (`non-default args: {...}` or `args: "
                              "Namespace(...)`); only the version is read")
        return settings
    number, _, separator, inner = last.args
    where = f"{name}:{number}"
    settings = Settings(last.engine, where, version=last.version)
    settings.logged = True
    for key, value in _items(inner, separator, where):
        settings.flags[flag_key(str(key))] = value
    return settings


def _lines(text: str):
    """(number, line) of the lines that carry a marker, colour codes removed; numbered by newlines. A line that a
    carriage return overwrote (a progress bar) is read from the last part that carries a marker."""
    for number, raw in enumerate(text.split("\n"), 1):
        if not any(marker in raw for marker in _MARKERS):
            continue
        line = raw.rstrip("\r")
        if "\r" in line:
            line = next((part for part in reversed(line.split("\r")) if any(m in part for m in _MARKERS)), "")
        if "\x1b" in line:
            line = _ANSI.sub("", line)
        yield number, line


def _version(line: str) -> str | None:
    """The vLLM version a start-up line states, if it is one."""
    for marker in _VERSIONS:
        at = line.find(marker)
        if at >= 0:
            return _first_version(line[at + len(marker):])
    banner = line.find(_BANNER)
    if banner >= 0:
        at = line.find(_BANNER_VERSION, banner)
        if at >= 0:
            return _first_version(line[at + len(_BANNER_VERSION):])
    return None


def _first_version(rest: str) -> str | None:
    words = rest.split(None, 1)
    word = words[0].rstrip(",") if words else ""
    return word if _VERSION_WORD.fullmatch(word) else None


def _args(line: str, number: int, name: str):
    """(engine, (line, marker, separator, inner)) of a start-up arguments line, if it is one."""
    for marker, engine, separator, closer in _ARGS:
        at = line.find(marker)
        if at < 0:
            continue
        if len(line) > MAX_LINE:
            raise DeploymentError(f"{name}:{number}: the logged arguments line has {len(line)} characters, more "
                                  f"than the {MAX_LINE >> 20} MiB a line may have; not read")
        body = line[at + len(marker):].rstrip()
        if not body.endswith(closer):
            raise DeploymentError(f"{name}:{number}: cannot read the logged arguments: the line does not end "
                                  f"with {closer!r} (cut short?)")
        return engine, (number, marker, separator, body[:-1])
    return None


def _items(inner: str, separator: str, where: str):
    """(key, value) of `'k': v, ...` (separator ':') or `k=v, ...` (separator '='), split at the top level; a value
    that is not a Python literal is UNKNOWN. Keys of a dict are literals; of a call, names (argparse writes a name
    that is not one as `**{'name': v}`)."""
    try:
        commas = [token for token in _top_level(inner) if token.string == ","]
    except (tokenize.TokenError, SyntaxError, IndentationError) as exc:
        raise DeploymentError(f"{where}: cannot read the logged arguments: {exc}") from None
    pieces, start = [], 0
    for token in commas:
        pieces.append(inner[start:token.start[1]])
        start = token.end[1]
    pieces.append(inner[start:])
    for piece in pieces:
        piece = piece.strip()
        if not piece:
            continue
        if separator == "=" and piece.startswith("**"):
            try:
                extra = ast.literal_eval(piece[2:].strip())
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                continue
            if isinstance(extra, dict):
                yield from ((key, value) for key, value in extra.items() if isinstance(key, str))
            continue
        key, value = _split_once(piece, separator)
        if key is None:
            continue
        try:
            key = ast.literal_eval(key) if separator == ":" else key.strip()
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            parsed = UNKNOWN
        yield key, parsed


def _top_level(text: str):
    """The operator tokens of one line of Python-like text that are outside every bracket (brackets excluded)."""
    depth = 0
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type != tokenize.OP:
            continue
        if token.string in "([{":
            depth += 1
        elif token.string in ")]}":
            depth -= 1
            if depth < 0:
                raise SyntaxError(f"unmatched {token.string!r} at character {token.start[1] + 1}")
        elif depth == 0:
            yield token


def _split_once(piece: str, separator: str):
    """Split `key<sep>value` at the first top-level separator (not inside a string or brackets)."""
    try:
        for token in _top_level(piece):
            if token.string == separator:
                return piece[:token.start[1]], piece[token.end[1]:]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None, None
    return None, None
