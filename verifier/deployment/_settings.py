"""With which settings a deployment runs: read from a serve command line or from the arguments an engine logs
at start-up, never executed (logs are parsed as Python literals only)."""

from __future__ import annotations

import ast
import io
import re
import shlex
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from ..model import BOOL_WORDS
from ._read import DeploymentError, _read_text

#: A value that was logged but is not a Python literal (an object's repr): the setting is set, to something
#: audit cannot compare.
UNKNOWN = object()


def flag_key(name: str) -> str:
    """A flag or an argument's name in one spelling: `--scheduling-policy`, `--scheduling_policy` and the logged
    `scheduling_policy` are one setting."""
    return name.lstrip("-").replace("-", "_").lower()


@dataclass
class Settings:
    """The settings of one engine's deployment: flags (by `flag_key`) and environment variables."""

    engine: str
    origin: str
    flags: dict[str, object] = field(default_factory=dict)  # value: text, a bool, None (a bare flag), UNKNOWN
    env: dict[str, str] = field(default_factory=dict)
    version: str | None = None  # the engine version the log states, when it does
    notes: list[str] = field(default_factory=list)


_PROGRAMS = {
    "vllm": [("vllm", "serve"), ("-m", "vllm.entrypoints.openai.api_server"), ("-m", "vllm.entrypoints.api_server")],
    "sglang": [("-m", "sglang.launch_server"), ("sglang", "serve"), ("-m", "sglang.launch_server_grpc")],
}
_NUMBER = re.compile(r"-\d+(\.\d*)?([eE][-+]?\d+)?")


def parse_serve(command: str, default_engine: str | None = None) -> Settings:
    """The settings of a serve command line (`VLLM_X=1 vllm serve MODEL --flag value --other=v --bool`).

    A flag followed by a word that is not a flag takes it as its value; a boolean condition then reads a word
    that is not true/false as the flag being set (`--enable-x MODEL`). `--no-x` is `x` false."""
    try:
        tokens = shlex.split(command)
    except ValueError as exc:
        raise DeploymentError(f"--serve: cannot split the command line: {exc}") from None
    env = {}
    while tokens and (tokens[0] == "env" or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tokens[0])):
        token = tokens.pop(0)
        if token != "env":
            name, _, value = token.partition("=")
            env[name] = value
    engine, start = None, 0
    for key, programs in _PROGRAMS.items():
        for first, second in programs:
            for i in range(len(tokens) - 1):
                if (Path(tokens[i]).name == first or tokens[i] == first) and tokens[i + 1] == second:
                    engine, start = key, i + 2
                    break
            if engine:
                break
        if engine:
            break
    if engine is None:
        if default_engine is None:
            raise DeploymentError(f"--serve: cannot tell the engine of {command!r}: expected `vllm serve ...`, "
                                  "`python -m vllm.entrypoints.openai.api_server ...` or `python -m "
                                  "sglang.launch_server ...`")
        engine = default_engine
    settings = Settings(engine, "--serve", env=env)
    args = tokens[start:]
    i = 0
    while i < len(args):
        token = args[i]
        if token.startswith("-") and not _NUMBER.fullmatch(token) and token not in ("-", "--"):
            name, eq, value = token.partition("=")
            if not eq:
                following = args[i + 1] if i + 1 < len(args) else None
                if following is not None and (not following.startswith("-") or _NUMBER.fullmatch(following)):
                    value, i = following, i + 1
                else:
                    value = None
            key = flag_key(name)
            settings.flags[key] = value
            if key.startswith("no_") and value is None:
                settings.flags.setdefault(key[3:], False)
            if key == "config":
                settings.notes.append(f"--serve: the settings in --config {value} are not read; give them as flags")
        elif i == 0 and engine == "vllm" and start:
            settings.flags["model"] = token
        i += 1
    return settings


_VLLM_ARGS = re.compile(r"non-default args: (\{.*\})\s*$")
_VLLM_VERSION = re.compile(r"vLLM API server version (\S+)")
_SGLANG_ARGS = re.compile(r"server_args=ServerArgs\((.*)\)\s*$")


def parse_log(path: str | Path) -> Settings:
    """The settings an engine logged at start-up: vLLM's `non-default args: {...}` (arguments left out have their
    defaults) or SGLang's `server_args=ServerArgs(...)` (every argument). The last start-up in the file counts."""
    path = Path(path)
    text = _read_text(path)
    vllm_args = sglang_args = version = None
    for number, line in enumerate(text.splitlines(), 1):
        if (m := _VLLM_ARGS.search(line)) is not None:
            vllm_args, sglang_args = (number, m.group(1)), None
        elif (m := _SGLANG_ARGS.search(line)) is not None:
            sglang_args, vllm_args = (number, m.group(1)), None
        elif (m := _VLLM_VERSION.search(line)) is not None:
            version = m.group(1)
    if vllm_args is not None:
        settings = Settings("vllm", f"{path}:{vllm_args[0]}", version=version)
        for key, value in _items(vllm_args[1][1:-1], ":", f"{path}:{vllm_args[0]}"):
            settings.flags[flag_key(str(key))] = value
        return settings
    if sglang_args is not None:
        settings = Settings("sglang", f"{path}:{sglang_args[0]}")
        for key, value in _items(sglang_args[1], "=", f"{path}:{sglang_args[0]}"):
            settings.flags[flag_key(str(key))] = value
        return settings
    raise DeploymentError(f"{path}: no start-up arguments found (vLLM's `non-default args: {{...}}` or SGLang's "
                          "`server_args=ServerArgs(...)`)")


def _items(inner: str, separator: str, where: str):
    """(key, value) of `'k': v, ...` (separator ':') or `k=v, ...` (separator '='), split at the top level; a value
    that is not a Python literal is UNKNOWN. Keys of a dict are literals; of a call, names."""
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
        key, value = _split_once(piece, separator)
        if key is None:
            continue
        try:
            key = ast.literal_eval(key) if separator == ":" else key.strip()
        except (ValueError, SyntaxError):
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


def boolean(value: object) -> bool | None:
    """A setting read as true/false: a bare flag is true; a word that is not a boolean follows a bare flag."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    if value is UNKNOWN:
        return None
    return BOOL_WORDS.get(str(value).strip().lower(), True)
