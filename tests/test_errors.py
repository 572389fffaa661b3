"""One error base with an exit code (verifier/errors.py), caught once in the command line (`cli.main`)."""

from __future__ import annotations

import ast
import builtins
import importlib
from pathlib import Path

import pytest

from verifier import cli, errors
from verifier.cli._common import EXIT_CODES
from verifier.errors import GotchasError

PACKAGE = Path(__file__).resolve().parent.parent / "verifier"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _exception_classes() -> list[tuple[str, str, type | None]]:
    """(module, name, the class when it is defined at the top of its module) of every exception class written in
    verifier/, found in the source: a class whose base is an exception, of Python, of the package or of a
    library (a class nested in a function is judged by the names of its bases)."""
    defined: list[tuple[str, ast.ClassDef, bool]] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(node) for node in tree.body}
        defined += [(_module_name(path), node, id(node) in top) for node in ast.walk(tree)
                    if isinstance(node, ast.ClassDef)]
    names = {name for name in dir(builtins) if isinstance(getattr(builtins, name), type)
             and issubclass(getattr(builtins, name), BaseException)}
    found: dict[tuple[str, str], type | None] = {}
    changed = True
    while changed:
        changed = False
        for module, node, at_top in defined:
            key = (module, node.name)
            if key in found:
                continue
            cls = getattr(importlib.import_module(module), node.name, None) if at_top else None
            if isinstance(cls, type):
                is_exception = issubclass(cls, BaseException)
            else:
                is_exception = any(ast.unparse(b).rpartition(".")[2] in names for b in node.bases)
            if is_exception:
                found[key] = cls if isinstance(cls, type) else None
                names.add(node.name)
                changed = True
    return [(module, name, cls) for (module, name), cls in sorted(found.items())]


def _gotchas_errors() -> list[type[GotchasError]]:
    seen: list[type[GotchasError]] = []
    todo: list[type[GotchasError]] = [GotchasError]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


def test_every_exception_class_is_a_gotchas_error_or_listed_as_internal():
    classes = _exception_classes()
    assert len(classes) > 20  # the walk sees the package's classes: KBError, SourceUnavailable, LedgerError, ...
    wrong = [f"{module}.{name}" for module, name, cls in classes
             if name != "GotchasError" and name not in errors.INTERNAL
             and not (cls is not None and issubclass(cls, GotchasError))]
    assert not wrong, f"derive these from verifier.errors.GotchasError, or list them in errors.INTERNAL: {wrong}"
    listed_but_user = [f"{module}.{name}" for module, name, cls in classes
                       if name in errors.INTERNAL and cls is not None and issubclass(cls, GotchasError)]
    assert not listed_but_user
    assert set(errors.INTERNAL) <= {name for _, name, _ in classes}, "errors.INTERNAL names a class that is gone"


def test_every_gotchas_error_names_an_exit_code_the_commands_document():
    for module, _, _ in _exception_classes():
        importlib.import_module(module)  # every subclass defined
    subclasses = _gotchas_errors()
    assert {c.__name__ for c in subclasses} >= {"KBError", "SourceUnavailable", "LedgerError", "UsageError",
                                                "LintRefusal", "ReleaseNotFound", "CompiledKBError"}
    for cls in subclasses:
        assert "exit_code" in vars(cls), f"{cls.__qualname__}: give its exit code on its class line"
        assert cls.exit_code in EXIT_CODES and cls.exit_code != errors.EXIT_OK, cls
    assert GotchasError.exit_code in EXIT_CODES


def test_the_exit_codes_are_the_ones_the_commands_document():
    from verifier.cli import _common

    assert (_common.EXIT_OK, _common.EXIT_FINDINGS, _common.EXIT_USAGE, _common.EXIT_ERROR) == \
        (errors.EXIT_OK, errors.EXIT_FINDINGS, errors.EXIT_USAGE, errors.EXIT_ERROR) == (0, 1, 2, 3)


def _raising(error: BaseException):
    def run(args):
        raise error
    return run


@pytest.mark.parametrize("error", [
    "verifier.kb.KBError", "verifier.sources.SourceUnavailable", "verifier.ledger.LedgerError",
    "verifier.cli._common.UsageError", "verifier.cli._common.LintRefusal", "verifier.run.ReleaseNotFound",
    "verifier.rewrite.RewriteError", "verifier.deployment.EnvironmentFailed",
])
def test_main_prints_the_message_once_and_exits_with_the_errors_code(error, monkeypatch, capsys):
    module, _, name = error.rpartition(".")
    cls = getattr(importlib.import_module(module), name)
    monkeypatch.setattr(cli, "run_schema", _raising(cls("gotchas/engines.yaml:3: something is wrong")))
    code = cli.main(["schema"])
    out, err = capsys.readouterr()
    assert (code, out, err) == (cls.exit_code, "", "gotchas: gotchas/engines.yaml:3: something is wrong\n")


def test_a_path_error_says_its_path_and_reason():
    from verifier.safety import PathError

    problem = PathError("ledger/vllm.json", "is a symbolic link")
    assert (problem.message, str(problem), problem.reason) == ("ledger/vllm.json is a symbolic link",) * 2 + (
        "is a symbolic link",)
    assert problem.exit_code == errors.EXIT_USAGE


def test_an_error_keeps_its_other_base():
    from verifier.run import ReleaseNotFound

    with pytest.raises(LookupError, match="vllm: no release 9.9"):
        raise ReleaseNotFound("vllm: no release 9.9")


def test_a_run_says_it_failed_from_its_notes_not_their_words():
    from verifier.run import VerifyRun
    from verifier.verify import Note

    run = VerifyRun(notes=[Note("note: sglang checks not verified"), Note("error: but not a failure")])
    assert not run.failed
    run.notes.append(Note("vllm: cannot list releases", failed=True))
    assert run.failed and run.notes[-1] == "vllm: cannot list releases"
