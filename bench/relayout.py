"""Re-lay the files the KB reads in the latest release of each engine, and count the checks it flips.

For each engine: the files every check of the KB reads (every form that applies at the newest release),
from that release (through the package index and the cache), written into a folder; then, for each
formatter setting, a copy of the folder re-laid by it, and every check evaluated on both. A check that
holds on the original and not on the re-laid copy is a false alarm: a formatter changed how the code
looks, not what it says.

    .venv/bin/python bench/relayout.py [--engine vllm] [--keep DIR]

Settings for Python files: ruff format at line lengths 40, 88 and 200, each with and without magic trailing
commas (`skip-magic-trailing-comma`), and black at 40 and 88. Needs `ruff` and `black` on the PATH of the venv
(both in the `test` extra). For C and C++ files (llama.cpp): clang-format (the `test` extra) in the styles
`gotchas mutate` uses (`verifier.mutants_cpp.STYLES`: LLVM, Google, Chromium, Mozilla, WebKit, narrow and
wide) and in the engine's own `.clang-format`, layout only (the options that rewrite tokens off: braces
inserted, `const` moved, includes sorted, strings split...); then, marked "rewrites tokens", LLVM at 40 columns
and the engine's own style as they are, which do rewrite tokens that the C++ comparison is documented not to
ignore: a flip there names what a check depends on, not a bug. An engine gets the settings of the languages of
the files its checks read. A flipped check that compares code as written (a regular expression) is marked "(as
written)": a re-layout may break it by design (write it as code). Prints a Markdown table; exits 0.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from verifier import kb as kb_module  # noqa: E402
from verifier import mutants_cpp  # noqa: E402
from verifier.entries import load_entry  # noqa: E402
from verifier.model import language_of  # noqa: E402
from verifier.mutate import _structural  # noqa: E402
from verifier.reading import FileCache, evaluate_check  # noqa: E402
from verifier.sources.directory import DirectorySource  # noqa: E402
from verifier.sources.pypi import PyPISource  # noqa: E402

BIN = Path(sys.executable).parent
SETTINGS = [(f"ruff {n}{' skip-magic' if skip else ''}", [str(BIN / "ruff"), "format", "--line-length", str(n),
             "--config", f"format.skip-magic-trailing-comma = {'true' if skip else 'false'}"])
            for n in (40, 88, 200) for skip in (False, True)]
SETTINGS += [(f"black {n}", [str(BIN / "black"), "--quiet", "--line-length", str(n)]) for n in (40, 88)]
#: The name of the setting that re-lays C and C++ files in the engine's own `.clang-format`, layout only.
OWN = "clang-format own .clang-format"


def cpp_settings(binary: str, own_style: Path | None) -> list[tuple[str, list[str]]]:
    """clang-format's settings for a tree of C and C++ files (the files are appended to each command): the
    styles of `gotchas mutate`, layout only, the engine's own style, layout only, and two that rewrite tokens."""
    found = [(f"clang-format {name}", [binary, "-i", "--sort-includes=false",
                                       f"--style={mutants_cpp.style(name.split(',')[0], options)}"])
             for name, options in mutants_cpp.STYLES.items()]
    if own_style is not None:
        layout = own_style.with_name("layout-only.clang-format")
        layout.write_text(mutants_cpp.layout_only_style_file(own_style.read_text(encoding="utf-8")), encoding="utf-8")
        found.append((OWN, [binary, "-i", "--sort-includes=false", f"--style=file:{layout}"]))
    found.append(("clang-format LLVM, ColumnLimit 40 (rewrites tokens)",
                  [binary, "-i", "--style={BasedOnStyle: LLVM, ColumnLimit: 40}"]))
    if own_style is not None:
        found.append(("clang-format own .clang-format (rewrites tokens)", [binary, "-i", f"--style=file:{own_style}"]))
    return found


def tree_of(kb, engine: str, checks, folder: Path) -> str:
    """The files the checks read at the newest release, written into `folder`; a C or C++ engine's
    `.clang-format` (its repository root's) beside it, as `folder`.clang-format."""
    source = PyPISource(kb.engines[engine])
    release = source.releases()[-1]
    snapshot = source.open(release)
    paths = {f.path for c in checks for f in c.forms_at(release.version)}
    for path in sorted(paths):
        data = snapshot.read(path)
        if data is None:
            continue
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if any(language_of(p) == "cpp" for p in paths):
        style = snapshot.read(".clang-format")
        if style is not None:
            folder.with_suffix(".clang-format").write_bytes(style)
    return release.version


def settings_for(folder: Path) -> list[tuple[str, list[str]]]:
    """The settings for the languages of the files in `folder` (each command takes the folder, or for
    clang-format its C and C++ files, as its last arguments)."""
    files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
    found = []
    if any(language_of(p.as_posix()) == "python" for p in files):
        found += SETTINGS
    if any(language_of(p.as_posix()) == "cpp" for p in files):
        binary = mutants_cpp.clang_format()
        if binary is None:
            found.append(("clang-format", None))
        else:
            own = folder.with_suffix(".clang-format")
            found += cpp_settings(binary, own if own.is_file() else None)
    return found


def relay(command: list[str], copy: Path) -> subprocess.CompletedProcess:
    """Run one setting on the copy: a Python formatter on the folder, clang-format on each C and C++ file."""
    if command[0].endswith("clang-format"):
        files = [str(p) for p in sorted(copy.rglob("*")) if p.is_file() and language_of(p.as_posix()) == "cpp"]
        return subprocess.run([*command, *files], capture_output=True, text=True)
    return subprocess.run([*command, str(copy)], capture_output=True, text=True)


def verdicts(engine: str, folder: Path, version: str, checks, archive_root: str) -> dict[str, str]:
    source = DirectorySource(engine, folder, archive_root="")
    snapshot = source.open(source.releases()[0])
    cache = FileCache()
    found = {}
    for entry_id, check in checks:
        result = evaluate_check(check, snapshot, version, cache)
        if result is not None:
            found[f"{entry_id}/{check.id}"] = result[1].status
    return found


def as_written(checks, version: str) -> set[str]:
    """The checks with a form at `version` that compares code as written (a regex, a Python fragment that is not
    Python: `gotchas mutate`'s judgement): a re-layout may break those by design, and the table says so."""
    return {f"{entry_id}/{check.id}" for entry_id, check in checks
            if not all(_structural(form) for form in check.forms_at(version))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append", help="only this engine (repeatable)")
    parser.add_argument("--keep", help="keep the trees in this folder")
    args = parser.parse_args()
    kb = kb_module.load(REPO)
    entries = [loaded.entry for loaded in (load_entry(p) for p in kb.entry_files()) if loaded.entry]
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="relayout-"))
    rows = []
    for engine in args.engine or sorted(kb.engines):
        checks = [(e.id, c) for e in entries for c in e.checks if c.engine == engine]
        original = work / engine / "original"
        version = tree_of(kb, engine, [c for _, c in checks], original)
        before = verdicts(engine, original, version, checks, kb.engines[engine].archive_root)
        holding = {k for k, v in before.items() if v == "holds"}
        written = as_written(checks, version)
        for name, command in settings_for(original):
            if command is None:
                rows.append((engine, version, name, len(holding), "not installed", "pip install -e '.[test]'"))
                continue
            copy = work / engine / "".join(c if c.isalnum() or c in "-." else "-" for c in name)
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(original, copy)
            done = relay(command, copy)
            if done.returncode != 0:
                rows.append((engine, version, name, len(holding), "formatter failed", done.stderr[-300:]))
                continue
            after = verdicts(engine, copy, version, checks, kb.engines[engine].archive_root)
            flipped = sorted((k for k in holding if after.get(k) != "holds"), key=lambda k: (k in written, k))
            flipped = [f"{k} (as written)" if k in written else k for k in flipped]
            rows.append((engine, version, name, len(holding), len(flipped), ", ".join(flipped[:8])
                         + (f" (+{len(flipped) - 8})" if len(flipped) > 8 else "")))
    print("| engine | release | formatter | checks holding | flipped | first flipped |")
    print("| --- | --- | --- | ---: | ---: | --- |")
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
