"""What `gotchas audit` reads of a deployment: which engine versions it runs, and with which settings.

Versions come from the running environment (its distributions' metadata), another environment's interpreter,
a requirements file or `pip freeze` output, a lock file (`uv.lock`, `poetry.lock`, `pylock.toml`), or
`ENGINE==VERSION` given on the command line. Settings come from a serve command line (`vllm serve MODEL
--scheduling-policy priority`) or from the arguments an engine logs at start-up (vLLM's `non-default args:
{...}`, SGLang's `server_args=ServerArgs(...)`). Nothing read is executed: logs are parsed as Python literals
only, and `--python` runs the interpreter the user named, with a fixed script.
"""

from __future__ import annotations

import ast
import io
import json
import re
import shlex
import subprocess
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None

MAX_FILE_BYTES = 16 << 20


class DeploymentError(Exception):
    """What was given cannot be read as a deployment (exit 2); the message names the file and line."""


class EnvironmentFailed(Exception):
    """Another environment could not be asked (exit 3): its interpreter failed or said nothing readable."""


@dataclass(frozen=True)
class Installed:
    """One engine version a deployment runs, and where it was read."""

    engine: str  # the engine's key in the registry
    version: str  # as found
    origin: str  # `environment`, `requirements.txt:3`, `uv.lock`, `--engine`...
    file: str | None = None  # the file it was read from, for SARIF locations
    line: int | None = None


def _by_package(packages: dict[str, str]) -> dict[str, str]:
    """canonical package name -> engine key, from engine key -> package name."""
    return {canonicalize_name(package): engine for engine, package in packages.items()}


# --- environments ------------------------------------------------------------------------------------------

def from_environment(packages: dict[str, str]) -> list[Installed]:
    """The engines installed in the running environment (their distributions' versions)."""
    from importlib import metadata

    wanted = _by_package(packages)
    found = set()
    for dist in metadata.distributions():
        name = dist.metadata["Name"] if dist.metadata else None
        if name and canonicalize_name(name) in wanted and dist.version:
            found.add((wanted[canonicalize_name(name)], dist.version))
    return [Installed(engine, version, "environment") for engine, version in sorted(found)]


_ASK = """\
import json, sys
from importlib import metadata
wanted = set(json.loads(sys.argv[1]))
def canon(n):
    import re
    return re.sub(r"[-_.]+", "-", n).lower()
found = sorted({(canon(d.metadata["Name"]), d.version) for d in metadata.distributions()
                if d.metadata and d.metadata["Name"] and canon(d.metadata["Name"]) in wanted})
print(json.dumps(found))
"""


def from_python(python: str, packages: dict[str, str], timeout: float = 60.0) -> list[Installed]:
    """The engines installed in the environment of another interpreter: it is run (isolated mode, so that the
    folder it starts in is not on its path) to print its distributions' versions."""
    wanted = _by_package(packages)
    try:
        done = subprocess.run([python, "-I", "-c", _ASK, json.dumps(sorted(wanted))], capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise DeploymentError(f"--python {python}: no such interpreter") from None
    except PermissionError:
        raise DeploymentError(f"--python {python}: not executable") from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvironmentFailed(f"--python {python}: could not run it: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise EnvironmentFailed(f"--python {python}: exited with {done.returncode}: {last}")
    try:
        found = json.loads(done.stdout)
        pairs = [(str(name), str(version)) for name, version in found]
    except (ValueError, TypeError):
        raise EnvironmentFailed(f"--python {python}: printed something other than its distributions") from None
    return [Installed(wanted[name], version, f"--python {python}") for name, version in pairs if name in wanted]


# --- files: requirements, pip freeze, lock files -----------------------------------------------------------

def file_kind(path: Path) -> str:
    name = path.name.lower()
    if name == "uv.lock":
        return "uv.lock"
    if name == "poetry.lock":
        return "poetry.lock"
    if re.fullmatch(r"pylock(\.[^.]+)?\.toml", name):
        return "pylock.toml"
    return "requirements"


def from_file(path: str | Path, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    """The engines pinned in a requirements file, `pip freeze` output, or a lock file (by its name: `uv.lock`,
    `poetry.lock`, `pylock.toml`, `pylock.NAME.toml`; anything else is read as requirements)."""
    path = Path(path)
    kind = file_kind(path)
    if kind == "requirements":
        return _requirements(path, packages, notes, set())
    return _lock(path, kind, packages, notes)


def _read_text(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise DeploymentError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise DeploymentError(f"{path}: larger than {MAX_FILE_BYTES >> 20} MiB; not read")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DeploymentError(f"{path}: not UTF-8 (byte {exc.start})") from None


def _logical_lines(text: str):
    """(line number, text) of a requirements file: continuations joined, comments dropped."""
    start, pieces = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if start is None:
            start = number
        if line.endswith("\\"):
            pieces.append(line[:-1])
            continue
        pieces.append(line)
        joined = re.sub(r"(^|\s)#.*$", "", " ".join(pieces)).strip()
        if joined:
            yield start, joined
        start, pieces = None, []


def _requirements(path: Path, packages: dict[str, str], notes: list[str], seen: set) -> list[Installed]:
    if path.resolve() in seen:
        return []
    seen.add(path.resolve())
    wanted = _by_package(packages)
    found = []
    for number, line in _logical_lines(_read_text(path)):
        where = f"{path}:{number}"
        include = re.match(r"^(?:-r|--requirement)(?:\s+|=)(\S+)", line)
        if include:
            found.extend(_requirements(path.parent / include.group(1), packages, notes, seen))
            continue
        if line.startswith("-"):  # -c, -e, --index-url, --hash...: nothing pins an engine there
            if re.search(r"#egg=(vllm|sglang)\b", line):
                notes.append(f"{where}: an editable or VCS install of an engine has no release version; not audited")
            continue
        text = re.sub(r"\s--hash[=\s]\S+", "", line).strip()
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            if any(re.match(rf"^{p}\b", text, re.I) for p in wanted):
                raise DeploymentError(f"{where}: cannot read the requirement: {exc}") from None
            continue  # another package's line that packaging cannot read is not ours to judge
        engine = wanted.get(canonicalize_name(requirement.name))
        if engine is None:
            continue
        pins = [s.version for s in requirement.specifier if s.operator in ("==", "===") and "*" not in s.version]
        if len(pins) != 1:
            notes.append(f"{where}: {requirement} is not pinned to one version (==); not audited")
            continue
        found.append(Installed(engine, pins[0], where, str(path), number))
    return found


def _lock(path: Path, kind: str, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    if tomllib is None:
        raise DeploymentError(f"{path}: reading {kind} needs Python 3.11 or later (tomllib)")
    text = _read_text(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeploymentError(f"{path}: not valid TOML: {exc}") from None
    items = data.get("packages" if kind == "pylock.toml" else "package", [])
    if not isinstance(items, list):
        raise DeploymentError(f"{path}: not a {kind}: no list of packages")
    wanted = _by_package(packages)
    found = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        engine = wanted.get(canonicalize_name(item["name"]))
        if engine is None:
            continue
        version = item.get("version")
        line = _line_of(text, item["name"], version)
        if not isinstance(version, str):
            notes.append(f"{path}:{line}: {item['name']} has no version in the lock (a local or VCS source); "
                         "not audited")
            continue
        found.append(Installed(engine, version, f"{path}:{line}", str(path), line))
    return found


def _line_of(text: str, name: str, version) -> int:
    """The line of a package's `name = "..."` in a TOML lock (the one followed by its version, if several)."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines, 1) if re.fullmatch(rf'\s*name\s*=\s*"{re.escape(name)}"\s*', line)]
    for hit in hits:
        if version is None or any(f'"{version}"' in lines[j] for j in range(hit, min(hit + 4, len(lines)))):
            return hit
    return hits[0] if hits else 1


def from_specs(specs: list[str], packages: dict[str, str]) -> list[Installed]:
    """`--engine vllm==0.10.0` (the engine's key or its package name)."""
    wanted = {**_by_package(packages), **{canonicalize_name(k): k for k in packages}}
    found = []
    for spec in specs:
        try:
            requirement = Requirement(spec)
        except InvalidRequirement:
            requirement = None
        pins = [s.version for s in requirement.specifier if s.operator == "=="] if requirement else []
        engine = wanted.get(canonicalize_name(requirement.name)) if requirement else None
        if engine is None or len(pins) != 1 or len(requirement.specifier) != 1:
            raise DeploymentError(f"--engine {spec!r}: write ENGINE==VERSION with one of {', '.join(packages)} "
                                  "(vllm==0.10.0)")
        found.append(Installed(engine, pins[0], "--engine"))
    return found


# --- settings: serve command lines and start-up logs -------------------------------------------------------

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


_BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False,
               "off": False}
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
    depth = 0
    for token in tokens:
        if token.type == tokenize.OP:
            if token.string in "([{":
                depth += 1
            elif token.string in ")]}":
                depth -= 1
            elif token.string == separator and depth == 0:
                return piece[:token.start[1]], piece[token.end[1]:]
    return None, None


def boolean(value: object) -> bool | None:
    """A setting read as true/false: a bare flag is true; a word that is not a boolean follows a bare flag."""
    if value is None:
        return True
    if isinstance(value, bool):
        return value
    if value is UNKNOWN:
        return None
    return _BOOL_WORDS.get(str(value).strip().lower(), True)
