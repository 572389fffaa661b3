"""Which engine versions a deployment runs: read from the running environment, another interpreter's, a
requirements file or `pip freeze` output, a lock file, or `ENGINE==VERSION` on the command line."""

from __future__ import annotations

import json
import optparse
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ._read import DeploymentError, EnvironmentFailed, _read_text

if TYPE_CHECKING:
    from ._settings import Settings

try:
    import tomllib  # type: ignore[import-not-found]  # Python 3.10 has none: the except below
except ModuleNotFoundError:  # Python 3.10
    tomllib = None


@dataclass(frozen=True)
class Installed:
    """One engine version a deployment runs, and where it was read."""

    engine: str  # the engine's key in the registry
    version: str  # as found
    origin: str  # `environment`, `requirements.txt:3`, `uv.lock`, `--engine`...
    file: str | None = None  # the file it was read from, for SARIF locations
    line: int | None = None
    #: A version range instead of one version (`>=0.9,<0.11`; empty: any version): audit reads every tracked
    #: release in it. `version` is then the range as written.
    specifier: str | None = None
    #: The settings declared with this version (the container whose image names it), else None: audit then uses
    #: the deployment's settings of the engine.
    settings: Settings | None = field(default=None, hash=False)
    #: For a llama.cpp build (`version` is `b4763`, or `unknown`), the commit it printed, when it did.
    commit: str | None = None


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


#: The most requirement files one given file may bring in through `-r` and `-c`, itself included (a project has
#: a handful; a chain of thousands is a pull request's attack on the reader).
MAX_REQUIREMENT_FILES = 1000


class _PipOptions(optparse.OptionParser):
    """The options pip reads on a line of a requirements file (pip's `req_file.SUPPORTED_OPTIONS` and
    `SUPPORTED_OPTIONS_REQ`, pip 23-25), parsed as pip parses them: with optparse, so every spelling pip takes is
    taken (`-r FILE`, `-rFILE`, `--requirement=FILE`, an unambiguous abbreviation such as `--requirem FILE`, an
    include after another option) and what pip refuses is refused. Written out rather than imported: pip's
    parser is in `pip._internal`, which is not an API."""

    _VALUED = (("-i", "--index-url", "--pypi-url"), ("--extra-index-url",), ("-c", "--constraint"),
               ("-r", "--requirement"), ("-e", "--editable"), ("-f", "--find-links"), ("--no-binary",),
               ("--only-binary",), ("--trusted-host",), ("--use-feature",), ("--global-option",), ("--hash",),
               ("-C", "--config-settings"))
    _FLAGS = ("--no-index", "--prefer-binary", "--require-hashes", "--pre")

    def __init__(self) -> None:
        super().__init__(add_help_option=False)
        for names in self._VALUED:
            self.add_option(*names, action="append", dest=names[-1].lstrip("-").replace("-", "_"))
        for flag in self._FLAGS:
            self.add_option(flag, action="store_true")

    def error(self, msg: str):  # optparse would exit the process
        raise ValueError(msg)

    exit = error  # type: ignore[assignment]


_PIP_OPTIONS = _PipOptions()  # made once: each line is parsed into fresh default values


def _options(text: str) -> tuple[str, optparse.Values]:
    """(the requirement, the options) of a logical line, split as pip splits it: the words before the first one
    that starts with `-` are the requirement (markers would not survive shlex), the rest are options. ValueError
    when pip would refuse the options."""
    words = text.split(" ")
    first = next((i for i, word in enumerate(words) if word.startswith("-")), len(words))
    options, _ = _PIP_OPTIONS.parse_args(shlex.split(" ".join(words[first:])), _PIP_OPTIONS.get_default_values())
    return " ".join(words[:first]), options


def _requirements(path: Path, packages: dict[str, str], notes: list[str], seen: set) -> list[Installed]:
    """The engines a requirements file pins, and the files it includes (`-r`, and `-c`: a constraint pins what
    is installed as a requirement does), in pip's order: an included file where it is named.

    Included files are read from a stack of open files, not by recursion, so a chain of any length cannot
    exhaust Python's stack; at most MAX_REQUIREMENT_FILES are read, and a file already read is not read again
    (a cycle ends there). A file that cannot be read is a DeploymentError naming the line that included it."""
    wanted = _by_package(packages)
    found: list[Installed] = []
    seen.add(os.path.realpath(path))
    stack = [(path, _logical_lines(_read_text(path)))]
    while stack:
        current, lines = stack[-1]
        step = next(lines, None)
        if step is None:
            stack.pop()
            continue
        number, line = step
        where = f"{current}:{number}"
        quoted = re.fullmatch(r"""(["'])(.+)\1\s*,?""", line)
        if quoted:  # pasted from a pyproject.toml or setup.py list: "vllm==0.9.1",
            line = quoted.group(2)
        try:
            text, options = _options(line)
        except ValueError as exc:
            raise DeploymentError(f"{where}: pip cannot read this line's options ({exc}): {line[:200]!r}") from None
        if not text:
            included = (options.requirement or []) + (options.constraint or [])
            if included:
                # pip follows the first file a line names (its first -r, else its first -c) and no other
                target = current.parent / (options.requirement or options.constraint)[0]
                if len(included) > 1:
                    notes.append(f"{where}: pip reads only the first file a line names ({included[0]}); "
                                 f"{', '.join(included[1:])} not read")
                real = os.path.realpath(target)
                if real in seen:
                    continue
                if len(seen) >= MAX_REQUIREMENT_FILES:
                    raise DeploymentError(f"{where}: includes more than {MAX_REQUIREMENT_FILES} requirement files "
                                          "in all; not read")
                if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", included[0]):
                    raise DeploymentError(f"{where}: includes {included[0]}, a URL, which audit does not fetch; "
                                          "give the file itself")
                seen.add(real)
                try:
                    stack.append((target, _logical_lines(_read_text(target))))
                except DeploymentError as exc:
                    raise DeploymentError(f"{where}: includes {exc}") from None
            elif any(re.search(r"#egg=(vllm|sglang|llama[-_.]cpp[-_.]python)\b", e, re.IGNORECASE)
                     for e in options.editable or []):
                notes.append(f"{where}: an editable or VCS install of an engine has no release version; not audited")
            continue  # --index-url, --hash...: nothing pins an engine there
        item = requirement_found(text, where, current, number, wanted, notes)
        if item is not None:
            found.append(item)
    return found


def starts_with_an_engine(text: str, wanted: dict[str, str]) -> bool:
    """Whether `text`, a requirement packaging cannot read, starts with an engine's package name."""
    return any(re.match(rf"^{re.escape(p)}\b", text, re.IGNORECASE) for p in wanted)


def requirement_found(text: str, where: str, path: Path, line: int, wanted: dict[str, str],
                      notes: list[str]) -> Installed | None:
    """The engine a PEP 508 requirement string names, pinned or as a range (every tracked release in it); None
    for another package, or a line packaging cannot read that is not an engine's (not ours to judge). A string
    that names an engine and cannot be read is a DeploymentError with its place."""
    text = text.strip()
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        if starts_with_an_engine(text, wanted):
            raise DeploymentError(f"{where}: cannot read the requirement {text!r}: {exc}") from None
        return None
    engine = wanted.get(canonicalize_name(requirement.name))
    if engine is None:
        return None
    if requirement.url:
        notes.append(f"{where}: {requirement.name} comes from {requirement.url}, which has no release version; "
                     "not audited")
        return None
    return from_specifier(engine, str(requirement.specifier), where, path, line)


def from_specifier(engine: str, specifier: str, where: str, path: Path | None, line: int | None) -> Installed:
    """One version when the specifier pins exactly one (`==0.9.1`, `===0.9.1`), else the range."""
    parts = [p.strip() for p in specifier.split(",") if p.strip()]
    if len(parts) == 1:
        match = re.fullmatch(r"===?\s*([^*\s]+)", parts[0])
        if match:
            return Installed(engine, match.group(1), where, str(path) if path else None, line)
    return Installed(engine, specifier, where, str(path) if path else None, line, specifier=specifier)


#: The deepest nesting of arrays and inline tables, and the most parts of one dotted key, that a TOML file a
#: deployment gives may have. tomllib recurses once per level (a few thousand levels are a RecursionError) and
#: builds a dotted key by adding one part at a time (a key of 100,000 parts takes minutes); lock files and
#: pyproject.toml nest a few levels and have keys of a few parts.
MAX_TOML_DEPTH = 64
MAX_TOML_KEY_PARTS = 64


def read_toml(path: Path, kind: str) -> tuple[str, dict]:
    """(text, data) of a TOML file a deployment gives: a lock file or a pyproject.toml. What is nested deeper
    than MAX_TOML_DEPTH or has a key of more than MAX_TOML_KEY_PARTS parts is refused before tomllib reads it."""
    if tomllib is None:
        raise DeploymentError(f"{path}: reading {kind} needs Python 3.11 or later (tomllib)")
    text = _read_text(path)
    _toml_bounds(text, path)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeploymentError(f"{path}: not valid TOML: {exc}") from None
    except (RecursionError, MemoryError):  # past what the scan counts: refused all the same, never a traceback
        raise DeploymentError(f"{path}: too deeply nested or too large for a TOML reader; not read") from None


#: What the bounds scan stops at: a string's or comment's start, a bracket, or what ends a run of key parts.
_TOML_STOP = re.compile(r"'{3}|\"{3}|[\"'#\[\]{}\n=,.]")
_TOML_STRING_END = {
    '"': re.compile(r'(?:[^"\\\n]|\\.)*"'),  # a basic string: escapes, no newline
    "'": re.compile(r"[^'\n]*'"),  # a literal string: no escapes
    '"' * 3: re.compile(r'(?:[^"\\]|\\.|"(?!""))*"{3,5}'),  # multi-line: up to two quotes may end its text
    "'" * 3: re.compile(r"(?:[^']|'(?!''))*'{3,5}"),
}


def _toml_bounds(text: str, path: Path) -> None:
    """DeploymentError when `text` nests arrays or inline tables (or brackets of any kind) deeper than
    MAX_TOML_DEPTH, or has a run of more than MAX_TOML_KEY_PARTS parts joined by dots, outside strings and
    comments. One pass, in linear time; a float or a date has one dot, so only a key can have many."""
    depth = dots = 0
    at = 0
    while (stop := _TOML_STOP.search(text, at)) is not None:
        token, at = stop.group(), stop.end()
        if token in _TOML_STRING_END:
            end = _TOML_STRING_END[token].match(text, at)
            at = end.end() if end else len(text)  # an unclosed string: tomllib says where
            continue
        if token == "#":
            newline = text.find("\n", at)
            at = len(text) if newline < 0 else newline
        elif token == ".":
            dots += 1
            if dots >= MAX_TOML_KEY_PARTS:
                line = text.count("\n", 0, at) + 1
                raise DeploymentError(f"{path}:{line}: a key of more than {MAX_TOML_KEY_PARTS} dotted parts; "
                                      "not read")
            continue
        elif token in "[{":
            depth += 1
            if depth > MAX_TOML_DEPTH:
                line = text.count("\n", 0, at) + 1
                raise DeploymentError(f"{path}:{line}: nested more than {MAX_TOML_DEPTH} deep; not read")
        elif token in "]}":
            depth = max(depth - 1, 0)
        dots = 0


def _lock(path: Path, kind: str, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    text, data = read_toml(path, kind)
    items = data.get("packages" if kind == "pylock.toml" else "package", [])
    if not isinstance(items, list):
        raise DeploymentError(f"{path}: not a {kind}: no list of packages")
    wanted = _by_package(packages)
    found = []
    lines = _NameLines(text)
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        engine = wanted.get(canonicalize_name(item["name"]))
        if engine is None:
            continue
        version = item.get("version")
        line = lines.of(item["name"], version)
        if not isinstance(version, str):
            notes.append(f"{path}:{line}: {item['name']} has no version in the lock (a local or VCS source); "
                         "not audited")
            continue
        found.append(Installed(engine, version, f"{path}:{line}", str(path), line))
    return found


class _NameLines:
    """Where each package of a TOML lock is named (`name = "..."`), found in one pass over the file: a scan of
    the whole file per package made a lock that lists an engine thousands of times take minutes."""

    def __init__(self, text: str) -> None:
        lines = text.splitlines()
        self.names: dict[str, list[int]] = {}
        #: (name, a string on one of the 4 lines after the name's) -> those name lines, in order
        self.near: dict[tuple[str, str], list[int]] = {}
        for number, line in enumerate(lines, 1):
            match = re.fullmatch(r'\s*name\s*=\s*"([^"]*)"\s*', line)
            if match:
                name = match.group(1)
                self.names.setdefault(name, []).append(number)
                strings = {s for after in lines[number:number + 4] for s in re.findall(r'"([^"]*)"', after)}
                for string in strings:
                    self.near.setdefault((name, string), []).append(number)
        self.taken: dict[tuple[str, str], int] = {}

    def of(self, name: str, version) -> int:
        """The line of `name = "..."` followed (within 4 lines) by `"version"`; when a lock lists the same name
        and version more than once, each time the next such line. Else the name's first line, else 1."""
        if isinstance(version, str) and (hits := self.near.get((name, version))):
            index = self.taken.get((name, version), 0)
            self.taken[(name, version)] = index + 1
            return hits[min(index, len(hits) - 1)]
        hits = self.names.get(name)
        return hits[0] if hits else 1


#: `--engine llama-cpp==b4763`: a llama.cpp build, by its number (and, optionally, its commit: `b4763-f777a73e`, as
#: `system_fingerprint` writes it).
_BUILD_SPEC = re.compile(r"\s*(llama[-_.]cpp)\s*==\s*b(\d+)(?:-([0-9a-fA-F]{7,40}))?\s*", re.IGNORECASE)


def from_specs(specs: list[str], packages: dict[str, str]) -> list[Installed]:
    """`--engine vllm==0.10.0` (the engine's key or its package name); `--engine llama-cpp==b4763` (a llama.cpp
    build, optionally with its commit: `b4763-f777a73e`)."""
    wanted: dict[str, str] = {**_by_package(packages), **{canonicalize_name(k): k for k in packages}}
    found = []
    for spec in specs:
        build = _BUILD_SPEC.fullmatch(spec)
        if build and wanted.get(canonicalize_name(build.group(1))) == "llama-cpp":
            commit = build.group(3).lower() if build.group(3) else None
            found.append(Installed("llama-cpp", f"b{build.group(2)}", "--engine", commit=commit))
            continue
        try:
            requirement = Requirement(spec)
        except InvalidRequirement:
            requirement = None
        pins = [s.version for s in requirement.specifier if s.operator == "=="] if requirement else []
        engine = wanted.get(canonicalize_name(requirement.name)) if requirement else None
        if engine is None or requirement is None or len(pins) != 1 or len(requirement.specifier) != 1:
            raise DeploymentError(f"--engine {spec!r}: write ENGINE==VERSION with one of {', '.join(packages)} "
                                  "(vllm==0.10.0; a llama.cpp build: llama-cpp==b4763)")
        found.append(Installed(engine, pins[0], "--engine"))
    return found
