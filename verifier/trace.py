"""`gotchas trace`: follow a check back through the releases where its code lived elsewhere.

For one check, from the newest release where it holds, the releases are walked
back. Where the check stops holding, that release is searched for where the
same code went:

- the same place with the check's local names as metavariables
  (`request.num_computed_tokens = 0` becomes `$REQUEST.num_computed_tokens = 0`,
  so that a renamed local such as `preempted_req` matches);
- for a git source, git's rename detection between the two releases;
- the definitions of the check's symbol across the release, and the other
  definitions of the same name in its file;
- the occurrences of the fragment (or, for `string`, of the text) across the
  release, each in the definition that holds it.

Each place is tried as a form at that release; the likeliest one that holds
(the fewest changes from the form that held just after) is proposed, bounded by
`until` (the newest release that needs it; `since` only where the check has
its own). The walk then goes on below it with the form added, until the
oldest tracked release, or a release where nothing is found: there the claim
may really be different, and the trace says so with the check's verdict.

Searches of a whole release are kept in the SearchCache by release and query,
so that a second trace (or a verify run) does not read the release again.
"""

from __future__ import annotations

import builtins
import keyword
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TypeVar, overload

from . import locate
from .code._cpp_tokens import tokenize as cpp_tokenize
from .code._tokens import NAME, tokenize
from .matchers import REGISTRY
from .model import HOLDS, Check, Entry, Form, Release, Verdict, check_verdict, language_of
from .reading import FileCache, evaluate
from .rewrite import form_fields
from .sources import Snapshot, SourceUnavailable

_Walker = TypeVar("_Walker", bound="Walker")

#: Names that are never a function's locals: Python's own, and the receivers of methods.
_NOT_LOCAL = frozenset(keyword.kwlist) | frozenset(keyword.softkwlist) | frozenset(dir(builtins)) | {"self", "cls"}
#: The same for C and C++: the keywords, the names of fundamental types and of `std`'s usual ones, and `this`.
_NOT_LOCAL_CPP = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t
    char16_t char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
    co_return co_yield decltype default delete do double dynamic_cast else enum explicit export extern false float
    for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or or_eq private
    protected public register reinterpret_cast requires return short signed sizeof static static_assert static_cast
    struct switch template this thread_local throw true try typedef typeid typename union unsigned using virtual
    void volatile wchar_t while xor xor_eq std size_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t
    uint64_t ssize_t string vector map""".split())


@overload
def generalize(code: str, names: dict[str, str], targets: bool = True, language: str = "python") -> str: ...
@overload
def generalize(code: None, names: dict[str, str], targets: bool = True, language: str = "python") -> None: ...
@overload
def generalize(code: str | None, names: dict[str, str], targets: bool = True, language: str = "python"
               ) -> str | None: ...
def generalize(code: str | None, names: dict[str, str], targets: bool = True, language: str = "python"
               ) -> str | None:
    """`code` with the local names it reads replaced by metavariables, consistently through `names`
    (local name -> metavariable, shared by a fragment and its `after`, and filled in here).

    Only a name that stands for an object, or that is being bound, is replaced: the receiver of an
    attribute or an item (`request.x`, `blocks[i]`; in C and C++ also `slot->x`), a positional argument
    (`f(request)`), a lambda's parameter, the target of an assignment (`room = a - b`). A name in any other
    place may stand for a value the claim is about (`x = default_prefix_caching`), and a metavariable there
    would match any value (`True` as well). Lower-case names only, never the language's own (Python's, or C++'s
    keywords and fundamental types: `language`, "cpp" for C and C++) nor `self`/`cls`/`this`. Without `targets`,
    a name being bound stays (`follow`: a target made `$X` also matches `a, b = ...`, a new shape of result).
    """
    if code is None:
        return None
    cpp = language == "cpp"
    tokens = cpp_tokenize(code, fragment=True) if cpp else tokenize(code, fragment=True)
    own = _NOT_LOCAL_CPP if cpp else _NOT_LOCAL
    texts = [t.text for t in tokens]
    lambda_params = set() if cpp else {texts[i + 1] for i, text in enumerate(texts[:-1]) if text == "lambda"}
    members = (".", "->") if cpp else (".",)
    out, last = [], 0
    for i, token in enumerate(tokens):
        if token.kind != NAME or token.text in own or not token.text[:1].islower():
            continue
        before = texts[i - 1] if i else ""
        after = texts[i + 1] if i + 1 < len(texts) else ""
        receiver = after in (*members, "[") and before not in (*members, "::")
        argument = before in ("(", ",") and after in (")", ",") and not _in_subscript(texts, i)
        # a name being bound: `x = ...` binds `x` (in C++ a declaration's name is no local: `int n = 4` keeps it)
        target = targets and after == "=" and (before in ("", ";", ":") or cpp and before in ("{", "}"))
        if cpp and before == "::":
            continue  # `ns::name`: a qualified name, never a local
        if not (receiver or argument or target or token.text in lambda_params):
            continue
        meta = names.setdefault(token.text, "$" + token.text.upper())
        out.append(code[last:token.start])
        out.append(meta)
        last = token.end
    out.append(code[last:])
    return "".join(out)


def _distinctive(code: str, language: str = "python") -> bool:
    """Whether a fragment names something of its own: a name that is not the language's (Python's, `self`; C++'s),
    or a metavariable."""
    if language == "cpp":
        return any(t.kind == NAME and t.text not in _NOT_LOCAL_CPP and len(t.text) > 2
                   for t in cpp_tokenize(code, fragment=True))
    return any(t.kind == NAME and t.text not in _NOT_LOCAL and len(t.text) > 2 for t in tokenize(code, fragment=True))


def _in_subscript(texts: list[str], i: int) -> bool:
    """Whether texts[i] sits directly inside [...] (an index, not an argument)."""
    depth = 0
    for j in range(i - 1, -1, -1):
        if texts[j] in ")]}":
            depth += 1
        elif texts[j] in "([{":
            if depth == 0:
                return texts[j] == "["
            depth -= 1
    return False


@dataclass(frozen=True)
class Proposal:
    """An `earlier` form for a check, with the releases it covers and the lines that show it holds."""

    form: Form  # with its bounds; `index` is its number among the check's forms
    releases: tuple[str, ...]  # the releases it makes the check hold in, oldest first
    verdict: Verdict  # its verdict at the newest of them
    excerpt: tuple[str, ...]  # those lines, as the release has them
    how: str  # how it was found, for a reviewer

    def fields(self, check: Check) -> dict[str, object]:
        """The keys an `earlier` item needs, in docs/format.md's order: bounds, place, then code if it differs."""
        form = self.form
        found: dict[str, object] = {}
        if form.since is not None:
            found["since"] = form.since
        if form.until is not None:
            found["until"] = form.until
        found.update(form_fields(form, check.own))  # what differs from the check's own form, which it inherits
        return found


@dataclass
class Trace:
    """What `trace_check` found for one check."""

    entry: str
    check: Check
    proposals: list[Proposal] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)  # version -> the check's verdict with the proposals
    stop: tuple[str, Verdict] | None = None  # where the walk ended with nothing found: release, verdict there
    note: str | None = None  # a sentence for the reviewer when there was nothing to walk

    @property
    def traced(self) -> Check:
        """The check with its proposals added."""
        return replace(self.check, earlier=self.check.earlier + tuple(p.form for p in self.proposals))

    def holds_from(self, versions: list[str]) -> str | None:
        """The oldest release from which the check, with the proposals, holds in every release to the newest
        release where it holds (releases where it has no verdict skipped)."""
        oldest = None
        decided = [v for v in versions if v in self.statuses]
        newest = max((i for i, v in enumerate(decided) if self.statuses[v] == HOLDS), default=None)
        if newest is None:
            return None
        for version in reversed(decided[:newest + 1]):
            if self.statuses[version] != HOLDS:
                break
            oldest = version
        return oldest


class Walker:
    """The releases of one engine, opened on demand, with every form's verdict asked once."""

    def __init__(self, source, releases: list[Release], verdicts=None, searches=None,
                 progress: Callable[[str], None] | None = None) -> None:
        self.source, self.releases = source, releases
        self.verdicts, self.searches, self.progress = verdicts, searches, progress
        self.files = FileCache()
        self.parsed = FileCache()
        self._verdicts: dict[tuple[str, str], Verdict] = {}  # (form fingerprint, version) -> verdict
        self._snapshot: tuple[str, Snapshot] | None = None

    def snapshot(self, release: Release) -> Snapshot:
        if self._snapshot is None or self._snapshot[0] != release.version:
            self._close()
            if self.progress:
                self.progress(f"{release.engine} {release.version}")
            self._snapshot = (release.version, self.source.open(release))
        return self._snapshot[1]

    def form(self, form: Form, release: Release) -> Verdict:
        key = (form.fingerprint, release.version)
        found = self._verdicts.get(key)
        if found is None:
            found = self._verdicts[key] = evaluate(form, self.snapshot(release), self.files, self.verdicts)
        return found

    def check(self, check: Check, release: Release) -> tuple[int, Verdict] | None:
        """(form index, verdict) of the check at a release, as docs/format.md combines its forms; None: no form
        applies."""
        return check_verdict((f.index, self.form(f, release)) for f in check.forms_at(release.version))

    def code_files(self, release: Release, kind: str) -> dict[str, bytes]:
        """The release's files that a search reads (`locate.files_of`: "python" or "cpp"), by path."""
        return locate.read_files(self.snapshot(release), kind)

    def lines(self, release: Release, path: str, lines: tuple[int, int] | None) -> tuple[str, ...]:
        if not lines:
            return ()
        try:
            data = self.snapshot(release).read(path)
        except SourceUnavailable:
            return ()
        if data is None:
            return ()
        text = data.decode("utf-8", "replace").split("\n")
        return tuple(text[lines[0] - 1:lines[1]])

    def close(self) -> None:
        """Close the snapshot open (the source is its owner's)."""
        self._close()

    def __enter__(self: _Walker) -> _Walker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _close(self) -> None:
        if self._snapshot is not None:
            self._snapshot[1].close()
            self._snapshot = None


def trace_check(entry: Entry, check: Check, walker: Walker) -> Trace:
    """Walk `check` back through `walker.releases` (oldest first) and propose its missing `earlier` forms."""
    releases = walker.releases
    trace = Trace(entry.id, check)
    current = check
    found = [walker.check(current, r) for r in releases]
    newest = max((i for i, f in enumerate(found) if f is not None and f[1].status == HOLDS), default=None)
    if newest is None:
        trace.note = ("the check holds in no release searched: make its own form hold in the newest release "
                      "first (`gotchas check`), then trace it")
        trace.statuses = {r.version: f[1].status for r, f in zip(releases, found) if f is not None}
        return trace
    i = newest - 1
    while i >= 0:
        release = releases[i]
        result = found[i] = walker.check(current, release)  # with the forms proposed so far (answers are cached)
        if result is None or result[1].status == HOLDS:
            i -= 1
            continue
        held = found[i + 1] if i + 1 < len(found) and found[i + 1] is not None else None
        template = current.forms[held[0]] if held is not None and held[1].status == HOLDS else current.own
        proposal = _propose(current, template, releases[i + 1] if i + 1 < len(releases) else None, release, walker)
        if proposal is None:
            trace.stop = (release.version, result[1])
            break
        form, how = proposal
        j = i - 1
        while j >= 0:
            older = found[j]
            if (older is not None and older[1].status == HOLDS) or walker.form(form, releases[j]).status != HOLDS:
                break
            j -= 1
        # Bounded above only (as docs/format.md's example): below its range the form is still tried, so that where
        # no form holds, a form whose place is there says `changed` rather than every form `missing`. A check
        # with bounds of its own (a claim that arrived later) gives its forms its `since`.
        form = replace(form, index=len(current.forms), until=release.version, since=check.since)
        verdict = walker.form(form, release)
        trace.proposals.append(Proposal(form, tuple(r.version for r in releases[j + 1:i + 1]), verdict,
                                        walker.lines(release, verdict.path or form.path, verdict.lines), how))
        current = replace(current, earlier=current.earlier + (form,))
        for k in range(j + 1, i + 1):
            found[k] = walker.check(current, releases[k])
        i = j
    trace.statuses = {r.version: f[1].status for r, f in zip(releases, found) if f is not None}
    return trace


def _propose(check: Check, template: Form, newer: Release | None, release: Release,
             walker: Walker) -> tuple[Form, str] | None:
    """The likeliest form of `check` that holds at `release`, from the places its code may have gone."""
    snapshot = walker.snapshot(release)
    matcher = REGISTRY[template.matcher]
    language = language_of(template.path)
    names: dict[str, str] = {}
    variants = [(template.pattern, template.after, "")]
    if matcher.code:
        pattern = generalize(template.pattern, names, language=language)
        after = generalize(template.after, names, language=language)
        if (pattern, after) != (template.pattern, template.after):
            variants.append((pattern, after, f"local names as metavariables ({', '.join(names)})"))

    # A place found only because the fragment or text occurs there is worth trying when the fragment says
    # something of its own (a name of the engine's: `num_computed_tokens`), or the place is the check's own
    # file or has its symbol's name: `] = False` occurs in a hundred places that have nothing to do with it.
    distinctive = _distinctive(template.pattern, language) if matcher.code else True
    last_name = (template.scope or "").rsplit(".", 1)[-1]

    def plausible(path: str, symbol: str | None) -> bool:
        return distinctive or path == template.path or (symbol or "").rsplit(".", 1)[-1] == last_name

    places: list[tuple[str, str | None, str]] = [(template.path, template.scope, "")]  # (path, in, how)
    if newer is not None:
        try:
            old = walker.source.renamed_from(template.path, release, newer)
        except SourceUnavailable:
            old = None
        if old:
            places.append((old, template.scope, f"git: {template.path} was {old} in {release.version}"))

    kind = locate.files_of(language)  # the release's Python files, or its C and C++ files
    # read once, and only when a search is not answered by the cache
    search = locate.Places(snapshot, kind, lambda: walker.code_files(release, kind), walker.parsed, walker.searches)
    try:
        if template.scope:
            for place in search.symbol(template.scope):
                places.append((place.path, place.symbol, f"{template.scope} is defined at {place}"))
        if matcher.search == "symbol":
            for place in search.symbol(template.pattern):
                places.append((place.path, None, f"{template.pattern} is defined at {place}"))
        elif matcher.search == "text":
            for place in search.text(template.pattern):
                places.append((place.path, place.symbol if template.scope else None, f"the text is at {place}"))
        elif matcher.search == "fragment":
            for pattern, _, _ in variants:
                for place in search.fragment(pattern):
                    if plausible(place.path, place.symbol):
                        places.append((place.path, place.symbol if template.scope else None,
                                       f"the fragment occurs at {place}"))
    except SourceUnavailable:
        return None

    tried: set[tuple] = set()
    candidates: list[tuple[tuple, Form, str]] = []
    for order, (path, scope, how) in enumerate(places):
        for generalized, (pattern, after, variant_how) in enumerate(variants):
            if matcher.symbol:
                scope_value, pattern = None, (scope if scope and how.startswith(template.pattern) else pattern)
            else:
                scope_value = scope
            form = replace(template, path=path, scope=scope_value, pattern=pattern, after=after, since=None,
                           until=None)
            key = (form.path, form.scope, form.pattern, form.after)
            if key in tried or key == (template.path, template.scope, template.pattern, template.after):
                continue
            tried.add(key)
            if walker.form(form, release).status != HOLDS:
                continue
            rank = (generalized, path != template.path, (scope or "").rsplit(".", 1)[-1] != last_name,
                    path.startswith("tests/") or "/tests/" in path, order)
            candidates.append((rank, form, "; ".join(x for x in (how, variant_how) if x) or "the same place"))
    if not candidates:
        return None
    candidates.sort(key=lambda c: c[0])
    return candidates[0][1], candidates[0][2]
