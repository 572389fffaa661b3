"""The package's layers (verifier/__init__.py): the matching core reads nothing and caches nothing, and
nothing below the commands imports them."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "verifier"

#: The matching core: a form and a file's content in, a verdict out.
CORE = ["evaluate.py", "matchers.py", *sorted(p.relative_to(PACKAGE).as_posix() for p in (PACKAGE / "code").glob("*.py"))]
#: What reads files, keeps caches or runs commands: never imported by the core.
NOT_IN_CORE = {"sources", "reading", "verdicts", "cache", "verify", "helper", "locate", "ledger", "run", "cli",
               "stats"}


def _imported(path: Path) -> set[str]:
    """The top-level modules of the package that `path` imports (relative imports, resolved)."""
    module = path.relative_to(PACKAGE).with_suffix("").parts
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(module[:-1] if path.name != "__init__.py" else module)
            base = base[: len(base) - (node.level - 1)]
            names = [*base, *(node.module.split(".") if node.module else [])]
            if names:
                found.add(names[0])
            else:  # `from . import x` at the top of the package
                found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[1] for alias in node.names
                         if alias.name.startswith("verifier."))
    return found


def test_the_matching_core_reads_nothing_and_caches_nothing():
    for name in CORE:
        assert not _imported(PACKAGE / name) & NOT_IN_CORE, name


def test_only_the_command_line_imports_the_command_line():
    for path in PACKAGE.rglob("*.py"):
        if path.relative_to(PACKAGE).parts[0] in ("cli", "__main__.py"):
            continue
        assert "cli" not in _imported(path), path


def test_the_import_check_sees_the_imports_it_looks_for():
    """The checks above would pass on files whose imports they misread: they must see imports that are there."""
    assert "reading" in _imported(PACKAGE / "verify.py")  # from .reading import ...
    assert "sources" in _imported(PACKAGE / "reading.py")
    assert {"run", "report"} <= _imported(PACKAGE / "cli" / "_verify.py")  # from .. import kb as kb_module, report, run
    assert "cli" in _imported(PACKAGE / "__main__.py")
    assert "cli" in _imported(PACKAGE / "cli" / "_verify.py")  # from ._common import ...: within cli


def test_the_surface_extractor_and_diff_read_nothing():
    """verifier.surface: `extract`, `model`, `diff` and `conditions` are pure (source text or surfaces in, items
    out); reading a snapshot is `read`'s, the file on disk `store`'s and the ledger's."""
    for name in ("extract.py", "model.py", "diff.py", "conditions.py"):
        path = PACKAGE / "surface" / name
        imported = _imported(path)
        assert not imported & NOT_IN_CORE, (name, imported & NOT_IN_CORE)
    assert "surface" in _imported(PACKAGE / "surface" / "read.py")  # from .store import ...: seen
