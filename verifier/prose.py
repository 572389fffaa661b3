"""Prose at every release: an entry's text as it reads for one release of one engine, or across all of them.

An entry's title and sections are Markdown with two additions (CONTRIBUTING.md, "Prose at every release"):

- `{NAME}`: a value a check reads from the code (its `values`), written as the code of the reader's release has
  it: `caps SGLang at {CAP} running requests`;
- `{HEAD: text}`: text that applies only where HEAD says. HEAD is an engine of the entry and/or release bounds
  (`since V`, `until V`, inclusive and in PEP 440 order as everywhere in the format: `until 0.8.5` takes in
  0.8.5.post1): `{since 0.9.0: set cache_salt}`, `{sglang until 0.5.2: ...}`, `{vllm: ...}`. `{example: text}`
  is text that illustrates rather than claims (lint's G504 does not look for its numbers in the code); it
  applies everywhere.

For a release, a bounded text that does not apply is left out (a list item or paragraph left empty goes with it)
and one that applies loses its braces; with no release (a page about every release), each bounded text is kept
with its bounds in words, and each value says which releases have which.

Parsing never fails: what is not a well-formed bound or value is text, and `problems` says why for lint (G601,
G602), so that a page is always written.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, cast

from .model import Entry, release_spans, release_version, within

if TYPE_CHECKING:
    from packaging.version import Version

    from .ledger import EngineLedger
    from .surface.model import Surface


class RecordedSurfaces(Protocol):
    """An engine's recorded release surfaces as the prose reads them: `surface.store.EngineSurfaces`, or the
    compiled KB's cache of one."""

    @property
    def releases(self) -> Mapping[str, object]: ...

    def versions(self) -> list[str]: ...

    def surface(self, version: str) -> Surface | None: ...


KEYWORDS = ("since", "until")
EXAMPLE = "example"
#: `{NAME}`: the name of a check's value (`values`), in capitals as the metavariable is written.
#: `{default --flag}`, `{default VLLM_X}`: the default the release surface gives a setting at the reader's release.
VALUE_REF = re.compile(r"\{([A-Z][A-Z0-9_]{0,39}|default (?:--?[a-z0-9][a-z0-9_-]*|[A-Z][A-Z0-9_]*))\}")
DEFAULT = "default "
#: The start of a bound: `{`, words, `:` and a space (`{since 0.9.0: `, `{vllm until 0.8.5: `, `{example: `).
_OPENER = re.compile(r"\{([a-z][A-Za-z0-9_.+!-]*(?:(?:[ \t]+|[ \t]*\n[ \t]*)[A-Za-z0-9_.+!-]+)*)[ \t]*:(?=[ \t\n])")
_BACKTICKS = re.compile(r"`+")


@dataclass
class Bound:
    """One `{HEAD: text}`: where its text applies, and the text (which may hold values, not other bounds)."""

    start: int  # offset of `{` in the text
    end: int  # offset after the closing `}`
    body_start: int
    body_end: int
    engine: str | None = None
    since: str | None = None
    until: str | None = None
    example: bool = False
    bad: bool = False  # written wrong (G601): its text is shown as written

    def applies(self, engine: str, version: str | None) -> bool:
        if self.engine is not None and self.engine != engine:
            return False
        if version is None:
            return True
        return within(version, self.since, self.until)

    def words(self, engine_names: Mapping[str, str]) -> str:
        """The bound as a reader says it: `vLLM from 0.9.0`, `up to 0.8.5`, `0.9.0 to 0.10.2`, `vLLM only`."""
        parts = []
        if self.engine is not None:
            parts.append(engine_names.get(self.engine, self.engine))
        if self.since and self.until:
            parts.append(f"{self.since} to {self.until}")
        elif self.since:
            parts.append(f"from {self.since}")
        elif self.until:
            parts.append(f"up to {self.until}")
        if self.engine is not None and len(parts) == 1:
            parts.append("only")
        return " ".join(parts)


@dataclass
class Parsed:
    """A text's bounds and value references, and what is wrong with how they are written."""

    text: str
    bounds: list[Bound] = field(default_factory=list)
    values: list[tuple[int, str]] = field(default_factory=list)  # (offset, NAME) of each `{NAME}` outside code
    problems: list[tuple[int, str, str]] = field(default_factory=list)  # (offset, code, message)

    def line_of(self, offset: int) -> int:
        """The 0-based line of an offset in the text."""
        return self.text.count("\n", 0, offset)


def code_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each code span (CommonMark: a run of n backticks to the next run of exactly n)."""
    spans = []
    runs = list(_BACKTICKS.finditer(text))
    i = 0
    while i < len(runs):
        opening = runs[i]
        for j in range(i + 1, len(runs)):
            if len(runs[j].group()) == len(opening.group()):
                spans.append((opening.start(), runs[j].end()))
                i = j
                break
        i += 1
    return spans


def parse(text: str, engines: Iterable[str] = (), entry_engines: Iterable[str] = ()) -> Parsed:
    """The bounds and value references of one text (made once per text: a site or a compiled KB reads each text at
    every release)."""
    return _parse(text, tuple(sorted(set(engines))), tuple(entry_engines))


@functools.lru_cache(maxsize=2048)
def _parse(text: str, registry_engines: tuple, of_entry: tuple) -> Parsed:
    """`parse`, cached; the result is shared: never changed by callers. `engines` are the registry's (a head's
    first word that is one names the engine), `entry_engines` the entry's (a version bound in an entry of several
    needs one)."""
    engines, entry_engines = set(registry_engines), list(of_entry)
    parsed = Parsed(text)
    code = code_spans(text)
    code_at = {start: end for start, end in code}
    i, open_bound, depth = 0, None, 0
    while i < len(text):
        if i in code_at:
            i = code_at[i]
            continue
        char = text[i]
        if char == "{":
            ref = VALUE_REF.match(text, i)
            if ref:
                parsed.values.append((i, ref.group(1)))
                i = ref.end()
                continue
            opener = _OPENER.match(text, i)
            if opener and _head_like(opener.group(1), engines):
                if open_bound is not None:
                    parsed.problems.append((i, "G601", "a bound inside another bound; close the first one "
                                                       "with `}` before starting the next"))
                    i = opener.end()
                    continue
                before = len(parsed.problems)
                bound = _head(opener.group(1), i, opener.end(), engines, entry_engines, parsed)
                bound.bad = len(parsed.problems) > before  # shown as written, never dropped on a guess
                open_bound, depth = bound, 0
                i = opener.end()
                continue
            if open_bound is not None:
                depth += 1
        elif char == "}" and open_bound is not None:
            if depth:
                depth -= 1
            else:
                open_bound.body_end, open_bound.end = i, i + 1
                if not text[open_bound.body_start:i].strip():
                    parsed.problems.append((open_bound.start, "G601", "a bound with no text"))
                elif not open_bound.bad:
                    parsed.bounds.append(open_bound)
                open_bound = None
        i += 1
    if open_bound is not None:
        parsed.problems.append((open_bound.start, "G601", "a bound is not closed: end its text with `}`"))
    return parsed


def _head_like(head: str, engines: set[str]) -> bool:
    """Whether `{head:` is meant as a bound (its first word is a keyword, an engine or `example`): anything else
    (`{key: value}` in prose) is text."""
    first = head.split()[0]
    return first in KEYWORDS or first in engines or first == EXAMPLE


def _head(head: str, start: int, body: int, engines: set[str], entry_engines: list[str], parsed: Parsed) -> Bound:
    words = head.split()
    bound = Bound(start, start, body, body)

    def problem(message: str) -> None:
        parsed.problems.append((start, "G601", message))

    if words == [EXAMPLE]:
        bound.example = True
        return bound
    if words[0] in engines:
        bound.engine = words.pop(0)
        if entry_engines and bound.engine not in entry_engines:
            problem(f"the bound names {bound.engine!r}, which is not an engine of the entry")
    if len(words) % 2:
        problem(f"a bound is `{{ENGINE since V until V: text}}` (any of the three); {head!r} is not")
        return bound
    for keyword, version in zip(words[::2], words[1::2]):
        if keyword not in KEYWORDS:
            problem(f"unknown word {keyword!r} in a bound; bounds are since and until (both inclusive)")
        elif getattr(bound, keyword) is not None:
            problem(f"{keyword!r} twice in one bound")
        elif release_version(version) is None:
            problem(f"{keyword} {version!r} is not a PEP 440 version")
        else:
            setattr(bound, keyword, version)
    if bound.since and bound.until and cast("Version", release_version(bound.since)) > cast(
            "Version", release_version(bound.until)):  # both versions: set above only when they are
        problem(f"since {bound.since} comes after until {bound.until}")
    if (bound.since or bound.until) and bound.engine is None and len(entry_engines) > 1:
        problem(f"the entry has several engines: say whose releases, like {{{entry_engines[0]} {head}: ...}}")
    return bound


# --- rendering ----------------------------------------------------------------------------------------------

#: Where a bounded text was left out: only a list item or paragraph emptied by that goes (`42.` ending a wrapped
#: line of kept text stays).
_CUT = "\x00"
_EMPTY_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])?[ \t\x00]*$")
#: The spaces around a cut (only there: text as written, code spans included, keeps its own spacing).
_AROUND_CUT = re.compile("(?:[ \t]*\x00)+[ \t]*")  # cuts next to each other are one


def render(text: str, engine: str | None, version: str | None, values: Mapping[str, str] | None = None,
           engines: Iterable[str] = (), engine_names: Mapping[str, str] | None = None, mark: str = "*({})*") -> str:
    """The text as it reads at one release of one engine (`version` None: across every release, bounds said in
    words, as `mark` writes them: Markdown emphasis, or plain for a title). `values` gives each `{NAME}` its text;
    a name without one is left as written."""
    parsed = parse(text, engines)
    names = engine_names or {}
    out, last = [], 0
    for bound in parsed.bounds:
        out.append(_values(text[last:bound.start], values))
        body = _values(text[bound.body_start:bound.body_end], values).strip()
        if bound.example:
            out.append(body)
        elif version is not None:
            if bound.applies(engine or "", version):
                if body[:1] in (",", ";", ".", ":", ")") and out and out[-1][-1:] in (" ", "\t"):
                    out[-1] = out[-1].rstrip(" \t")  # `included {since V: , unless ...}` reads `included, unless`
                out.append(body)
            else:
                out.append(_CUT)
        elif engine is None or bound.engine in (None, engine):
            versioned = bound.since or bound.until
            if not (versioned or engine is None):
                out.append(body)
            elif body[:1] in (",", ";", ".", ":", ")"):  # the punctuation stays with the word before
                if out and out[-1][-1:] in (" ", "\t"):
                    out[-1] = out[-1].rstrip(" \t")
                out.append(f"{body[0]} {mark.format(bound.words(names))} {body[1:].lstrip()}")
            else:
                out.append(f"{mark.format(bound.words(names))} {body}")
        else:
            out.append(_CUT)
        last = bound.end
    out.append(_values(text[last:], values))
    return tidy("".join(out)) if parsed.bounds else "".join(out)


def _values(text: str, values: Mapping[str, str] | None) -> str:
    if not values:
        return text
    return VALUE_REF.sub(lambda m: values.get(m.group(1), m.group()), text)


def _tidy_line(line: str) -> str:
    """A line with its cuts taken out: a cut and the spaces around it become one space between words, nothing at
    either end of the line or before punctuation."""
    def joined(m: re.Match) -> str:
        before, after = line[:m.start()], line[m.end():]
        if not before.strip():  # at the line's start: its indentation stays (a list item's continuation)
            return re.match(r"[ \t]*", m.group()).group()  # type: ignore[union-attr]  # matches any text
        if not after or after[0] in ".,;:)":
            return ""
        return " " if m.group().strip(" \t") != m.group() else ""

    return _AROUND_CUT.sub(joined, line)


def tidy(text: str) -> str:
    """What leaving out a bounded text leaves behind (each cut marked): the lines and list items that held only
    left-out text, and the spaces around each cut."""
    lines: list[str] = []
    raw = text.split("\n")
    for index, line in enumerate(raw):
        if _CUT in line and _EMPTY_ITEM.match(line):
            marker = re.match(r"[ \t]*(?:[-*+]|\d+[.)])", line)
            following = raw[index + 1] if index + 1 < len(raw) else ""
            if marker and following[:1] in (" ", "\t") and following.replace(_CUT, "").strip():
                # the item's first line was left out, its next line kept: that line becomes the item's first
                raw[index + 1] = f"{marker.group()} {following.strip()}"
            continue
        if _CUT in line and not line.replace(_CUT, "").strip():
            continue  # a line that held only left-out text goes: the paragraph around it stays one
        lines.append(line)
    lines = [_tidy_line(line) if line.strip() else "" for line in lines]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def texts(entry: Entry, sections: Collection[str] | None = None) -> list[tuple[str, str, int]]:
    """(name, Markdown, line of its first line in the file) of the title and each section (of `sections` only, when
    given): the prose a reader sees."""
    found = [("title", entry.title, entry.line_of("title"))] if entry.title else []
    return found + [(title, text, entry.line_of(f"text:{title}")) for title, text in entry.sections.items()
                    if sections is None or title in sections]


def readings(entry: Entry, versions: list[str], read: Callable[[str], EntryText]) -> list[tuple[list[str], EntryText]]:
    """The entry's distinct readings over `versions` (of one engine, in order; `read(version)` gives its
    `EntryText`), each with the releases that read so, in the order of their first release. An entry that never
    varies is read once, at the newest release, for all of them."""
    if not versions:
        return []
    if not varies(entry):
        return [(list(versions), read(versions[-1]))]
    found: dict[tuple, tuple[list[str], EntryText]] = {}
    for version in versions:
        text = read(version)
        key = (text.title, tuple(text.sections.items()), tuple(text.parts))
        found.setdefault(key, ([], text))[0].append(version)
    return list(found.values())


def varies(entry: Entry) -> bool:
    """Whether the entry reads differently at some release: it has bounded text, values or parts."""
    texts = [entry.title, *entry.sections.values()]
    return bool(entry.parts) or any("{" in t and (VALUE_REF.search(t) or _OPENER.search(t)) for t in texts)


# --- values across releases ----------------------------------------------------------------------------------

def default_refs(entry: Entry) -> list[str]:
    """The settings whose default the entry's prose writes (`{default --flag}`), in order, once each."""
    found: list[str] = []
    for text in (entry.title, *entry.sections.values()):
        for m in VALUE_REF.finditer(text):
            name = m.group(1)
            if name.startswith(DEFAULT) and name[len(DEFAULT):] not in found:
                found.append(name[len(DEFAULT):])
    return found


def _surface_default(surface, name: str) -> str | None:
    """A setting's default at one release as prose says it: its literal value, or `computed` (with what from); None
    when the release does not have the setting."""
    from .surface.model import ENV, NO_VALUE

    item = surface.flag(name) if name.startswith("-") else surface.items.get((ENV, name))
    if item is None:
        return None
    if item.value is NO_VALUE:
        return f"computed ({item.default})" if item.default else "none"
    if item.value is None:
        return "unset"
    if isinstance(item.value, bool):
        return str(item.value).lower()
    return str(item.value) if not isinstance(item.value, float) else repr(item.value)


def defaults_at(entry: Entry, surfaces: Mapping[str, RecordedSurfaces] | None, engine: str,
                version: str) -> dict[str, str]:
    """`{default X}` of the entry's prose at one release: what the release surface there gives each setting."""
    stored = (surfaces or {}).get(engine)
    surface = stored.surface(version) if stored is not None and version in getattr(stored, "releases", {}) else None
    found = {}
    for name in default_refs(entry):
        said = _surface_default(surface, name) if surface is not None else None
        found[DEFAULT + name] = said if said is not None else f"(the default of {name}: not recorded for {version})"
    return found


def defaults_across(entry: Entry, surfaces: Mapping[str, RecordedSurfaces] | None,
                    engines: Iterable[str]) -> dict[str, str]:
    """`{default X}` across every recorded release: the newest release's default, then each other with its
    releases, `0.92 (0.9 in 0.8.0-0.10.1)`; over the first engine whose surface has the setting."""
    found = {}
    for name in default_refs(entry):
        for engine in engines:
            stored = (surfaces or {}).get(engine)
            versions = stored.versions() if stored is not None and stored.releases else []
            where: dict[str, list[str]] = {}
            for version in versions:
                said = _surface_default(stored.surface(version), name) if stored is not None else None
                if said is not None:
                    where.setdefault(said, []).append(version)
            if where:
                newest = max(where, key=lambda w: versions.index(where[w][-1]))
                others = [f"{w} in {release_spans(vs, versions)}" for w, vs in where.items() if w != newest]
                found[DEFAULT + name] = newest + (f" ({'; '.join(others)})" if others else "")
                break
    return found


def value_names(entry: Entry) -> dict[str, object]:
    """NAME -> the check of the entry that reads it."""
    return {name: check for check in entry.checks for name, _ in check.values}


def values_at(entry: Entry, engine_ledger: EngineLedger, version: str) -> dict[str, str]:
    """Each value of the entry's checks of the ledger's engine at one release: what the check read there where it
    holds; else the values its claim allows (`32 or 48`)."""
    from .model import bound_word

    found = {}
    record = engine_ledger.entry(version, entry.id)
    for check in entry.checks:
        if not check.values or check.engine != engine_ledger.engine:
            continue
        read = record.checks.get(check.id) if record is not None else None
        bound = dict(read.values) if read is not None and read.values else {}
        for name, allowed in check.values:
            found[name] = bound_word(bound[name]) if name in bound else " or ".join(allowed)
    return found


def values_across(entry: Entry, ledgers: Mapping[str, EngineLedger]) -> dict[str, str]:
    """Each value across the releases where its check holds: the newest release's value, then each other value
    with its releases, `48 (32 in 0.4.3.post3-0.4.4.post3)`. `ledgers` by engine."""
    from .model import bound_word

    found = {}
    for check in entry.checks:
        if not check.values:
            continue
        ledger = ledgers.get(check.engine)
        versions = ledger.versions() if ledger is not None else []
        for name, allowed in check.values:
            where: dict[str, list[str]] = {}
            for version in versions:
                record = ledger.entry(version, entry.id) if ledger is not None else None
                read = record.checks.get(check.id) if record is not None else None
                if read is not None and read.values and name in dict(read.values):
                    where.setdefault(bound_word(dict(read.values)[name]), []).append(version)
            if not where:
                found[name] = " or ".join(allowed)
                continue
            newest = max(where, key=lambda w: versions.index(where[w][-1]))
            others = [f"{w} in {release_spans(vs, versions)}" for w, vs in where.items() if w != newest]
            found[name] = newest + (f" ({'; '.join(others)})" if others else "")
    return found


# --- an entry's text at a release ----------------------------------------------------------------------------

@dataclass
class EntryText:
    """An entry as it reads at one release of one engine (or, with no release, across all of them)."""

    title: str
    sections: dict[str, str]
    parts: list[str] = field(default_factory=list)  # the parts of the claim that hold there (ids)
    says: list[str] = field(default_factory=list)  # what those parts say ("with --attention-backend flashinfer")


def entry_text(entry: Entry, engine: str | None, version: str | None, ledgers: Mapping[str, EngineLedger],
               engines: Iterable[str] = (), engine_names: Mapping[str, str] | None = None,
               surfaces: Mapping[str, RecordedSurfaces] | None = None) -> EntryText:
    """The entry's title and sections at `version` of `engine` (`version` None: across every release; `engine`
    None too: across every engine), values read from the ledgers (by engine), defaults from the release surfaces
    (by engine), and the parts that hold there."""
    from .ledger import parts_holding
    from .model import entry_rules

    engines = tuple(engines) or tuple(entry.engines)
    ledger = ledgers.get(engine) if engine is not None else None
    if version is not None and ledger is not None and engine is not None:  # a ledger: of an engine
        values = {**values_at(entry, ledger, version), **defaults_at(entry, surfaces, engine, version)}
    else:
        values = {**values_across(entry, ledgers),
                  **defaults_across(entry, surfaces, [engine] if engine else entry.engines)}
    parts: list[str] = []
    if version is not None and ledger is not None and engine is not None and entry.parts:
        record = ledger.entry(version, entry.id)
        if record is not None:
            parts = parts_holding(record.checks, entry_rules(entry, engine))

    def show(text: str, mark: str = "*({})*") -> str:
        return render(text, engine, version, values, engines, engine_names, mark)

    return EntryText(show(entry.title, "({})"), {name: show(text) for name, text in entry.sections.items()}, parts,
                     [entry.parts[p] for p in parts if p in entry.parts])
