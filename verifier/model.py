"""Plain typed values shared by every stage: entries, checks, diagnostics, verdicts."""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from packaging.version import InvalidVersion, Version

# The verdicts of a check at a release (docs/format.md, "Verdicts").
HOLDS = "holds"
CHANGED = "changed"
MISSING = "missing"
ERROR = "error"
VERDICTS = (HOLDS, CHANGED, MISSING, ERROR)

#: Reasons a check is `changed`: it found its place, and the claim is not true there.
CHANGED_REASONS = ("not-found", "out-of-order", "not-adjacent", "present")
#: Reasons a check is `missing`: no form found its place (the code may have moved; nothing is said of behaviour).
MISSING_REASONS = ("file-missing", "symbol-missing")
#: Reasons a check is `error` (the machinery could not decide).
ERROR_REASONS = ("unavailable", "invalid", "unparsable")

# The statuses of an entry for one engine at one release, in the order docs/format.md decides them.
NOT_AFFECTED = "not-affected"
UNVERIFIED = "unverified"
STATUSES = (NOT_AFFECTED, HOLDS, CHANGED, UNVERIFIED)


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in an entry, with the place a contributor must look at."""

    path: str
    line: int
    code: str
    message: str
    column: int = 1

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.code} {self.message}"


@functools.lru_cache(maxsize=4096)  # asked for every form at every release, of a few hundred versions
def release_version(text: str) -> Version | None:
    """The PEP 440 version of a release or a bound, or None when it is not one."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


_ZERO = Version("0")


@functools.lru_cache(maxsize=4096)  # asked again and again for the same few hundred versions
def version_key(version: str) -> tuple[int, Version, str]:
    """The order of release strings, the one every list of releases is sorted by: PEP 440 (a pre-release and a
    development release before their release, a post-release after it, a local version after its public one),
    then a version that is not PEP 440 (a checkout, `HEAD`) after every one that is, by its text."""
    found = release_version(version)
    return (0, found, version) if found is not None else (1, _ZERO, version)


def _without_post(v: Version) -> Version:
    text = (f"{v.epoch}!" if v.epoch else "") + ".".join(map(str, v.release))
    if v.pre:
        text += f"{v.pre[0]}{v.pre[1]}"
    if v.dev is not None:
        text += f".dev{v.dev}"
    return Version(text)


def release_spans(versions, among: Sequence[str]) -> str:
    """Versions as runs of consecutive releases of `among` (the tracked releases, in order):
    `0.8.0-0.9.2, 0.11.0`."""
    index = {v: i for i, v in enumerate(among)}
    runs: list[list[str]] = []
    for version in sorted(versions, key=lambda v: index.get(v, -1)):
        if runs and version in index and index.get(runs[-1][1]) == index[version] - 1:
            runs[-1][1] = version
        else:
            runs.append([version, version])
    return ", ".join(a if a == b else f"{a}-{b}" for a, b in runs)


def within(version: str, since: str | None, until: str | None) -> bool:
    """Whether a release lies within inclusive bounds, in PEP 440 order.

    `until` without a post-release takes in its post-releases (`until: 0.11.2`
    includes 0.11.2.post1). A version that is not PEP 440 (a checkout, `HEAD`)
    stands for the newest code: after every bound.
    """
    v = release_version(version)
    if v is None:
        return until is None
    if since is not None:
        low = release_version(since)
        if low is not None and v < low:
            return False
    if until is not None:
        high = release_version(until)
        if high is not None and v > high and not (high.post is None and _without_post(v) <= high):
            return False
    return True


@dataclass(frozen=True)
class Form:
    """One place and shape of a check's claim: the check's own (form 0) or an item of its `earlier` list.

    Everything that matching needs is here, so that the matchers, the verdict
    cache and the worker processes work on forms; `since`/`until` say in which
    releases the form is tried.
    """

    engine: str
    path: str
    matcher: str
    pattern: str
    scope: str | None = None  # the `in` key
    after: str | None = None
    adjacent: bool = False
    since: str | None = None
    until: str | None = None
    index: int = 0  # 0: the check itself; 1...: the items of `earlier`
    line: int = 0  # line of the form in the entry file
    #: The check's named values (`values`): (NAME, the values the claim allows, each as `setting_value` reads
    #: it), for a `$NAME` of the fragment; a match binding another value does not hold.
    values: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def is_python(self) -> bool:
        return is_python_path(self.path)

    @cached_property  # asked for every verdict of every release; a frozen dataclass keeps it valid
    def fingerprint(self) -> str:
        """A short hash of what the form looks for: a verdict of it is reused only while it is unchanged.
        Bounds are not in it: they decide where a form is tried, not what it finds."""
        spec: list[object] = [self.engine, self.path, self.matcher, self.pattern, self.scope, self.after,
                              self.adjacent]
        if self.values:  # only then: the fingerprints of forms without values stay what they were
            spec.append([[name, [str(v) for v in allowed]] for name, allowed in self.values])
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]

    def applies(self, version: str) -> bool:
        return within(version, self.since, self.until)


@dataclass(frozen=True)
class Check:
    """One claim about an engine's source code: its own form (exactly one matcher), and its earlier forms."""

    id: str
    claim: str
    engine: str
    path: str
    matcher: str
    pattern: str
    scope: str | None = None  # the `in` key
    after: str | None = None
    adjacent: bool = False
    line: int = 0  # line of the check's `- id:` item in the entry file
    since: str | None = None
    until: str | None = None
    earlier: tuple[Form, ...] = ()  # items of `earlier`, inheritance resolved, numbered from 1
    values: tuple[tuple[str, tuple[str, ...]], ...] = ()  # `values`: what every form's `$NAME` may bind
    part: str | None = None  # `part`: the part of the entry's claim this check belongs to

    @property
    def is_python(self) -> bool:
        return is_python_path(self.path)

    @cached_property
    def own(self) -> Form:
        """Form 0: the check's own place and code, within its own bounds."""
        return Form(self.engine, self.path, self.matcher, self.pattern, self.scope, self.after, self.adjacent,
                    self.since, self.until, 0, self.line, self.values)

    @cached_property
    def forms(self) -> tuple[Form, ...]:
        return (self.own, *self.earlier)

    def forms_at(self, version: str) -> tuple[Form, ...]:
        """The forms tried at a release; none means the check has no verdict there. Asked for every check at
        every release (and again by the ledger's bookkeeping): answered once per version."""
        known = self.__dict__.get("_forms_at")
        if known is None:
            # a frozen dataclass: kept beside its fields, as cached_property does
            known = self.__dict__["_forms_at"] = {}
        found = known.get(version)
        if found is None:
            found = known[version] = tuple(f for f in self.forms if f.applies(version))
        return found

    @cached_property  # asked for every verdict of every release; a frozen dataclass keeps it valid
    def fingerprint(self) -> str:
        """A short hash of the check as written (every form, with its bounds): a ledger verdict is current
        only while it is unchanged. A check with one form and no bounds has its form's fingerprint."""
        if not self.earlier and self.since is None and self.until is None:
            return self.own.fingerprint
        spec = [[f.fingerprint, f.since, f.until] for f in self.forms]
        return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]


#: `default: computed`: the engine derives the setting (from the GPU, the model, other flags).
COMPUTED = "computed"
#: The words a setting's text means true or false by (a serve line's value, a default the code gives as text).
BOOL_WORDS = {"true": True, "1": True, "yes": True, "on": True, "false": False, "0": False, "no": False,
              "off": False}


def setting_value(value: object) -> object:
    """A setting's value in the one form conditions compare: a bool stays a bool, anything else is its text,
    numbers in canonical form (`0`, `0.0` and `00` are one value; `1e3` is `1000`)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return text
    return text if number != number or number in (float("inf"), float("-inf")) else repr(number).removesuffix(".0")


@dataclass(frozen=True)
class Condition:
    """A setting under which an entry's gotcha bites (docs/format.md, "Conditions"): a flag (with its aliases) or an
    environment variable of one engine, the values that make it bite (`is`) or spare it (`is-not`), the default
    a deployment that does not set it gets, and the check of the entry that pins that default."""

    engine: str
    flags: tuple[str, ...] = ()  # the flag and its aliases as written (`--tensor-parallel-size`, `-tp`)
    env: str | None = None
    values: tuple[object, ...] = ()  # of `is` or `is-not`: bools, or text as written
    negated: bool = False  # `is-not`
    default: object = None  # a bool, text, COMPUTED; None when not written (lint's G202)
    witness: str | None = None  # a check id of the entry
    since: str | None = None
    until: str | None = None
    line: int = 0
    #: What a deployment's settings cannot tell, so that `audit` always says "bites only if" it: a field the
    #: clients send (`request`, with `is`/`is-not` optional), an endpoint they call, or a fact in words (`only-if`:
    #: the GPU, the model). One of these, or a setting, or `any`.
    request: str | None = None
    endpoint: str | None = None
    fact: str | None = None
    #: `any`: the alternatives, met when one of them is (each a condition of the same engine, not itself `any`).
    any: tuple[Condition, ...] = ()
    #: `set`: instead of values, whether the setting is given at all (true) or left out (false): `--api-key`,
    #: `--chat-template`, a variable. A setting given as None (a start-up log's `api_key=None`) is not given.
    given: bool | None = None

    @property
    def kind(self) -> str:
        """flag | env | request | endpoint | only-if | any."""
        return ("any" if self.any else "flag" if self.flags else "env" if self.env is not None else
                "request" if self.request is not None else "endpoint" if self.endpoint is not None else "only-if")

    @property
    def undecidable(self) -> bool:
        """A condition on what clients send or on a fact: no serve line or log decides it."""
        return self.kind in ("request", "endpoint", "only-if")

    def settings(self) -> tuple[Condition, ...]:
        """The setting conditions (flag, env) this condition is made of: itself, or its alternatives'."""
        if self.any:
            return tuple(c for c in self.any if c.kind in ("flag", "env"))
        return (self,) if self.kind in ("flag", "env") else ()

    @property
    def setting(self) -> str:
        """How people name it: the flag as first written, or the variable (the request field, the endpoint)."""
        if self.any:
            return " or ".join(c.setting for c in self.any)
        return (self.flags[0] if self.flags else self.env or self.request or self.endpoint or self.fact or "")

    @property
    def boolean(self) -> bool:
        return bool(self.values) and all(isinstance(v, bool) for v in self.values)

    @property
    def computed(self) -> bool:
        return self.default == COMPUTED

    def applies(self, version: str) -> bool:
        return within(version, self.since, self.until)

    def met_by(self, value: object) -> bool:
        """Whether a deployment whose setting has `value` meets the condition."""
        wanted = {setting_value(v) for v in self.values}
        return (setting_value(value) in wanted) != self.negated

    @property
    def default_text(self) -> str:
        """The default in words: the value as written, or that the engine computes it."""
        return "computed by the engine" if self.computed else setting_word(self.default)

    def describe(self) -> str:
        """`--scheduling-policy is fcfs`, `--enable-cache-report is not set`, `requests send priority`..."""
        if self.any:
            return " or ".join(c.describe() for c in self.any)
        if self.fact is not None:
            return self.fact
        if self.endpoint is not None:
            return f"clients call {self.endpoint}"
        if self.request is not None:
            if not self.values:
                return f"requests send {self.request}"
            shown = " or ".join(setting_word(v) for v in self.values)
            return f"requests send {self.request} {'not ' if self.negated else ''}{shown}"
        if self.given is not None:
            return f"{self.setting} is {'given' if self.given else 'not given'}"
        if self.boolean and len(self.values) == 1:
            on = self.values[0] != self.negated
            return f"{self.setting} is {'set' if on else 'not set'}" if self.flags else \
                f"{self.setting} is {'true' if on else 'false'}"
        shown = " or ".join(setting_word(v) for v in self.values)
        return f"{self.setting} is {'not ' if self.negated else ''}{shown}"


#: A C or C++ number literal with what Python's literals lack: digit separators (`1'000`) and suffixes (`4096u`,
#: `1024ull`, `0.80f`). Hexadecimal and binary integers take integer suffixes only (`0x1f` is a number, not `0x1`).
_C_NUMBER = re.compile(r"(?P<sign>[+-]?)(?:(?P<int>(?:0[xX][0-9a-fA-F']+|0[bB][01']+|\d[\d']*))"
                       r"(?:[uU](?:ll|LL|[lLzZ])?|(?:ll|LL|[lLzZ])[uU]?)"
                       r"|(?P<float>(?:\d[\d']*\.[\d']*|\.\d[\d']*|\d[\d']*)(?:[eE][+-]?\d+)?)[fFlL])")


def _c_number(text: str) -> str | None:
    """The Python spelling of a C/C++ number literal written with a separator or a suffix, or None."""
    found = _C_NUMBER.fullmatch(text)
    if found is None:
        if "'" in text and re.fullmatch(r"[+-]?\d[\d']*(?:\.[\d']*)?", text) and not text.endswith("'"):
            return text.replace("'", "")
        return None
    digits = (found["int"] or found["float"]).replace("'", "")
    if found["int"] and re.fullmatch(r"0\d+", digits):
        return None  # a C octal literal (`0755`): not what Python reads the digits as
    return found["sign"] + digits


def bound_word(text: str) -> str:
    """A named value as prose shows it: a Python literal by its value (`"fcfs"` is fcfs, `0x10` is 16, `True` is
    true), a C/C++ number by its value (`4096u` is 4096, `0.80f` is 0.8), anything else (an expression, a name)
    as the code writes it."""
    import ast

    text = _c_number(text) or text
    try:
        value = ast.literal_eval(text) if len(text) <= 200 else text
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    return text


def bound_value(text: str) -> object:
    """A named value as a check compares it with the values its claim allows (`setting_value` of its word)."""
    return setting_value(bound_word(text))


def setting_word(value: object) -> str:
    """A setting's value as people write it: `true`/`false` for booleans, the text otherwise."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class HistoryEvent:
    date: _dt.date
    note: str


@dataclass
class Entry:
    """One gotcha: front matter, body sections, and where each field was written."""

    id: str
    file: str  # path of the Markdown file as given to the loader
    title: str = ""
    scheme: str = ""
    severity: str = ""  # the worst a gotcha does to a deployment it bites: one of gotchas/severities.yaml
    concepts: tuple[str, ...] = ()
    engines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    history: tuple[HistoryEvent, ...] = ()
    withdrawn: _dt.date | None = None
    checks: tuple[Check, ...] = ()
    introduced: dict[str, str] = field(default_factory=dict)  # engine -> the release where the gotcha began
    fixed: dict[str, str] = field(default_factory=dict)  # engine -> the release where it ended
    conditions: tuple[Condition, ...] = ()  # `when`: the settings under which it bites
    parts: dict[str, str] = field(default_factory=dict)  # `parts`: id -> what it says ("with flashinfer")
    sections: dict[str, str] = field(default_factory=dict)  # section title -> Markdown
    lines: dict[str, int] = field(default_factory=dict)  # field or section name -> line

    def line_of(self, key: str) -> int:
        return self.lines.get(key, 1)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check against one snapshot of one release."""

    status: str  # holds | changed | missing | error
    reason: str | None = None
    path: str | None = None
    lines: tuple[int, int] | None = None
    symbol: str | None = None
    hint: str | None = None
    message: str | None = None
    file_sha: str | None = None  # sha256 of the file content the verdict was computed from
    values: tuple[tuple[str, str], ...] = ()  # where it holds: what each named value bound (NAME, source text)

    def to_json(self) -> dict:
        data: dict[str, object] = {
            "verdict": self.status,
            "reason": self.reason,
            "path": self.path,
            "lines": list(self.lines) if self.lines else None,
            "symbol": self.symbol,
            "hint": self.hint,
            "message": self.message,
        }
        if self.values:
            data["values"] = dict(self.values)
        return data

    @classmethod
    def from_json(cls, data: dict, file_sha: str | None = None) -> Verdict:
        """The verdict `to_json` wrote (the verdict cache keeps them so); KeyError or TypeError if it is not one."""
        if data["verdict"] not in VERDICTS:
            raise KeyError(data["verdict"])
        lines = tuple(data["lines"]) if data.get("lines") else None
        values = data.get("values") or {}
        if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                   for k, v in values.items()):
            raise TypeError("values")
        return cls(data["verdict"], data.get("reason"), data.get("path"), lines, data.get("symbol"),
                   data.get("hint"), data.get("message"), file_sha, tuple(values.items()))


def is_python_path(path: str) -> bool:
    return path.endswith((".py", ".pyi"))


#: The files read as C or C++ (verifier/code/_cpp.py), by the endings of their paths.
CPP_SUFFIXES = (".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".cu", ".cuh", ".inl")
#: The languages a check's file can be in, and how a message names them.
LANGUAGE_WORDS = {"python": ("Python",), "cpp": ("C", "C++"), "text": ()}


def language_of(path: str) -> str:
    """"python", "cpp" (C and C++) or "text" (any other file, compared as text with whitespace folded)."""
    return "python" if is_python_path(path) else "cpp" if path.endswith(CPP_SUFFIXES) else "text"


def languages_words(languages) -> str:
    """"a Python file", "a Python, C or C++ file": the files a key or matcher needs, in words."""
    names = [name for language in languages for name in LANGUAGE_WORDS[language]]
    return "a " + (", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]) + " file"


#: When no form holds, the verdict of the check is the strongest of its forms'
#: (docs/format.md, "A claim across releases").
_STRENGTH = {CHANGED: 0, ERROR: 1, MISSING: 2}


def check_verdict(verdicts: Iterable[tuple[int, Verdict]]) -> tuple[int, Verdict] | None:
    """A check's verdict at one release, from (form index, verdict) of each of its forms that apply there.

    The lowest-numbered form that holds; else the strongest verdict, `changed`
    before `error` before `missing`, of the lowest-numbered form that has it.
    None when no form applies: the check has no verdict at this release.
    """
    verdicts = list(verdicts)
    if not verdicts:
        return None
    held = [(i, v) for i, v in verdicts if v.status == HOLDS]
    if held:
        return min(held, key=lambda iv: iv[0])
    return min(verdicts, key=lambda iv: (_STRENGTH.get(iv[1].status, 1), iv[0]))


def before(version: str, bound: str) -> bool:
    """Whether a release comes before `bound` in PEP 440 order (a version that is not PEP 440 never does)."""
    v, b = release_version(version), release_version(bound)
    return v is not None and b is not None and v < b


def entry_status(version: str, verdicts: Iterable[str], introduced: str | None = None,
                 fixed: str | None = None) -> str:
    """An entry's status for one engine at one release: the one place docs/format.md's "Verdicts" rules live.

    `verdicts` are the verdicts of the entry's checks that have one at this release (with parts, as
    `parts_verdicts` folds them).
    """
    if (introduced is not None and before(version, introduced)) or (fixed is not None and not before(version, fixed)
                                                                    and release_version(fixed) is not None):
        return NOT_AFFECTED
    verdicts = list(verdicts)
    if verdicts and all(v == HOLDS for v in verdicts):
        return HOLDS
    if any(v == CHANGED for v in verdicts):
        return CHANGED
    return UNVERIFIED


def entry_bounds(entry: Entry, engine: str) -> tuple[str | None, str | None]:
    """(introduced, fixed) of an entry for one engine."""
    return entry.introduced.get(engine), entry.fixed.get(engine)


def entry_rules(entry: Entry, engine: str) -> tuple:
    """What an entry's status at a release is decided from, besides its verdicts: (introduced, fixed), and with
    parts, the pairs (check id, part) of that engine's checks that belong to one (hashable: ledgers key on it)."""
    parts = tuple((c.id, c.part) for c in entry.checks if c.engine == engine and c.part is not None)
    return (*entry_bounds(entry, engine), parts) if parts else entry_bounds(entry, engine)


def parts_verdicts(verdicts: Mapping[str, str], parts: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """An entry's verdicts with its parts folded in (CONTRIBUTING, "Parts of a claim"): the verdicts of the checks
    of no part, and one verdict for the parts (`holds` when every check with a verdict of some part holds, else
    `changed` when every part with a verdict has a `changed` check, else `missing`); and the parts that hold.
    `verdicts` are check id -> verdict of the checks that have one at the release."""
    if not parts:
        return list(verdicts.values()), []
    common = [v for c, v in verdicts.items() if c not in parts]
    by_part: dict[str, list[str]] = {}
    for check, verdict in verdicts.items():
        if check in parts:
            by_part.setdefault(parts[check], []).append(verdict)
    if not by_part:
        return common, []
    holding = sorted(p for p, vs in by_part.items() if all(v == HOLDS for v in vs))
    if holding:
        return common + [HOLDS], holding
    if all(CHANGED in vs for vs in by_part.values()):
        return common + [CHANGED], []
    return common + [MISSING], []


@dataclass(frozen=True)
class Release:
    """One release of an engine as a source knows it."""

    engine: str
    version: str
    date: str | None = None  # ISO date of publication, when known
    identity: str | None = None  # what was read: archive digest, commit, or a directory
    url: str | None = None  # where a reader can see the release's code (a tag on the forge), when known


@dataclass(frozen=True)
class CheckResult:
    """One check of one entry at one release: what the reports print and the ledger keeps."""

    entry: str
    check: Check
    release: Release
    verdict: Verdict
    file: str = ""  # the entry's file, for annotations at the check's line
    form: int | None = 0  # which form the verdict is of (0: the check itself; None: no form was tried)

    def to_json(self) -> dict:
        return {
            "kind": "check",
            "entry": self.entry,
            "check": self.check.id,
            "engine": self.release.engine,
            "version": self.release.version,
            **self.verdict.to_json(),
            "form": self.form,
            "claim": self.check.claim,
            "file": self.file,
            "line": self.check.line,
        }
