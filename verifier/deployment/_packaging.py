"""Engine requirements in Python packaging files: `pyproject.toml` (PEP 621 dependencies and extras, PEP 735
dependency groups, Poetry dependencies and groups, uv's overrides, constraints and sources), `setup.cfg` and
`setup.py`, read statically: setup.py is parsed (`ast`), never run; only literal lists, dicts and the module-level
names bound to them are followed.

A requirement pinned to one version (`==`) audits that release; a range (`>=0.9,<0.11`, Poetry's `^0.6.0`) or no
version at all audits every tracked release in it (`Installed.specifier`)."""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

from packaging.utils import canonicalize_name

from ._read import DeploymentError, _read_text
from ._versions import (
    Installed,
    _by_package,
    from_specifier,
    read_toml,
    requirement_found,
    starts_with_an_engine,
)


def _line_of(lines: list[str], *needles: str, start: int = 0) -> int:
    """The first line (1-based) at or after `start` holding every needle, else the first holding the first."""
    for number in range(start, len(lines)):
        if all(n in lines[number] for n in needles):
            return number + 1
    for number, text in enumerate(lines, 1):
        if needles and needles[0] in text:
            return number
    return 1


class _Lines:
    """Line lookups in one file, each scan made once: a file that names an engine thousands of times (a
    pull request's attack) made one scan per requirement take minutes. `quoted` is a string's line from an index
    of every quoted string built in one pass, `alone` likewise of every line; `first` is `_line_of` remembered
    per question."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._quoted: dict[str, int] | None = None
        self._stripped: dict[str, int] | None = None
        self._first: dict[tuple[str, ...], int] = {}

    def quoted(self, value: str) -> int | None:
        """The first line where `value` is written whole between quotes, or None."""
        if self._quoted is None:
            self._quoted = {}
            for number, line in enumerate(self.lines, 1):
                for match in re.finditer(r"\"([^\"\n]*)\"|'([^'\n]*)'", line):
                    self._quoted.setdefault(match.group(1) if match.group(1) is not None else match.group(2), number)
        return self._quoted.get(value)

    def alone(self, value: str) -> int:
        """The first line that is `value` alone (spaces aside), else the first holding it."""
        if self._stripped is None:
            self._stripped = {}
            for number, line in enumerate(self.lines, 1):
                self._stripped.setdefault(line.strip(), number)
        return self._stripped.get(value) or self.first(value)

    def first(self, *needles: str) -> int:
        if needles not in self._first:
            self._first[needles] = _line_of(self.lines, *needles)
        return self._first[needles]


def _engine_name(requirement: str, wanted: dict[str, str]) -> str | None:
    """The name a requirement starts with, when `requirement_found` could find an engine in it (that name is
    an engine's, or the text starts with one when packaging cannot read it); None for the others, which are not
    looked up at all."""
    text = requirement.strip()
    name = re.split(r"[\s\[<>=!~;@(]", text, maxsplit=1)[0]
    return name if canonicalize_name(name) in wanted or starts_with_an_engine(text, wanted) else None


# --- pyproject.toml ----------------------------------------------------------------------------------------

def _table(value: object) -> dict:
    """A TOML table, or an empty one in place of anything else."""
    return value if isinstance(value, dict) else {}


def from_pyproject(path: Path, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    text, data = read_toml(path, "pyproject.toml")
    lines = _Lines(text)
    wanted = _by_package(packages)
    found: list[Installed] = []

    def strings(value, what: str) -> list[str]:
        if not isinstance(value, list):
            return []
        return [v for v in value if isinstance(v, str)]

    def add(requirement: str, what: str) -> None:
        name = _engine_name(requirement, wanted)
        if name is None:
            return
        line = lines.quoted(requirement) or lines.first(name)
        item = requirement_found(requirement, f"{path}:{line}", path, line, wanted, notes)
        if item is not None:
            found.append(item)

    project = _table(data.get("project"))
    for requirement in strings(project.get("dependencies"), "dependencies"):
        add(requirement, "dependencies")
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        for name, requirements in extras.items():
            for requirement in strings(requirements, f"optional-dependencies.{name}"):
                add(requirement, f"the extra {name}")
    groups = data.get("dependency-groups")
    if isinstance(groups, dict):
        for name, requirements in groups.items():
            for requirement in strings(requirements, f"dependency-groups.{name}"):
                add(requirement, f"the group {name}")
    tool = _table(data.get("tool"))
    uv = _table(tool.get("uv"))
    for key in ("override-dependencies", "constraint-dependencies", "dev-dependencies"):
        for requirement in strings(uv.get(key), key):
            add(requirement, f"tool.uv.{key}")
    sources = _table(uv.get("sources"))
    for name, source in sources.items():
        engine = wanted.get(canonicalize_name(name))
        if engine is not None and isinstance(source, dict) and ({"git", "path", "url"} & set(source)):
            kind = next(k for k in ("git", "path", "url") if k in source)
            notes.append(f"{path}:{lines.first(name, kind)}: {name} comes from a {kind} source "
                         "(tool.uv.sources), which has no release version; what it pins is not what runs")
    poetry = _table(tool.get("poetry"))
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    poetry_groups = _table(poetry.get("group"))
    tables += [g.get("dependencies") for g in poetry_groups.values() if isinstance(g, dict)]
    for table in tables:
        if not isinstance(table, dict):
            continue
        for name, spec in table.items():
            engine = wanted.get(canonicalize_name(name))
            if engine is None:
                continue
            line = lines.first(name, "=")
            where = f"{path}:{line}"
            for one in spec if isinstance(spec, list) else [spec]:
                if isinstance(one, dict):
                    if {"git", "path", "url"} & set(one):
                        notes.append(f"{where}: {name} comes from a git, path or url source; not audited")
                        continue
                    one = one.get("version")
                if not isinstance(one, str):
                    notes.append(f"{where}: {name} has no version constraint Poetry can read; not audited")
                    continue
                specifier = poetry_specifier(one)
                if specifier is None:
                    raise DeploymentError(f"{where}: cannot read the Poetry constraint {one!r} of {name}")
                found.append(from_specifier(engine, specifier, where, path, line))
    dynamic = project["dynamic"] if isinstance(project.get("dynamic"), list) else []
    if not found and {"dependencies", "optional-dependencies"} & set(dynamic):
        notes.append(f"{path}: its dependencies are dynamic (project.dynamic): they are in setup.py or setup.cfg; "
                     "give those, or the folder")
    return found


def poetry_specifier(constraint: str) -> str | None:
    """A Poetry version constraint as a PEP 440 specifier: `^0.6.0` is `>=0.6.0,<0.7.0`, `~0.6` is
    `>=0.6,<0.7`, a bare version is `==`, `*` is any; comma-separated parts are each converted. None when it
    cannot be read (`||` alternatives)."""
    if "||" in constraint or "|" in constraint:
        return None
    out = []
    for part in (p.strip() for p in constraint.split(",")):
        if not part or part == "*":
            continue
        match = re.fullmatch(r"([\^~])\s*(\d+(?:\.\d+)*)(.*)", part)
        if match:
            kind, base, rest = match.groups()
            numbers = [int(n) for n in base.split(".")]
            if kind == "^":
                index = next((i for i, n in enumerate(numbers) if n != 0), len(numbers) - 1)
            else:
                index = 0 if len(numbers) == 1 else 1
            upper = numbers[:index + 1]
            upper[-1] += 1
            out += [f">={base}{rest}", "<" + ".".join(map(str, upper))]
        elif re.fullmatch(r"\d+(\.\d+)*([a-z]+\d*|\.post\d+)?", part):
            out.append(f"=={part}")
        elif re.fullmatch(r"(==|!=|>=|<=|>|<|~=)\s*\S+", part):
            out.append(part.replace(" ", ""))
        else:
            return None
    return ",".join(out)


# --- setup.cfg and setup.py --------------------------------------------------------------------------------

def from_setup_cfg(path: Path, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    text = _read_text(path)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error as exc:
        raise DeploymentError(f"{path}: not a readable setup.cfg: {str(exc).splitlines()[0]}") from None
    lines = _Lines(text)
    wanted = _by_package(packages)
    found = []
    values = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values += [parser.get("options.extras_require", k) for k in parser.options("options.extras_require")]
    for value in values:
        for requirement in (r.strip() for r in value.splitlines()):
            if not requirement or requirement.startswith("#") or _engine_name(requirement, wanted) is None:
                continue
            line = lines.alone(requirement)
            item = requirement_found(requirement, f"{path}:{line}", path, line, wanted, notes)
            if item is not None:
                found.append(item)
    return found


def from_setup_py(path: Path, packages: dict[str, str], notes: list[str]) -> list[Installed]:
    """`install_requires` and `extras_require` of the `setup(...)` calls, as literals or module-level names bound
    to literals (lists, tuples, dicts, `+` of lists); anything computed is a note, never run."""
    text = _read_text(path)
    try:
        tree = ast.parse(text, filename=str(path))
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        line = getattr(exc, "lineno", None) or 1
        raise DeploymentError(f"{path}:{line}: not Python that can be parsed: {getattr(exc, 'msg', exc)}") from None
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            names[node.target.id] = node.value
    wanted = _by_package(packages)
    found: list[Installed] = []

    def literal_strings(node: ast.AST, depth: int = 0) -> list[tuple[str, int]] | None:
        if depth > 20:
            return None
        if isinstance(node, ast.Name) and node.id in names:
            return literal_strings(names[node.id], depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            out = []
            for item in node.elts:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    out.append((item.value, item.lineno))
                else:
                    return None
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left, right = literal_strings(node.left, depth + 1), literal_strings(node.right, depth + 1)
            return None if left is None or right is None else left + right
        return None

    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != "setup":
            continue
        for keyword in call.keywords:
            groups: list[ast.expr] = []
            if keyword.arg == "install_requires":
                groups = [keyword.value]
            elif keyword.arg == "extras_require":
                value: ast.AST = keyword.value
                if isinstance(value, ast.Name) and value.id in names:
                    value = names[value.id]
                if isinstance(value, ast.Dict):
                    groups = list(value.values)
                else:
                    notes.append(f"{path}:{keyword.value.lineno}: extras_require is computed; not read")
                    continue
            for group in groups:
                strings = literal_strings(group)
                if strings is None:
                    notes.append(f"{path}:{group.lineno}: {keyword.arg} is computed, not a literal list; not read")
                    continue
                for requirement, line in strings:
                    item = requirement_found(requirement, f"{path}:{line}", path, line, wanted, notes)
                    if item is not None:
                        found.append(item)
    return found
