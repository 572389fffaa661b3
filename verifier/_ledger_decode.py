"""Decoding untrusted ledger and evidence files: their parsed JSON checked value by value, or refused (LedgerError).

The ledger is data a pull request can change, and its keys later name files on
the site, so every value must be of its type and every key one the format has,
release versions and entry and check ids names by `safety.name_problem`; else
the file is refused, naming it and the first bad location
(`releases/0.10.0/entries/foo/checks/bar/verdict`), before anything is written.

Format 1 (before `missing` and forms) is read and migrated: `changed` with
`file-missing` or `symbol-missing` becomes `missing`, every verdict is of
form 0, an entry's `verdict` becomes its `status` (`error` becoming
`unverified`). It is written back as the current format.

Part of `verifier.ledger`, which re-exports `decode`, `decode_evidence`,
READABLE_FORMATS and LedgerError.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable

from ._ledger_records import CheckRecord, EngineLedger, EntryRecord, ReleaseRecord
from ._ledger_text import _RELEASE_META, FORMAT_VERSION
from .model import CHANGED, ERROR, HOLDS, MISSING, MISSING_REASONS, STATUSES, VERDICTS, entry_status
from .safety import name_problem

#: Formats this verifier reads (older ones are migrated on reading).
READABLE_FORMATS = (1, 2, 3)


class LedgerError(Exception):
    """The ledger cannot be read, written or locked; the message says which file and why."""


_RESTORE = "restore it from git, or delete it and re-run `gotchas verify`"


class _Malformed(Exception):
    """A value of a ledger or evidence file that is not what the format has there. The message says what; `at`
    is where (keys from the top, put in front as the error passes up through the records that hold it);
    `advice` what to do about it."""

    def __init__(self, message: str, *at: object, advice: str = _RESTORE) -> None:
        super().__init__(message)
        self.at = list(at)
        self.advice = advice

    def within(self, *at: object) -> _Malformed:
        self.at[:0] = at
        return self

    def refusal(self, where: str) -> LedgerError:
        location = f"{_location(self.at)}: " if self.at else ""
        return LedgerError(f"{where}: {location}{self}; {self.advice}")


def _location(at: Iterable[object]) -> str:
    """Keys as a JSON Pointer without its leading slash (`releases/0.10.0/entries/e/checks/c/verdict`), each
    escaped (`~0` for `~`, `~1` for `/`, an empty key as `""`), so that no control character and no long key
    reaches the terminal."""
    parts = []
    for key in at:
        text = json.dumps(str(key))[1:-1].replace("~", "~0").replace("/", "~1") or '""'
        parts.append(text if len(text) <= 80 else text[:77] + "...")
    return "/".join(parts)


def _kind(value: object) -> str:
    """What a JSON value is, for a message (a hostile value itself is never shown whole)."""
    if isinstance(value, str):
        return json.dumps(value if len(value) <= 40 else value[:37] + "...")
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return "a number"
    return "a list" if isinstance(value, list) else "an object"


def _wrong(data: dict, key: str, must: str) -> _Malformed:
    """The error of `data[key]`, which is not what it must be (or missing)."""
    return _Malformed(f"{must}, not {_kind(data[key])}" if key in data else f"missing; {must}", key)


def _unknown(known: Iterable[str]) -> str:
    return f"not a key this format has ({', '.join(sorted(known))})"


def _exact_keys(data: dict, keys: Collection[str]) -> None:
    """`data` has each of `keys` and no other."""
    for key in data:
        if key not in keys:
            raise _Malformed(_unknown(keys), key)
    for key in keys:
        if key not in data:
            raise _Malformed("missing", key)


def _text(value: object, key: str) -> None:
    if type(value) is not str:
        raise _Malformed(f"must be text, not {_kind(value)}", key)


def _line_numbers(value: object, key: str) -> None:
    """The first and the last line of a place: two line numbers, in order."""
    if type(value) is not list or len(value) != 2:
        raise _Malformed(f"must be two line numbers, not {_kind(value)}", key)
    for i, number in enumerate(value):
        if type(number) is not int or number < 1:
            raise _Malformed(f"must be a line number (1 or more), not {_kind(number)}", key, i)
    if value[0] > value[1]:
        raise _Malformed(f"must be two line numbers in order, not {value[0]} then {value[1]}", key)


def _name(value: str, kind: str, what: str, *at: object) -> None:
    problem = name_problem(value, kind)
    if problem is not None:
        raise _Malformed(f"not {what}: it {problem}", *at)


_CHECK_TEXT = ("reason", "path", "symbol", "hint", "message", "check")
_CHECK_KEYS = frozenset(("verdict", "form", "lines", "sha256", "values", *_CHECK_TEXT))
_ENTRY_KEYS = {1: frozenset(("verdict", "checks")), 2: frozenset(("status", "checks"))}
_RELEASE_KEYS = frozenset((*_RELEASE_META, "commit", "entries"))
_COMMIT = re.compile(r"[0-9a-f]{40}")
_TOP_KEYS = frozenset(("engine", "format", "releases"))
_SHA = re.compile(r"[0-9a-f]{1,64}")
_VALUE_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,39}")
_MAX_VALUE = 1000
#: The verdicts of format 1, before `missing`.
_FORMAT_1_VERDICTS = (HOLDS, CHANGED, ERROR)


class _Decoder:
    """Records from one ledger file's JSON, every value checked for its type. A check record that recurs from
    release to release (the same file content, the same verdict) is decoded once and shared, and so is an entry
    record all of whose checks are shared: reading is cheaper, and writing encodes each shared record once."""

    def __init__(self, fmt: int) -> None:
        self.fmt = fmt
        self.verdicts = VERDICTS if fmt >= 2 else _FORMAT_1_VERDICTS
        self.entry_keys = _ENTRY_KEYS[min(fmt, 2)]
        self._checks: dict[tuple, CheckRecord] = {}
        self._entries: dict[tuple, EntryRecord] = {}
        self._names: set[str] = set()  # entry and check ids found to be names

    def check(self, data: object) -> CheckRecord:
        if type(data) is not dict:
            raise _Malformed(f"must be a check verdict (an object), not {_kind(data)}")
        get = data.get
        lines, form = get("lines"), get("form")
        key: tuple | None  # what the record is looked up by, when its numbers are ints
        # Only a record whose numbers are ints (not True, not 1.0, which equal them) is looked up: a record
        # found has the same length and equal fields, and so no other key (the one stored had none) and no
        # value of another type (text equals only text).
        if (form is None or type(form) is int) and (lines is None or type(lines) is list and len(lines) == 2
                                                     and type(lines[0]) is int and type(lines[1]) is int):
            values = get("values")
            key = (len(data), get("verdict"), get("reason"), form, get("path"),
                   None if lines is None else (lines[0], lines[1]), get("symbol"), get("hint"), get("message"),
                   get("sha256"), get("check"),
                   tuple(values.items()) if type(values) is dict else values)
            try:
                found = self._checks.get(key)
            except TypeError:  # a list or an object where text belongs: found by _new_check below
                found = key = None
            if found is not None:
                return found
        else:
            key = None
        found = self._new_check(data)
        if key is not None:
            self._checks[key] = found
        return found

    def _new_check(self, data: dict) -> CheckRecord:
        for key, value in data.items():  # in the file's order: the first bad key is the one reported
            if key == "verdict":
                if type(value) is not str or value not in self.verdicts:
                    raise _Malformed(f"must be one of {', '.join(self.verdicts)}, not {_kind(value)}", key)
            elif key in _CHECK_TEXT:
                _text(value, key)
            elif key == "sha256":
                if type(value) is not str or not _SHA.fullmatch(value):
                    raise _Malformed(f"must be hex digits of a sha256, not {_kind(value)}", key)
            elif key == "form":
                if type(value) is not int or value < 0:
                    raise _Malformed(f"must be a form number (0 or more), not {_kind(value)}", key)
            elif key == "lines":
                _line_numbers(value, key)
            elif key == "values" and self.fmt >= 3:
                if type(value) is not dict or not value:
                    raise _Malformed(f"must be an object (value name -> the text it bound), not {_kind(value)}", key)
                for name, text in value.items():
                    if not _VALUE_NAME.fullmatch(name):
                        raise _Malformed("not a value name (capitals, like CAP)", key, name)
                    if type(text) is not str or len(text) > _MAX_VALUE:
                        raise _Malformed(f"must be text of at most {_MAX_VALUE} characters, not {_kind(text)}",
                                         key, name)
            else:
                raise _Malformed(_unknown(_CHECK_KEYS), key)
        if "verdict" not in data:
            raise _wrong(data, "verdict", f"must be one of {', '.join(self.verdicts)}")
        verdict, reason, form, lines = data["verdict"], data.get("reason"), data.get("form"), data.get("lines")
        if self.fmt == 1:  # before `missing` and forms: a place not found was `changed`, and every check had one form
            if verdict == CHANGED and reason in MISSING_REASONS:
                verdict = MISSING
            form = 0 if verdict != ERROR else None
        values = data.get("values")
        return CheckRecord(verdict, reason, form, data.get("path"), tuple(lines) if lines else None,
                           data.get("symbol"), data.get("hint"), data.get("message"), data.get("sha256"),
                           data.get("check"), tuple(values.items()) if values else None)

    def name(self, value: str, what: str, *at: object) -> None:
        if value not in self._names:
            _name(value, "id", what, *at)
            self._names.add(value)

    def entry(self, data: object, version: str) -> EntryRecord:
        if type(data) is not dict:
            raise _Malformed(f"must be an entry record (an object), not {_kind(data)}")
        for key in data:
            if key not in self.entry_keys:
                raise _Malformed(_unknown(self.entry_keys), key)
        found = data.get("checks")
        if type(found) is not dict:
            raise _wrong(data, "checks", "must be an object (check id -> verdict)")
        checks = {}
        names = self._names
        for check, value in found.items():
            if check not in names:
                self.name(check, "a check id", "checks", check)
            try:
                checks[check] = self.check(value)
            except _Malformed as exc:
                raise exc.within("checks", check) from None
        if self.fmt == 1:  # the entry's `verdict`, recomputed by today's rules (an old `error` is `unverified`)
            old = data.get("verdict")
            if type(old) is not str or old not in _FORMAT_1_VERDICTS:
                raise _wrong(data, "verdict", f"must be one of {', '.join(_FORMAT_1_VERDICTS)}")
            status = entry_status(version, (c.verdict for c in checks.values()))
        else:
            written = data.get("status")
            if type(written) is not str or written not in STATUSES:
                raise _wrong(data, "status", f"must be one of {', '.join(STATUSES)}")
            status = written
        key = (status, tuple((name, id(record)) for name, record in checks.items()))
        found = self._entries.get(key)
        if found is None:
            found = self._entries[key] = EntryRecord(status, checks)
        return found

    def release(self, record: object, version: str) -> ReleaseRecord:
        if type(record) is not dict:
            raise _Malformed(f"must be a release record (an object), not {_kind(record)}")
        meta = dict.fromkeys(_RELEASE_META)
        for key, value in record.items():
            if key in meta:
                if value is not None and type(value) is not str:
                    raise _Malformed(f"must be text or null, not {_kind(value)}", key)
                meta[key] = value
            elif key == "commit":
                if type(value) is not str or not _COMMIT.fullmatch(value):
                    raise _Malformed("must be a commit id (40 lowercase hex digits)", key)
                meta[key] = value
            elif key != "entries":
                raise _Malformed(_unknown(_RELEASE_KEYS), key)
        found = record.get("entries")
        if type(found) is not dict:
            raise _wrong(record, "entries", "must be an object (entry id -> entry record)")
        entries = {}
        for entry, value in found.items():
            self.name(entry, "an entry id", "entries", entry)
            try:
                entries[entry] = self.entry(value, version)
            except _Malformed as exc:
                raise exc.within("entries", entry) from None
        return ReleaseRecord(**meta, entries=entries)


def decode(data: object, engine: str, where: str) -> EngineLedger:
    """The ledger of `engine` from a file's parsed JSON; LedgerError, naming `where` and the first bad location
    in it, when it is not one."""
    try:
        return _decode(data, engine)
    except _Malformed as exc:
        raise exc.refusal(where) from None


def _decode(data: object, engine: str) -> EngineLedger:
    if type(data) is not dict:
        raise _Malformed(f"not a ledger of {engine}: not an object but {_kind(data)}")
    for key in data:
        if key not in _TOP_KEYS:
            raise _Malformed(_unknown(_TOP_KEYS), key)
    if data.get("engine") != engine:
        raise _wrong(data, "engine", f"not a ledger of {engine}")
    fmt = data.get("format")
    if type(fmt) is not int:
        raise _Malformed("no ledger format number", "format")
    shown = fmt if abs(fmt) < 10 ** 9 else "..."
    if fmt > FORMAT_VERSION:
        raise _Malformed(f"written by a newer verifier (format {shown})", "format", advice="upgrade gotchas")
    if fmt not in READABLE_FORMATS:
        raise _Malformed(f"ledger format {shown} is not one this verifier reads "
                         f"({', '.join(map(str, READABLE_FORMATS))})", "format",
                         advice="delete it and re-run `gotchas verify`")
    found = data.get("releases")
    if type(found) is not dict:
        raise _wrong(data, "releases", "must be an object (release version -> release record)")
    releases = {}
    decoder = _Decoder(fmt)
    for version, record in found.items():
        _name(version, "version", "a release version", "releases", version)
        try:
            releases[version] = decoder.release(record, version)
        except _Malformed as exc:
            raise exc.within("releases", version) from None
    return EngineLedger(engine, releases, migrated=fmt < FORMAT_VERSION)


_EVIDENCE_KEYS = ("engine", "version", "checks")
#: Written from verifier 0.x of #29 on; a file without them has no excerpts of older releases.
_EVIDENCE_HISTORY_KEYS = ("windows", "at")
_EXCERPT_KEYS = ("lines", "match", "path", "start", "verdict")


def decode_evidence(data, engine: str, where: str) -> dict:
    """An evidence file's parsed JSON, checked to be what `verify` writes (so that nothing else reaches the
    site); LedgerError, naming `where` and the first bad location in it, when it is not."""
    try:
        _check_evidence(data, engine)
    except _Malformed as exc:
        raise exc.refusal(where) from None
    return data


def _check_evidence(data: object, engine: str) -> None:
    if type(data) is not dict:
        raise _Malformed(f"not evidence of {engine}: not an object but {_kind(data)}")
    for key in data:
        if key not in _EVIDENCE_KEYS + _EVIDENCE_HISTORY_KEYS:
            raise _Malformed(_unknown(_EVIDENCE_KEYS + _EVIDENCE_HISTORY_KEYS), key)
    for key in _EVIDENCE_KEYS:
        if key not in data:
            raise _Malformed("missing", key)
    if data["engine"] != engine:
        raise _Malformed(f"not evidence of {engine} (it says {_kind(data['engine'])})", "engine")
    if data["version"] is not None:
        _name(data["version"], "version", "a release version", "version")
    checks = data["checks"]
    if type(checks) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> excerpt), not {_kind(checks)}", "checks")
    for name, excerpt in checks.items():
        entry, slash, check = name.partition("/")
        if not slash:
            raise _Malformed("not an entry id/check id", "checks", name)
        _name(entry, "id", "an entry id/check id", "checks", name)
        _name(check, "id", "an entry id/check id", "checks", name)
        try:
            _check_excerpt(excerpt)
        except _Malformed as exc:
            raise exc.within("checks", name) from None


    _check_history(data.get("windows", {}), data.get("at", {}))


def _check_history(windows: object, at: object) -> None:
    """`windows`: entry/check -> the distinct excerpts (lists of lines) it had; `at`: entry/check -> version ->
    [index into its windows, number of the first line]. A bad value is refused where it is. Where the two do not
    agree (a check's windows no release names, a release naming an excerpt that is not there), which side is wrong
    is unknown: the refusal names both places."""
    if type(windows) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> excerpts), not {_kind(windows)}", "windows")
    if type(at) is not dict:
        raise _Malformed(f"must be an object (entry id/check id -> releases), not {_kind(at)}", "at")
    for where, found in (("windows", windows), ("at", at)):
        for name in found:
            entry, slash, check = name.partition("/")
            if not slash:
                raise _Malformed("not an entry id/check id", where, name)
            _name(entry, "id", "an entry id/check id", where, name)
            _name(check, "id", "an entry id/check id", where, name)
    for name, found in windows.items():
        if type(found) is not list:
            raise _Malformed(f"must be a list of excerpts, not {_kind(found)}", "windows", name)
        for i, lines in enumerate(found):
            if type(lines) is not list or not all(type(line) is str for line in lines):
                raise _Malformed("must be a list of lines of text", "windows", name, i)

    def pointer(*parts: str) -> str:
        return "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)

    # what one side names and the other has not: both named, the side at fault being unknown
    unnamed = [name for name in windows if name not in at]
    dangling = [name for name in at if name not in windows]
    if unnamed:
        also = f"; and: {pointer('at', dangling[0])}: names excerpts windows has not" if dangling else ""
        raise _Malformed(f"are no release's excerpts: {pointer('at', unnamed[0])}: is not there{also}", "windows",
                         unnamed[0])
    for name, versions in at.items():
        if type(versions) is not dict:
            raise _Malformed(f"must be an object (version -> excerpt), not {_kind(versions)}", "at", name)
        if name not in windows:
            raise _Malformed(f"names excerpts, but: {pointer('windows', name)}: is not there", "at", name)
        for version, ref in versions.items():
            _name(version, "version", "a release version", "at", name, version)
            if not (type(ref) is list and len(ref) == 2 and all(type(n) is int for n in ref) and ref[1] >= 1
                    and ref[0] >= 0):
                raise _Malformed("must be [an index into this check's windows, a line number]", "at", name, version)
            if ref[0] >= len(windows[name]):
                raise _Malformed(f"names an excerpt that is not there: {pointer('windows', name)}: has "
                                 f"{len(windows[name])}", "at",
                                 name, version, 0)


def _check_excerpt(excerpt: object) -> None:
    if type(excerpt) is not dict:
        raise _Malformed(f"must be an excerpt (an object), not {_kind(excerpt)}")
    _exact_keys(excerpt, _EXCERPT_KEYS)
    _text(excerpt["path"], "path")
    if type(excerpt["verdict"]) is not str or excerpt["verdict"] not in VERDICTS:
        raise _Malformed(f"must be one of {', '.join(VERDICTS)}, not {_kind(excerpt['verdict'])}", "verdict")
    if type(excerpt["start"]) is not int or excerpt["start"] < 1:
        raise _Malformed(f"must be a line number (1 or more), not {_kind(excerpt['start'])}", "start")
    _line_numbers(excerpt["match"], "match")
    lines = excerpt["lines"]
    if type(lines) is not list:
        raise _Malformed(f"must be a list of lines of text, not {_kind(lines)}", "lines")
    for i, line in enumerate(lines):
        if type(line) is not str:
            raise _Malformed(f"must be a line of text, not {_kind(line)}", "lines", i)
