"""Which entries a change touched, for pull-request checks (`gotchas check --changed-since REF`).

An entry file that changed is checked. A change to the verifier, the engine
registry, the vocabularies or the project's dependencies can change any
verdict, so it means checking everything.
"""

from __future__ import annotations

from pathlib import Path

from git import Repo
from git.exc import GitError, InvalidGitRepositoryError, NoSuchPathError

from .errors import EXIT_USAGE, GotchasError
from .kb import CONCEPTS_FILE, ENGINES_FILE, ENTRIES_DIR, KB, SCHEMES_FILE

#: Paths whose change puts every entry in question.
EVERYTHING = (f"{ENTRIES_DIR}/{ENGINES_FILE}", f"{ENTRIES_DIR}/{SCHEMES_FILE}", f"{ENTRIES_DIR}/{CONCEPTS_FILE}",
              "verifier/", "pyproject.toml")


class ChangesError(GotchasError, exit_code=EXIT_USAGE):
    pass


def changed_paths(root: Path, ref: str) -> list[str]:
    """Files changed since the merge base of `ref` and HEAD, committed or not (untracked ones too)."""
    try:
        repo = Repo(root)
    except (InvalidGitRepositoryError, NoSuchPathError):
        raise ChangesError(f"{root} is not a git repository; --changed-since needs one") from None
    try:
        with repo:
            if ref.startswith("-"):
                raise ChangesError(f"{ref!r} is not a revision")
            base = repo.git.merge_base(ref, "HEAD")
            names = set(repo.git.diff("--name-only", base, "--").split("\n"))
            names.update(repo.git.ls_files("--others", "--exclude-standard").split("\n"))
    except GitError as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        raise ChangesError(f"cannot compare with {ref!r}: {detail.strip()}") from None
    return sorted(n for n in names if n)


def entries_to_check(kb: KB, ref: str) -> list[Path] | None:
    """The entry files to check after a change; None when everything must be checked."""
    paths = changed_paths(kb.root, ref)
    if any(p == e or (e.endswith("/") and p.startswith(e)) for p in paths for e in EVERYTHING):
        return None
    files = []
    for p in paths:
        if p.startswith(f"{ENTRIES_DIR}/") and p.endswith(".md") and p.count("/") == 1:
            path = kb.root / p
            if path.is_symlink() or path.exists():  # a link or a device is checked (and refused), never skipped
                files.append(path)
    return files
