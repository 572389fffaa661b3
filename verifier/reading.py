"""Reading a release for its checks: the one place where the matching meets files and the verdict cache.

The matching core (`evaluate.evaluate_source`) takes a check's form and a file's
content and returns a verdict; it reads nothing and remembers nothing. Everything
around it is here: reading a file from a snapshot (or not reading it, when a
snapshot can name its content by `digest` and the verdict on that content is
known), parsing each content once (`FileCache`), answering from the verdict cache
and writing new verdicts into it (`Reader.record`, the cache's only writer in a
run: the forms evaluated here and those a worker process evaluated alike).

A place that cannot be read is `error unavailable`, a file the release does not
have is `missing file-missing`: what a failure of the machinery is never
becomes `changed`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Iterable
from typing import NamedTuple

from . import code, stats
from .evaluate import evaluate_source
from .model import ERROR, MISSING, Check, Form, Verdict, check_verdict
from .sources import Snapshot, SourceUnavailable


class FileCache:
    """Parsed files by path and content, so the checks on one file share one parse."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._files: OrderedDict[tuple[str, str], code.SourceFile] = OrderedDict()

    def peek(self, path: str, sha256: str) -> code.SourceFile | None:
        """The parsed file, if this content of `path` is here already (nothing is read or parsed)."""
        found = self._files.get((path, sha256))
        if found is not None:
            self._files.move_to_end((path, sha256))
        return found

    def get(self, path: str, data: bytes, sha256: str | None = None) -> code.SourceFile:
        """The parsed file; `sha256` (hex) spares hashing the data again when the caller has it."""
        sha256 = sha256 or hashlib.sha256(data).hexdigest()
        key = (path, sha256)
        found = self._files.get(key)
        if found is None:
            found = self._files[key] = code.SourceFile(path, data, sha256)
            if len(self._files) > self.size:
                self._files.popitem(last=False)
        else:
            self._files.move_to_end(key)
        return found


_DEFAULT_CACHE = FileCache()


class Unknown(NamedTuple):
    """A file's content on which some form's verdict is not known: it has to be evaluated (`Reader.evaluate_on`)."""

    path: str
    data: bytes
    sha256: str


class Reader:
    """The files of one snapshot as its checks need them, with what `verdicts` (a VerdictCache, or None)
    knows about their contents, and `files` (a FileCache) has parsed of them already."""

    def __init__(self, snapshot: Snapshot, files: FileCache | None = None, verdicts=None) -> None:
        self.snapshot = snapshot
        self.files = files if files is not None else _DEFAULT_CACHE
        self.verdicts = verdicts

    def known(self, form: Form) -> Verdict | Unknown:
        """The verdict of `form` when it is known or cheap (its file is parsed already), else the content to
        evaluate it on (`evaluate_on`). The file is not read when the snapshot can name its content
        without reading it (`digest`: "sha256:<hex>", or an identity of its own such as a git blob id) and
        the verdict on that content is known."""
        snapshot, verdicts = self.snapshot, self.verdicts
        identity = None
        if verdicts is not None:
            try:
                identity = snapshot.digest(form.path)
            except SourceUnavailable as exc:
                return Verdict(ERROR, "unavailable", path=form.path, message=str(exc))
            if identity is not None:
                known_sha = identity[7:] if identity.startswith("sha256:") else verdicts.content_of(identity)
                known = verdicts.get(form, known_sha) if known_sha else None
                if known is not None:
                    return known
                parsed = self.files.peek(form.path, known_sha) if known_sha else None
                if parsed is not None:  # another form on this file read it already
                    return self._evaluate([form], parsed)[0]
        try:
            data = snapshot.read(form.path)
        except SourceUnavailable as exc:
            return Verdict(ERROR, "unavailable", path=form.path, message=str(exc))
        if data is None:
            return Verdict(MISSING, "file-missing", path=form.path, message=f"{form.path} is not in this release")
        sha256 = hashlib.sha256(data).hexdigest()
        if verdicts is not None:
            if identity is not None and not identity.startswith("sha256:"):
                verdicts.learn(identity, sha256)
            known = verdicts.get(form, sha256)
            if known is not None:
                return known
        return Unknown(form.path, data, sha256)

    def known_on(self, form: Form, content: Unknown) -> Verdict | None:
        """The verdict of `form` on a content read already, if the verdict cache has it."""
        return self.verdicts.get(form, content.sha256) if self.verdicts is not None else None

    def evaluate_on(self, forms: Iterable[Form], content: Unknown) -> list[Verdict]:
        """The verdicts of `forms` (all on one file) on `content`, evaluated here and recorded."""
        return self._evaluate(forms, self.files.get(content.path, content.data, content.sha256))

    def record(self, form: Form, verdict: Verdict) -> None:
        """Keep a verdict on a content (`verdict.file_sha`) for the next time: the verdict cache's writer."""
        if self.verdicts is not None:
            self.verdicts.put(form, verdict)

    def evaluate(self, form: Form | Check) -> Verdict:
        """The verdict of one form (or of a check's own form) against the snapshot."""
        if isinstance(form, Check):
            form = form.own
        found = self.known(form)
        if isinstance(found, Unknown):
            found = self.evaluate_on([form], found)[0]
        return found

    def check(self, check: Check, version: str | None = None) -> tuple[int, Verdict] | None:
        """(form index, verdict) of a check at one release: its forms that apply at `version` (by default the
        snapshot's release) evaluated, and combined as docs/format.md says. None when no form applies there."""
        version = version if version is not None else self.snapshot.release.version
        return check_verdict((form.index, self.evaluate(form)) for form in check.forms_at(version))

    def _evaluate(self, forms: Iterable[Form], source: code.SourceFile) -> list[Verdict]:
        verdicts = []
        for form in forms:
            verdict = evaluate_source(form, source)
            stats.count("evaluations")
            self.record(form, verdict)
            verdicts.append(verdict)
        return verdicts


def evaluate(form: Form | Check, snapshot: Snapshot, cache: FileCache | None = None, verdicts=None) -> Verdict:
    """The verdict of one form (or of a check's own form) against one snapshot (`Reader.evaluate`)."""
    return Reader(snapshot, cache, verdicts).evaluate(form)


def evaluate_check(check: Check, snapshot: Snapshot, version: str | None = None, cache: FileCache | None = None,
                   verdicts=None) -> tuple[int, Verdict] | None:
    """(form index, verdict) of a check at one release (`Reader.check`)."""
    return Reader(snapshot, cache, verdicts).check(check, version)
