"""Which engine versions a deployment runs: read from the running environment, another interpreter's, a
requirements file or `pip freeze` output, a lock file, or `ENGINE==VERSION` on the command line."""

from __future__ import annotations

import json
import re
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


def _requirements(path: Path, packages: dict[str, str], notes: list[str], seen: set) -> list[Installed]:
    if path.resolve() in seen:
        return []
    seen.add(path.resolve())
    wanted = _by_package(packages)
    found = []
    for number, line in _logical_lines(_read_text(path)):
        where = f"{path}:{number}"
        include = re.match(r"^(?:-r|--requirement|-c|--constraint)(?:\s+|=|(?<=-[rc]))(\S+)", line)
        if include:  # a constraint file pins what is installed as a requirements file does
            found.extend(_requirements(path.parent / include.group(1), packages, notes, seen))
            continue
        quoted = re.fullmatch(r"""(["'])(.+)\1\s*,?""", line)
        if quoted:  # pasted from a pyproject.toml or setup.py list: "vllm==0.9.1",
            line = quoted.group(2)
        if line.startswith("-"):  # -e, --index-url, --hash...: nothing pins an engine there
            if re.search(r"#egg=(vllm|sglang|llama[-_.]cpp[-_.]python)\b", line, re.IGNORECASE):
                notes.append(f"{where}: an editable or VCS install of an engine has no release version; not audited")
            continue
        text = re.sub(r"\s--hash[=\s]\S+", "", line).strip()
        item = requirement_found(text, where, path, number, wanted, notes)
        if item is not None:
            found.append(item)
    return found


def requirement_found(text: str, where: str, path: Path, line: int, wanted: dict[str, str],
                      notes: list[str]) -> Installed | None:
    """The engine a PEP 508 requirement string names, pinned or as a range (every tracked release in it); None
    for another package, or a line packaging cannot read that is not an engine's (not ours to judge). A string
    that names an engine and cannot be read is a DeploymentError with its place."""
    text = text.strip()
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        if any(re.match(rf"^{re.escape(p)}\b", text, re.IGNORECASE) for p in wanted):
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


def read_toml(path: Path, kind: str) -> tuple[str, dict]:
    """(text, data) of a TOML file a deployment gives: a lock file or a pyproject.toml."""
    if tomllib is None:
        raise DeploymentError(f"{path}: reading {kind} needs Python 3.11 or later (tomllib)")
    text = _read_text(path)
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DeploymentError(f"{path}: not valid TOML: {exc}") from None


def _lock(path: Path, kind: str, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    text, data = read_toml(path, kind)
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
