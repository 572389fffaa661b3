"""What the archive readers share: the result of a pass over an archive, the error for an unreadable one,
and the rules a member's name must follow to be handed out.

Two readers return a `Members`: `read_tar_members` (`tar.py`) for a gzipped tar
(an sdist), and `ZipReader` (`zip.py`) for a zip file (a wheel, or an old zip sdist).

What an archive says is not trusted (the package's docstring lists how each
bound holds): these are the rules for names, `safe_member_name`; problems with
the archive as a whole raise ArchiveError, and problems with one member are kept
in `Members.refused`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import EXIT_ERROR, GotchasError

#: The most members an archive may list.
MAX_MEMBERS = 500_000


class ArchiveError(GotchasError, exit_code=EXIT_ERROR):
    """The archive as a whole cannot be read; the message says why."""


@dataclass
class Members:
    """What one pass over an archive found."""

    names: frozenset[str]  # every plain file the archive holds, by its (stripped) path
    contents: dict[str, bytes] = field(default_factory=dict)  # the wanted ones
    refused: dict[str, str] = field(default_factory=dict)  # wanted ones that cannot be handed out, and why


def safe_member_name(name: str) -> str | None:
    """`name` as a plain relative path ('./' and trailing '/' dropped), or None when it is absolute,
    climbs out with '..', or holds backslashes, NULs or a drive letter."""
    if ("\\" not in name and "\x00" not in name and name[1:2] != ":" and "//" not in (framed := f"/{name}/")
            and "/./" not in framed and "/../" not in framed):
        return name  # already plain (most names): what _plain_path would make of it
    return _plain_path(name)


def _plain_path(name: str) -> str | None:
    """The rules of safe_member_name, applied in full."""
    if not name or name.startswith("/") or "\\" in name or "\x00" in name or re.match(r"[A-Za-z]:", name):
        return None
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def without_top_folder(name: str, top: str) -> str | None:
    """`name` inside the archive's single top folder `top` (an sdist's `vllm-0.30.0/`), or None outside it."""
    first, _, rest = name.partition("/")
    return rest if first == top and rest else None

