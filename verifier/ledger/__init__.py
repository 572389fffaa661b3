"""The ledger: what held where, per engine and release. Machine-written, never hand-edited.

One JSON file per engine (`ledger/<engine>.json`), in a deterministic form:
keys sorted, one line per check verdict, so that a scheduled run's diff reads
as "these verdicts changed". (Beside it, `ledger/evidence/<engine>.json` keeps
the lines each check points at in the newest release, and what the site shows of them at every release.) A file is
replaced atomically (temp file, fsync, rename), so a killed run leaves each
engine's file exactly as before or exactly as after. A lock file keeps two
runs from writing at once.

The package, from the bottom up (a module imports only those before it):

- `records`: the typed records (`CheckRecord`, `EntryRecord`, `ReleaseRecord`), one engine's ledger as
  `verify` fills it (`EngineLedger`), and the evidence a run gathers for the site (`Window`, `Excerpt`,
  `ReleaseEvidence`, `Excerpts`, `EvidenceUpdate`): plain values, no JSON;
- `codec`: the files' JSON both ways, in one place: format 3 written (`encode`, with the layout of a file),
  formats 1 to 3 read from untrusted files (`decode`, which also says how format 1 is migrated), and the
  evidence files likewise;
- `folder`: the ledger folder on disk (`Ledger`): finding, reading, locking and atomically replacing its files.

Callers import from here, never from the modules: every public name of them is re-exported.
`run` reads and writes the ledger (under its lock); `verify` computes what to write.
"""

from __future__ import annotations

from .codec import (
    FORMAT_VERSION,
    READABLE_FORMATS,
    LedgerError,
    check_json,
    decode,
    decode_evidence,
    encode,
    window_at,
)
from .folder import (
    DEFAULT_DIR,
    EVIDENCE_DIR,
    LOCK_FILE,
    MAX_EVIDENCE_BYTES,
    MAX_LEDGER_BYTES,
    SURFACE_DIR,
    Ledger,
    write_atomically,
)
from .records import (
    SHA_DIGITS,
    WINDOW_CONTEXT,
    WINDOW_LINE,
    WINDOW_MATCH,
    CheckRecord,
    EngineLedger,
    EntryRecord,
    EvidenceUpdate,
    Excerpt,
    Excerpts,
    ReleaseEvidence,
    ReleaseRecord,
    Window,
    parts_holding,
    status_of,
    version_key,
    window,
)

__all__ = ["DEFAULT_DIR", "EVIDENCE_DIR", "FORMAT_VERSION", "LOCK_FILE", "MAX_EVIDENCE_BYTES", "MAX_LEDGER_BYTES",
           "READABLE_FORMATS", "SHA_DIGITS", "SURFACE_DIR", "WINDOW_CONTEXT", "WINDOW_LINE", "WINDOW_MATCH",
           "CheckRecord", "EngineLedger", "EntryRecord", "EvidenceUpdate", "Excerpt", "Excerpts", "Ledger",
           "LedgerError", "ReleaseEvidence", "ReleaseRecord", "Window", "check_json", "decode", "decode_evidence",
           "encode", "parts_holding", "status_of", "version_key", "window", "window_at", "write_atomically"]
