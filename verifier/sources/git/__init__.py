"""A git repository as a source: releases are tags, files are read from git objects.

`GitSource` takes a local repository (bare or not) or a URL. A URL is cloned
once into the cache as a bare, blobless partial clone: commits and trees come
with the clone, and git fetches each blob from the remote the first time it is
read. Later sources on the same URL fetch new tags into that clone.

Nothing is checked out. Every object is read through GitPython's persistent
`git cat-file --batch` and `--batch-check` processes, one pair per source,
shared by its snapshots; `close()` ends them. A source is not thread-safe.

What a snapshot hands out is what the commit's trees hold, never a file of the
local repository (`.git/config`, hooks, the work tree's uncommitted files). A
URL's credentials (`https://user:token@host/...`) are used to clone and fetch,
and never appear in a message: messages reach reports and CI logs.

The package: `source` (`GitSource`: the releases, tags, and the commit queries), `snapshot` (`GitSnapshot`: one
commit's files, read from its trees and blobs through the source's git processes), `repo` (opening a
repository, cloning a URL's into the cache), `errors` (git's failures as messages). Import from here.
"""

from __future__ import annotations

from .snapshot import GitSnapshot
from .source import GitSource

__all__ = ["GitSnapshot", "GitSource"]
