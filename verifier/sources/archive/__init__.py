"""Release archives read in memory, never extracted: an sdist's gzipped tar, a zip (a wheel, or an old zip sdist),
a wheel's RECORD, and the store of members already read.

What an archive says is not trusted: member names that are absolute, climb out
with `..` or are not plain files (links, devices, folders) are never returned;
a member over MAX_FILE_BYTES is refused; decompression is capped per member
and in total (a tar's stream at MAX_TAR_BYTES, a zip's members read at
MAX_ZIP_TOTAL), and a zip member must decompress to exactly its declared size
and CRC-32. Problems with the archive as a whole raise
ArchiveError; problems with one member are kept in `Members.refused`.

The package: `members` (what both readers share: `Members`, `ArchiveError`, the rules for member names),
`tar` (`read_tar_members`, one streaming pass over a gzipped tar), `zip` (`ZipReader`, over a range-backed
file), `record` (a wheel's RECORD and its digests), `store` (`MemberStore`, members kept under the cache so
that an archive is not gone through again). Where an archive comes from (a download, range requests) is
`sources.pypi`'s. Import from here.
"""

from __future__ import annotations

from .members import MAX_MEMBERS, ArchiveError, Members, safe_member_name, without_top_folder
from .record import matches_record, parse_record, record_path
from .store import Manifest, MemberStore
from .tar import MAX_TAR_BYTES, Readable, read_tar_members
from .zip import MAX_CENTRAL_DIRECTORY, ZIP_TAIL, ZipReader

__all__ = ["MAX_CENTRAL_DIRECTORY", "MAX_MEMBERS", "MAX_TAR_BYTES", "ZIP_TAIL", "ArchiveError", "Manifest", "Members",
           "MemberStore", "Readable", "ZipReader", "matches_record", "parse_record", "read_tar_members", "record_path",
           "safe_member_name", "without_top_folder"]
