"""The Python package index as a source: releases from the PEP 691 JSON simple API, code from their archives.

Which index: the one pip is configured with, so that mirrors work: PIP_INDEX_URL,
else `index-url` from pip's configuration files (the `install` section, then
`global`), else pip's own default. Only that primary index is read; extra
indexes are not. A CA bundle set for pip (PIP_CERT, or `cert` in its
configuration) is used for https.

Which versions: every version with a file that is neither yanked nor without
a sha256 digest; pre- and dev-releases only when asked for. In PEP 440 order.

Which archive a version is read from: its sdist (a .tar.gz before an old
.zip) where there is one; else a wheel: the pure-Python `py3-none-any` one if
there is one, else the first by file name (one fixed choice, so that a
version's identity does not depend on the machine that verifies it).

What is verified, by how the archive is read:

- An sdist, or a wheel whose server does not answer range requests, is
  downloaded whole into the cache (`archives/`, named by its sha256). The
  sha256 the index lists is checked over the whole file while it streams in;
  a mismatch deletes the file. A cached copy is used after checking its size,
  and its sha256 once per process. Tar members must have their declared size;
  zip members their declared size and CRC-32.
- A wheel is otherwise read with HTTP range requests: its end record, its
  central directory, its RECORD and only the members needed. The archive's own
  digest cannot be checked without the whole file. What is checked: the file's
  total size (from Content-Range) is the size the index lists, on every
  request; each member read decompresses to its declared size and CRC-32;
  RECORD's CRC-32; and each member's sha256 against the one RECORD lists (a
  member RECORD does not list with a sha256 is refused). That proves the
  members consistent with the wheel's own manifest, not that the wheel is the
  one the index vouches for: a server that sends a different but
  self-consistent wheel of the same size is not caught in this mode.

The package: `source` (`PyPISource`, `PyPISnapshot`), `index` (a project's PEP 691 page, and the archive a
version is read from), `pip_config` (which index and CA bundle pip is configured with), `readers` (reading one
archive file: a tar while it downloads, a zip on disk, a wheel by range requests, each behind the member
store of `sources.archive`), `downloads` (the download cache), `http` (the HTTP client: retries, ranges,
proxies) and `deadline` (the watchdog that bounds each request). The archive formats are `sources.archive`'s.
Import from here.
"""

from __future__ import annotations

from .http import HttpClient
from .index import MAX_INDEX_PAGE, ArchiveFile, choose_archive
from .pip_config import configured_cert, configured_index_url
from .source import PyPISnapshot, PyPISource

__all__ = ["MAX_INDEX_PAGE", "ArchiveFile", "HttpClient", "PyPISnapshot", "PyPISource", "choose_archive",
           "configured_cert", "configured_index_url"]
