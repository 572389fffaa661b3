"""The knowledge base on disk: where it is, and its own data (engines, schemes, concepts)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import _yaml
from .errors import EXIT_USAGE, GotchasError
from .safety import name_problem

ENTRIES_DIR = "gotchas"
ENGINES_FILE = "engines.yaml"
SCHEMES_FILE = "schemes.yaml"
CONCEPTS_FILE = "concepts.yaml"
SEVERITIES_FILE = "severities.yaml"

_ENGINE_FIELDS = {"name", "package", "repository", "tag_pattern", "archive_root", "vendored_at", "oldest", "surface"}
#: The kinds of a registry `surface` mapping (verifier.surface.model.KINDS, plural as written there), and its
#: `env-registry` key: the files whose definitions of a variable come before other reads of it.
SURFACE_KINDS = {"flags": "flag", "env": "env", "metrics": "metric", "requests": "request"}
SURFACE_PRIMARY = "env-registry"
_ENGINE_REQUIRED = {"name", "package", "repository"}  # and tag_pattern, unless vendored_at


class KBError(GotchasError, exit_code=EXIT_USAGE):
    """The KB's own data is missing or malformed; the message names file and line."""


@dataclass(frozen=True)
class Engine:
    key: str
    name: str  # display name
    package: str  # name on the Python package index
    repository: str  # git URL
    #: git tag of a release, `{version}` standing for the version; "" for a vendored engine, whose releases are
    #: another project's and whose code is named by the commit each release vendors (the ledger's `commit`)
    tag_pattern: str = ""
    archive_root: str = ""  # repository folder that release archives hold at their root (SGLang: python/)
    #: the folder of a release archive that holds the repository's whole tree, vendored into another project's
    #: package (llama.cpp in llama-cpp-python's sdists: vendor/llama.cpp/); the rest of the archive is not its code
    vendored_at: str = ""
    oldest: str = ""  # the oldest release the KB tracks: `verify` without --since starts there
    #: the files its release surface is read from: kind ("flag", "env", "metric", "request") -> path patterns
    #: (`*` within a folder, `**/` any folders), in repository paths; and the env files read first
    surface: tuple[tuple[str, tuple[str, ...]], ...] = ()
    surface_primary: tuple[str, ...] = ()

    def surface_patterns(self) -> dict[str, tuple[str, ...]]:
        return dict(self.surface)

    def tag(self, version: str) -> str:
        """The repository's tag of a release; "" when its releases have none (a vendored engine)."""
        return self.tag_pattern.replace("{version}", version) if self.tag_pattern else ""

    def ref(self, version: str, commit: str | None = None) -> str:
        """What a link to the code of a release names: the commit it vendors (`commit`, from the ledger), else
        its tag; "" when neither is known."""
        if self.vendored_at:
            return commit or ""
        return self.tag(version)

    def version_of_tag(self, tag: str) -> str | None:
        if not self.tag_pattern:
            return None
        before, _, after = self.tag_pattern.partition("{version}")
        pattern = re.escape(before) + r"(?P<v>[0-9][0-9A-Za-z.+!-]*)" + re.escape(after)
        m = re.fullmatch(pattern, tag)
        return m.group("v") if m else None

    def repository_path(self, archive_path: str) -> str | None:
        """The repository path of a file that a release archive holds at `archive_path`; None for a file of the
        package the repository is vendored into (outside `vendored_at`)."""
        if self.vendored_at:
            return archive_path[len(self.vendored_at):] if archive_path.startswith(self.vendored_at) else None
        return self.archive_root + archive_path

    def archive_path(self, repository_path: str) -> str | None:
        """Where a release archive holds a repository path; None when archives never ship it."""
        if self.vendored_at:
            return self.vendored_at + repository_path
        if not repository_path.startswith(self.archive_root):
            return None
        return repository_path[len(self.archive_root):]


@dataclass
class KB:
    root: Path  # the repository root: the folder holding gotchas/
    engines: dict[str, Engine] = field(default_factory=dict)
    schemes: dict[str, str] = field(default_factory=dict)  # term -> description
    concepts: dict[str, str] = field(default_factory=dict)
    #: term -> description, the worst first: audit, the site and SARIF rank by this order.
    severities: dict[str, str] = field(default_factory=dict)

    @property
    def entries_dir(self) -> Path:
        return self.root / ENTRIES_DIR

    def entry_files(self) -> list[Path]:
        return sorted(self.entries_dir.glob("*.md"))


def find_root(start: str | os.PathLike | None = None) -> Path | None:
    """The nearest folder, from `start` upward, that holds gotchas/engines.yaml."""
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ENTRIES_DIR / ENGINES_FILE).is_file():
            return folder
    return None


def load(root: str | os.PathLike) -> KB:
    root = Path(root)
    kb = KB(root)
    kb.schemes = _vocabulary(root / ENTRIES_DIR / SCHEMES_FILE)
    kb.concepts = _vocabulary(root / ENTRIES_DIR / CONCEPTS_FILE)
    kb.severities = _vocabulary(root / ENTRIES_DIR / SEVERITIES_FILE)
    data = _read(root / ENTRIES_DIR / ENGINES_FILE)
    for key, node in data.value.items():
        where = f"{root / ENTRIES_DIR / ENGINES_FILE}:{node.line}"
        problem = name_problem(key)
        if problem:  # the key names ledger/<engine>.json and the site's folders
            raise KBError(f"{root / ENTRIES_DIR / ENGINES_FILE}:{data.key_lines.get(key, node.line)}: "
                          f"engine key {key!r} {problem}")
        if not node.is_mapping:
            raise KBError(f"{where}: engine {key!r} must be a mapping")
        unknown = set(node.value) - _ENGINE_FIELDS
        missing = _ENGINE_REQUIRED - set(node.value)
        if unknown or missing:
            raise KBError(f"{where}: engine {key!r}: unknown {sorted(unknown)}, missing {sorted(missing)}")
        surface, primary = _surface(node.value.pop("surface", None), where)
        values = {k: str(v.value) for k, v in node.value.items()}
        if "tag_pattern" in values and "{version}" not in values["tag_pattern"]:
            raise KBError(f"{where}: engine {key!r}: tag_pattern must contain {{version}}")
        if "tag_pattern" not in values and not values.get("vendored_at"):
            raise KBError(f"{where}: engine {key!r}: missing ['tag_pattern'] (only a vendored engine has none)")
        root_folder = values.get("archive_root", "")
        if root_folder and not root_folder.endswith("/"):
            root_folder += "/"
        values["archive_root"] = root_folder
        vendored = values.get("vendored_at", "")
        if vendored:
            line = node.key_lines.get("vendored_at", node.line)
            from .sources import check_repository_path

            problem = check_repository_path(vendored.rstrip("/"))
            if problem or root_folder:
                raise KBError(f"{root / ENTRIES_DIR / ENGINES_FILE}:{line}: engine {key!r}: vendored_at "
                              f"{vendored!r}: " + (problem or "an engine has archive_root or vendored_at, not both"))
            values["vendored_at"] = vendored.rstrip("/") + "/"
        problem = name_problem(values["oldest"], "version") if values.get("oldest") else None
        if problem:
            raise KBError(f"{root / ENTRIES_DIR / ENGINES_FILE}:{node.key_lines.get('oldest', node.line)}: "
                          f"engine {key!r}: oldest {values['oldest']!r} {problem}")
        kb.engines[key] = Engine(key=key, **values, surface=surface, surface_primary=primary)
    return kb


def _surface(node: _yaml.Node | None, where: str) -> tuple[tuple, tuple[str, ...]]:
    """An engine's `surface` mapping: kind -> list of path patterns (repository paths)."""
    if node is None:
        return (), ()
    if not node.is_mapping:
        raise KBError(f"{where}: 'surface' must map a kind ({', '.join(SURFACE_KINDS)}) to path patterns")
    found, primary = [], ()
    for kind, patterns in node.value.items():
        if kind not in SURFACE_KINDS and kind != SURFACE_PRIMARY:
            raise KBError(f"{where}: surface kind {kind!r} is not one of {', '.join(SURFACE_KINDS)}, "
                          f"{SURFACE_PRIMARY}")
        if not patterns.is_sequence or not all(isinstance(p.value, str) and p.value for p in patterns.value):
            raise KBError(f"{where}: surface {kind!r} must be a list of path patterns")
        texts = tuple(p.value for p in patterns.value)
        for text in texts:
            if text.startswith("/") or ".." in text.split("/") or "\\" in text:
                raise KBError(f"{where}: surface pattern {text!r} must be a repository path")
        if kind == SURFACE_PRIMARY:
            primary = texts
        else:
            found.append((SURFACE_KINDS[kind], texts))
    return tuple(found), primary


def _read(path: Path) -> _yaml.Node:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise KBError(f"{path}: cannot read: {exc}") from None
    try:
        node = _yaml.load(text)
    except _yaml.YAMLProblem as exc:
        raise KBError(f"{path}:{exc.line}: {exc.message}") from None
    if node is None or not node.is_mapping:
        raise KBError(f"{path}:1: must be a mapping")
    return node


def _vocabulary(path: Path) -> dict[str, str]:
    """A closed vocabulary: each term a kebab-case key with a one-line description."""
    data = _read(path)
    terms = {}
    for term, node in data.value.items():
        problem = name_problem(term)
        if problem:  # a term names a page of the site
            raise KBError(f"{path}:{data.key_lines.get(term, node.line)}: term {term!r} {problem}")
        if not isinstance(node.value, str) or not node.value.strip():
            raise KBError(f"{path}:{node.line}: {term!r} needs a one-line description")
        terms[term] = node.value.strip()
    return terms
