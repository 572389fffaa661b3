"""A wheel's RECORD: which member it is, the digests it lists, and whether a member's content matches
its listed digest (only sha256 or stronger counts)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import re
from collections.abc import Collection

from .members import ArchiveError


def record_path(paths: Collection[str]) -> str | None:
    """The wheel's `*.dist-info/RECORD`, or None when there is not exactly one."""
    found = [p for p in paths if re.fullmatch(r"[^/]+\.dist-info/RECORD", p)]
    return found[0] if len(found) == 1 else None


def parse_record(data: bytes) -> dict[str, tuple[str, str]]:
    """The digests a wheel's RECORD lists: path -> (algorithm, urlsafe-base64 digest without padding)."""
    digests = {}
    try:
        rows = csv.reader(io.StringIO(data.decode("utf-8")))
        for row in rows:
            if len(row) >= 2 and "=" in row[1]:
                algorithm, _, value = row[1].partition("=")
                digests[row[0]] = (algorithm, value)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ArchiveError(f"unreadable RECORD: {exc}") from None
    return digests


def matches_record(content: bytes, listed: tuple[str, str]) -> bool:
    """Whether `content` has the digest RECORD lists; only sha256 (or stronger) counts."""
    algorithm, value = listed
    if algorithm not in ("sha256", "sha384", "sha512"):
        return False
    digest = base64.urlsafe_b64encode(hashlib.new(algorithm, content).digest()).rstrip(b"=").decode("ascii")
    return digest == value
