"""A git repository as a source: releases are tags, files are read from git objects.

`GitSource` takes a local repository (bare or not) or a URL. A URL is cloned
once into the cache as a bare, blobless partial clone (a private folder whose
config holds no URL): commits and trees come with the clone, and the source
fetches each blob from the URL the first time it is read, never git on its own
(a lazy fetch from a remote the repository names is off for every process).
Later sources on the same URL fetch new tags into that clone. Every git process
runs locked down and every clone and fetch has a deadline (`command`).

Nothing is checked out. Every object is read through GitPython's persistent
`git cat-file --batch` and `--batch-check` processes, one pair per source,
shared by its snapshots; `close()` ends them. A source is not thread-safe.

What a snapshot hands out is what the commit's trees hold, never a file of the
local repository (`.git/config`, hooks, the work tree's uncommitted files). A
URL's credentials (`https://user:token@host/...`) are used to clone and fetch,
and never appear in a message: messages reach reports and CI logs.

The package: `source` (`GitSource`: the releases, tags, and the commit queries), `snapshot` (`GitSnapshot`: one
commit's files, read from its trees and blobs through the source's git processes), `repo` (opening a
repository, cloning a URL's into the cache), `command` (how every git process runs: config and transports
locked down, deadlines), `errors` (git's failures as messages). Import from here.
"""

from __future__ import annotations

from .snapshot import GitSnapshot
from .source import GitSource

__all__ = ["GitSnapshot", "GitSource"]
