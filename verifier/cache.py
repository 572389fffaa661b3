"""Where downloads, clones and cached verdicts live: the user cache directory.

GOTCHAS_CACHE_DIR overrides it (tests and CI point it at a folder of their own).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs


def cache_dir(*parts: str) -> Path:
    """A folder under the cache directory, created on first use."""
    base = os.environ.get("GOTCHAS_CACHE_DIR") or platformdirs.user_cache_dir("gotchas", appauthor=False)
    folder = Path(base, *parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder
