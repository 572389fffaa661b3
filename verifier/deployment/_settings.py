"""With which settings a deployment runs: read from a serve command line or from the arguments an engine logs
at start-up, never executed (logs are parsed as Python literals only)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from ..model import BOOL_WORDS
from ._read import DeploymentError

#: A value that was logged but is not a Python literal (an object's repr): the setting is set, to something
#: audit cannot compare.
UNKNOWN = object()


def flag_key(name: str) -> str:
    """A flag or an argument's name in one spelling: `--scheduling-policy`, `--scheduling_policy` and the logged
    `scheduling_policy` are one setting. A short flag (one dash) keeps its case: llama.cpp's `-c` (--ctx-size) and
    `-C` (--cpu-mask) are two flags."""
    if name.startswith("-") and not name.startswith("--") and name[1:2].isalpha():
        return name[1:].replace("-", "_")
    return name.lstrip("-").replace("-", "_").lower()


@dataclass
class Settings:
    """The settings of one engine's deployment: flags (by `flag_key`) and environment variables."""

    engine: str
    origin: str
    flags: dict[str, object] = field(default_factory=dict)  # value: text, a bool, None (a bare flag), UNKNOWN
    env: dict[str, str] = field(default_factory=dict)
    version: str | None = None  # the engine version the log states, when it does (llama.cpp: its build, `b4763`)
    logged: bool = False  # read from a start-up log, where a setting left alone may be written as None
    notes: list[str] = field(default_factory=list)
    commit: str | None = None  # the commit the log states (llama.cpp's build line), when it does
    #: The engine's arguments as given, when the flags must be read again for each release (llama-server: which
    #: flags take a value is each release's own declaration); None when `flags` are final.
    argv: list[str] | None = None
    #: Keys set only because another spelling implies them (`--no-x` gives `x` false), not given as such.
    implied: set[str] = field(default_factory=set)
    written: dict[str, str] = field(default_factory=dict)  # key -> the flag as the line spelt it (`-np`)
    #: Whether the source says which flags were given at all: a llama.cpp log logs none, so it decides no
    #: condition (its conditions stay "bites only if", as with no settings).
    has_flags: bool = True
    #: Read from a file whose variables are expanded from the file alone: a value still naming one (`$PORT`) is
    #: UNKNOWN, also when the arguments are read again (`argv`).
    unread_variables: bool = False


_PROGRAMS = {
    "vllm": [("vllm", "serve"), ("-m", "vllm.entrypoints.openai.api_server"), ("-m", "vllm.entrypoints.api_server")],
    "sglang": [("-m", "sglang.launch_server"), ("sglang", "serve"), ("-m", "sglang.launch_server_grpc")],
    # the `full` images' entrypoint runs llama-server for `--server` (.devops/tools.sh)
    "llama-cpp": [("tools.sh", "--server"), ("tools.sh", "-s")],
}
#: Serve programs that are one executable, by its file name (a path before it, `.exe` after it, are its own).
_EXECUTABLES = {"llama-cpp": ("llama-server", "llama-server.exe")}
_NUMBER = re.compile(r"-\d+(\.\d*)?([eE][-+]?\d+)?")


def _runs(token: str, names: tuple[str, ...]) -> bool:
    """Whether a command word runs one of the executables: `./llama-server`, `/app/llama-server`,
    `C:\\llama\\llama-server.exe` (which a POSIX shell split reads as `C:llamallama-server.exe`)."""
    name = re.split(r"[\\/]", token)[-1]
    return name in names or any(n.endswith(".exe") and name.lower().endswith(n) for n in names)


def program_of(tokens: list[str]) -> tuple[str | None, int]:
    """The engine whose serve program the tokens run (`vllm serve`, `python -m sglang.launch_server`,
    `./build/bin/llama-server`...), the first one in them, and where its arguments start; (None, 0) when there is
    none."""
    for i, token in enumerate(tokens):
        for key, names in _EXECUTABLES.items():
            if _runs(token, names):
                return key, i + 1
        if i + 1 < len(tokens):
            for key, programs in _PROGRAMS.items():
                for first, second in programs:
                    if (Path(token).name == first or token == first) and tokens[i + 1] == second:
                        return key, i + 2
    return None, 0


def parse_serve(command: str, default_engine: str | None = None, origin: str = "--serve") -> Settings:
    """The settings of a serve command line (`VLLM_X=1 vllm serve MODEL --flag value --other=v --bool`), also as
    pasted: continuation lines (`\\` at a line's end), a shell prompt (`$ `), `sudo`.

    A flag followed by a word that is not a flag takes it as its value; a boolean condition then reads a word
    that is not true/false as the flag being set (`--enable-x MODEL`). `--no-x` is `x` false."""
    text = re.sub(r"\\\r?\n", " ", command).strip()
    text = re.sub(r"^\$\s+", "", text)
    try:
        tokens = shlex.split(text, comments=True)
    except ValueError as exc:
        raise DeploymentError(f"{origin}: cannot split the command line: {exc}") from None
    while tokens and tokens[0] in ("sudo", "exec", "nohup"):
        tokens.pop(0)
    env = {}
    while tokens and (tokens[0] == "env" or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tokens[0])):
        token = tokens.pop(0)
        if token != "env":
            name, _, value = token.partition("=")
            env[name] = value
    engine, start = program_of(tokens)
    if engine is None:
        if any(t == "llama_cpp.server" or t.startswith("llama_cpp.server.") for t in tokens):
            raise DeploymentError(f"{origin}: `python -m llama_cpp.server` is llama-cpp-python's own server (Python), "
                                  "not llama.cpp's llama-server, which the llama-cpp entries are about; its settings "
                                  "are not read (give the version with --engine llama-cpp==VERSION)")
        if default_engine is None:
            raise DeploymentError(f"{origin}: cannot tell the engine of {command!r}: expected `vllm serve ...`, "
                                  "`python -m vllm.entrypoints.openai.api_server ...` or `python -m "
                                  "sglang.launch_server ...`")  # as the site's audit box says it (audit.js)
        engine = default_engine
    return parse_tokens(tokens[start:], engine, origin, env)


def parse_tokens(args: list[str], engine: str, origin: str, env: dict[str, str] | None = None) -> Settings:
    """The settings of an engine's arguments (what follows its serve program, or an image whose entrypoint
    serves): `--flag value`, `--flag=value`, a bare `--flag`, `--no-flag`; for `vllm serve`, the model.
    llama-server's arguments are read by its own rules (`_llama`)."""
    if engine == "llama-cpp":
        from ._llama import parse_args
        return parse_args(args, origin, env)
    settings = Settings(engine, origin, env=dict(env or {}))
    i = 0
    value: str | None  # a flag's value; None for a flag given alone
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
            settings.implied.discard(key)
            if key.startswith("no_") and value is None and key[3:] not in settings.flags:
                settings.flags[key[3:]] = False
                settings.implied.add(key[3:])
            if key == "config":
                settings.notes.append(f"{origin}: the settings in --config {value} are not read; give them as flags")
        elif i == 0 and engine == "vllm":
            settings.flags["model"] = token
        i += 1
    return settings


def boolean(value: object) -> bool | None:
    """A setting read as true/false: a bare flag is true; a word that is not a boolean follows a bare flag."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    if value is UNKNOWN:
        return None
    return BOOL_WORDS.get(str(value).strip().lower(), True)
