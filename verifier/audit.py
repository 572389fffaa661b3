"""`gotchas audit`: which gotchas bite a deployment, from its engine versions and settings (the pip-audit model).

The KB comes compiled (`compiled.py`): packaged with the wheel, or from a checkout. For each engine version a
deployment runs, the nearest tracked release stands in for it (with a note when it is not that release; a llama.cpp
build, `b4763`, is the release whose vendored commit or recorded build number it matches: `stand_in`), and
each entry's status there decides: `holds` bites, `unverified` is listed as such, `not-affected` and `changed`
are not listed. Then the entry's conditions (`when`) of that engine that apply at that release: a deployment's
settings (a serve command line, a start-up log) decide them; a setting it does not give takes the condition's
default, which counts only in a release where its witness check holds. A condition that is not met drops the
entry; one that cannot be decided makes it "bites only if ...".
"""

from __future__ import annotations

import json
import os
import urllib.parse
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import cast

from packaging.version import InvalidVersion, Version

from . import __version__, md
from .compiled import condition_from_json, text_at
from .deployment import UNKNOWN, Installed, Settings, boolean, flag_key, is_build, release_for
from .model import (
    CHANGED,
    COMPUTED,
    HOLDS,
    UNVERIFIED,
    Condition,
    release_spans,
    setting_word,
)
from .urls import entry_url

BITES = "bites"
ONLY_IF = "bites only if"
#: The groups of a report, in the order they are shown; `--fail-on holds` fails on the first two.
GROUPS = (BITES, ONLY_IF, UNVERIFIED)

MET, NOT_MET, UNDECIDED = "met", "not met", "undecided"
LLAMA_CPP = "llama-cpp"  # the engine whose versions may be builds, and whose parser is not argparse


@dataclass(frozen=True)
class Finding:
    engine: str
    release: str  # the tracked release audited (the newest of `releases` where it applies, for a range)
    installed: Installed
    entry: dict  # the compiled entry
    group: str  # bites | bites only if | unverified
    conditions: tuple[str, ...] = ()  # what it bites only if, in words
    releases: tuple[str, ...] = ()  # for a version range: the tracked releases in it where the entry is listed
    fixed_in: str | None = None  # the nearest later release from which it is not listed (same settings)

    @property
    def id(self) -> str:
        return self.entry["id"]

    @property
    def severity(self) -> str:
        return self.entry.get("severity") or ""


@dataclass(frozen=True)
class Dropped:
    """An entry whose status bites the release, and that a setting of the deployment spares."""

    engine: str
    release: str
    id: str
    reason: str


@dataclass
class Upgrade:
    """What moving a pinned target to a later release does, with the same settings."""

    to: str
    clears: tuple[str, ...]  # ids listed now and not there
    brings: tuple[str, ...]  # ids listed there and not now


@dataclass
class Target:
    """One engine version of the deployment (or a range of them), and the tracked release(s) audited for it."""

    installed: Installed
    release: str | None
    note: str | None = None
    releases: tuple[str, ...] = ()  # a range: every tracked release in it
    upgrade: Upgrade | None = None


@dataclass
class Audit:
    targets: list[Target] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)

    @property
    def audited(self) -> bool:
        """Whether any engine version was audited at all (at a tracked release)."""
        return any(t.release is not None for t in self.targets)


def nearest_release(version: str, tracked: list[str]) -> tuple[str | None, str | None]:
    """The tracked release that stands in for `version`, and a note when it is not that release.

    A local build (`0.10.1+cu126`) is its public version; a release candidate is the final release it
    precedes, when tracked; a development build, a release the ledger does not track, or one newer than every
    tracked release is the newest tracked release before it. Older than every tracked release: none."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None, f"{version} is not a PEP 440 version: not audited"
    by_version: dict[Version, str] = {}
    for text in tracked:
        try:
            by_version.setdefault(Version(text), text)
        except InvalidVersion:
            continue
    if wanted in by_version and not wanted.local:
        return by_version[wanted], None
    public = Version(wanted.public)
    what = f"{version} is a local build of {public}" if wanted.local else None
    if public in by_version:
        return by_version[public], f"{what}: audited as {by_version[public]}" if what else None
    if public.pre is not None and public.dev is None and Version(public.base_version) in by_version:
        final = by_version[Version(public.base_version)]
        return final, f"{version} is a pre-release of {final}: audited as {final}"
    earlier = [v for v in by_version if v < public]
    if not earlier:
        oldest = min(by_version) if by_version else None
        return None, (f"{version} is older than the oldest tracked release ({by_version[oldest]}): not audited"
                      if oldest is not None else f"no release of this engine is tracked: {version} not audited")
    chosen = by_version[max(earlier)]
    if public.dev is not None:
        why = f"{version} is a development build"
    elif public > max(by_version):
        why = f"{version} is newer than the newest tracked release"
    else:
        why = f"{version} is not a tracked release"
    return chosen, f"{why}: audited as {chosen}, the nearest tracked release before it"


def stand_in(kb: dict, item: Installed) -> tuple[str | None, str | None]:
    """The tracked release audited for an engine version, and the note that says how it was chosen: the nearest
    release (`nearest_release`), or for a llama.cpp build (`b4763`, a logged commit) the release its commit or
    build number stands for (`deployment.release_for`, from the KB checkout's data: `kb["vendored"]`)."""
    releases = kb["engines"][item.engine]["releases"]
    if item.engine == LLAMA_CPP and (item.commit or is_build(item.version)):
        return release_for(kb.get("vendored", {}).get(item.engine), releases, item.version, item.commit)
    release, note = nearest_release(item.version, releases)
    vendored = kb.get("vendored", {}).get(item.engine) or {}
    commit = vendored.get("commits", {}).get(release or "")
    if commit and note is None:  # the version is a llama-cpp-python release: what it holds is a llama.cpp commit
        build = vendored.get("builds", {}).get(release, {}).get("build")
        note = (f"{release} is llama-cpp-python {release}, which vendors llama.cpp commit {commit[:9]}"
                + (f" (build {build})" if build else "") + "; the entries are about llama-server built from it")
    return release, note



def resolve(kb: dict, engine: str, release: str, settings: Settings | None) -> Settings | None:
    """The settings as the release reads them: llama-server's arguments read again by the release's own flag
    declarations; argparse's unique prefixes written out (vLLM, SGLang)."""
    if settings is not None and settings.argv is not None and engine == LLAMA_CPP:
        from .deployment import Grammar, for_release

        records = (kb.get("vendored", {}).get(engine) or {}).get("grammars", {}).get(release)
        grammar = None
        if records is not None:
            cache = kb.setdefault("_grammars", {})
            grammar = cache.get((engine, release)) or cache.setdefault((engine, release), Grammar.of(release, records))
        return for_release(settings, grammar, release)
    return unabbreviated(kb, engine, release, settings)


def decide(condition: Condition, release: str, confirmed: set[str], settings: Settings | None,
           defaults: dict | None = None) -> tuple[str, str]:
    """Whether a deployment meets a condition at a release: (MET | NOT_MET | UNDECIDED, what it depends on).

    A setting the deployment leaves alone takes the default the release's code gives it (`defaults`: release ->
    [value, "path:line"], from the release surface); where the surface does not have it, the condition's own
    `default`, when its witness check holds at the release."""
    from_code = (defaults or {}).get(release)
    if from_code is not None:
        value, where = from_code
        code_default = value == COMPUTED
        default = condition.default if code_default and not condition.computed and release in confirmed else value
        default_text = ("the engine computes the default" if default == COMPUTED
                        else f"default {setting_word(default)} in {release}, {where}")
    else:
        default = condition.default
        default_text = ("the engine computes the default" if condition.computed
                        else f"default {setting_word(default)}")
    only_if = f"{condition.describe()} ({default_text})"
    if settings is None:
        return UNDECIDED, only_if
    value, found = _setting(condition, settings)
    if found:
        if value is UNKNOWN:
            return UNDECIDED, f"{only_if}; the logged value cannot be read"
        if condition.boolean:
            value = boolean(value)
        elif value is None:
            return UNDECIDED, f"{only_if}; {condition.setting} is given without a value"
        met = condition.met_by(value)
        return (MET if met else NOT_MET), f"{condition.setting} is {setting_word(value)} ({settings.origin})"
    if default == COMPUTED or default is None:
        return UNDECIDED, f"{only_if}; {settings.origin} does not set it"
    if from_code is None and release not in confirmed:
        return UNDECIDED, f"{only_if}; that default is not verified in this release"
    met = condition.met_by(default)
    return (MET if met else NOT_MET), f"{condition.setting} is not set: {default_text}"


def evaluate(data: dict, release: str, settings: Settings | None, condition: Condition | None = None
             ) -> tuple[str, list[str]]:
    """A compiled condition at a release: (MET | NOT_MET | UNDECIDED, the words of what it depends on).

    A setting is decided by `decide`; what clients send, the endpoints they call and facts in words are never
    decided by settings ("bites only if"). `any` is met when one alternative is, not met when none can be, and
    undecided otherwise, with the undecided alternatives as its words. `condition` is `data` read, when the caller
    has read it already."""
    condition = condition or condition_from_json(data)
    if condition.any:
        outcomes = [evaluate(member, release, settings, alternative)
                    for member, alternative in zip(data["any"], condition.any) if alternative.applies(release)]
        if not outcomes:
            return MET, []
        if any(o == MET for o, _ in outcomes):
            return MET, []
        open_words = [" and ".join(w) for o, w in outcomes if o == UNDECIDED]
        if not open_words:
            return NOT_MET, ["; ".join(w for _, words in outcomes for w in words)]
        return UNDECIDED, [" or ".join(open_words)]
    if condition.undecidable:
        return UNDECIDED, [condition.describe()]
    if data.get("spellings"):  # the aliases the code gives the flag (from the release surfaces)
        from dataclasses import replace
        condition = replace(condition, flags=(*condition.flags, *data["spellings"]))
    if condition.given is not None:
        return _presence(condition, settings)
    decided, why = decide(condition, release, set(data["confirmed"]), settings, data.get("defaults"))
    return decided, [why]


def _presence(condition: Condition, settings: Settings | None) -> tuple[str, list[str]]:
    """`set: true|false`: whether the deployment gives the setting at all (a logged None is not given)."""
    words = condition.describe()
    if settings is None:
        return UNDECIDED, [words]
    value, found = _setting(condition, settings)
    # On a command line a bare flag (None) is given; a start-up log writes a setting left alone as None; a boolean
    # flag turned off (`--no-enable-lora`) is not given.
    given = found and not (settings.logged and value is None) and value is not False
    met = given == condition.given
    shown = f"{condition.setting} is {'given' if given else 'not given'} ({settings.origin})"
    return (MET if met else NOT_MET), [shown]


def _setting(condition: Condition, settings: Settings) -> tuple[object, bool]:
    if condition.env is not None:
        return (settings.env[condition.env], True) if condition.env in settings.env else (None, False)
    for flag in condition.flags:
        key = flag_key(flag)
        if key in settings.flags:
            return settings.flags[key], True
    return None, False


def unabbreviated(kb: dict, engine: str, release: str, settings: Settings | None) -> Settings | None:
    """The settings with each flag the release does not know by that spelling, but that is the start of exactly
    one of its spellings, written out: both engines' parsers are argparse's, which takes a unique prefix
    (`--speculative-algo` for `--speculative-algorithm`). Needs the release's recorded surface."""
    if settings is None or engine == LLAMA_CPP:  # llama.cpp looks an argument up by its exact spelling
        return settings
    surface = kb.get("surface", {}).get(engine) or {}
    releases = kb["engines"][engine]["releases"]
    if release not in releases or not _within(surface.get("recorded", []), releases.index(release)):
        return settings
    index = releases.index(release)
    known = [key for key, runs in surface.get("flags", {}).items() if _within(runs, index)]
    renamed = {}
    for key in settings.flags:
        if key in known or key in ("model", "model_tag") or len(key) < 2:
            continue
        candidates = [k for k in known if k.startswith(key)]
        if len(candidates) == 1 and candidates[0] not in settings.flags:
            renamed[key] = candidates[0]
    if not renamed:
        return settings
    from dataclasses import replace
    return replace(settings, flags={renamed.get(k, k): v for k, v in settings.flags.items()})


def listed(kb: dict, engine: str, release: str, settings: Settings | None, ignore=frozenset()):
    """What an audit lists of one engine at one release with the given settings: (listed, dropped, changed,
    ignored): listed is (entry, group, words) in the KB's order; dropped (entry id, reason); changed and ignored
    are entry ids."""
    settings = resolve(kb, engine, release, settings)
    if settings is not None and not settings.has_flags:  # a source that says nothing of the flags decides nothing
        settings = None
    found, dropped, changed, ignored = [], [], [], []
    for entry in kb["entries"]:
        status = entry["statuses"].get(engine, {}).get(release)
        if status not in (HOLDS, UNVERIFIED):
            if status == CHANGED:
                changed.append(entry["id"])
            continue
        if entry.get("withdrawn"):
            continue
        if entry["id"] in ignore:
            ignored.append(entry["id"])
            continue
        outcome, words = MET, []
        for data in entry["conditions"]:
            condition = condition_from_json(data)
            if condition.engine != engine or not condition.applies(release):
                continue
            decided, why = evaluate(data, release, settings, condition)
            if decided == NOT_MET:
                outcome = NOT_MET
                dropped.append((entry["id"], "; ".join(why)))
                break
            if decided == UNDECIDED:
                outcome = UNDECIDED
                words.extend(why)
        if outcome == NOT_MET:
            continue
        group = UNVERIFIED if status == UNVERIFIED else BITES if outcome == MET else ONLY_IF
        found.append((entry, group, tuple(words)))
    return found, dropped, changed, ignored


def rank(kb: dict, entry: dict) -> int:
    """An entry's place by severity: the order of gotchas/severities.yaml, the worst first (unknown last)."""
    order = kb.get("severities") or []
    severity = entry.get("severity")
    return order.index(severity) if severity in order else len(order)


def audit(kb: dict, installed: list[Installed], settings: dict[str, Settings],
          ignore: AbstractSet[str] = frozenset()) -> Audit:
    """Audit each engine version (or range) of a deployment. Findings are ranked: by group (bites, bites only
    if, unverified), then by severity, the worst first, then in the KB's order."""
    result = Audit()
    seen = set()
    # One version read in several places (a pyproject.toml pin and the Dockerfile's image) is audited once, with
    # the settings of the place that declares some (the container that runs it); two containers that run it with
    # their own settings (two launch scripts) are two deployments, each audited.
    with_settings = {(i.engine, i.version, i.specifier, i.commit) for i in installed if i.settings is not None}
    for item in installed:
        key = (item.engine, item.version, item.specifier, item.commit)
        if item.settings is None and key in with_settings:
            continue
        if item.engine not in kb["engines"] or (key, id(item.settings)) in seen:
            continue
        seen.add((key, id(item.settings)))
        engine = kb["engines"][item.engine]
        given = item.settings if item.settings is not None else settings.get(item.engine)
        if item.specifier is not None:
            _audit_range(kb, item, given, ignore, result)
            continue
        release, note = stand_in(kb, item)
        target = Target(item, release, note, (release,) if release else ())
        result.targets.append(target)
        if note:
            result.notes.append(f"{engine['name']} {note} ({item.origin})")
        if release is None:
            continue
        found, dropped, changed, ignored = listed(kb, item.engine, release, given, ignore)
        later = engine["releases"][engine["releases"].index(release) + 1:]
        clear = _clears(kb, item.engine, later, given, ignore, {e["id"] for e, _, _ in found})
        for entry, group, words in found:
            result.findings.append(Finding(item.engine, release, item, text_at(entry, item.engine, release), group,
                                           words, (release,), clear.get(entry["id"])))
        result.dropped.extend(Dropped(item.engine, release, i, why) for i, why in dropped)
        result.ignored.extend(ignored)
        if later:
            newest_found = listed(kb, item.engine, later[-1], given, ignore)[0]
            now = [e["id"] for e, _, _ in found]
            there = [e["id"] for e, _, _ in newest_found]
            target.upgrade = Upgrade(later[-1], tuple(i for i in now if i not in there),
                                     tuple(i for i in there if i not in now))
        if changed:
            result.notes.append(f"{engine['name']} {release}: {len(changed)} entr{'y' if len(changed) == 1 else 'ies'}"
                                f" whose code says otherwise in this release (`changed`) not listed: "
                                f"{', '.join(changed)}")
    order = {GROUPS[i]: i for i in range(len(GROUPS))}
    position = {e["id"]: i for i, e in enumerate(kb["entries"])}
    result.findings.sort(key=lambda f: (order[f.group], rank(kb, f.entry), position.get(f.id, 0)))
    for target in result.targets:
        given = target.installed.settings or settings.get(target.installed.engine)
        if given is not None and target.release is not None:
            full = cast(Settings, resolve(kb, target.installed.engine, target.release, given))  # given: not None
            result.notes.extend(unknown_settings(kb, target.installed.engine, target.release, full))
            result.notes.extend(n for n in full.notes if n not in result.notes)
    for engine_key, declared in settings.items():
        result.notes.extend(n for n in declared.notes if n not in result.notes)
        if not any(t.installed.engine == engine_key for t in result.targets):
            result.notes.append(f"{declared.origin}: settings of {engine_key}, which no audited version is of")
    result.notes = list(dict.fromkeys(result.notes))  # one version run by two serve lines says its note once
    return result


def _clears(kb: dict, engine: str, later: list[str], settings, ignore, ids: set[str]) -> dict[str, str]:
    """For each id listed now: the nearest later release from which it is never listed again (same settings)."""
    listed_at = [{e["id"] for e, _, _ in listed(kb, engine, release, settings, ignore)[0]} for release in later]
    clears = {}
    for entry_id in ids:
        for i, release in enumerate(later):
            if all(entry_id not in ids_there for ids_there in listed_at[i:]):
                clears[entry_id] = release
                break
    return clears


def _audit_range(kb: dict, item: Installed, given, ignore, result: Audit) -> None:
    """A version range (`vllm>=0.9,<0.11`): every tracked release in it is audited, and a finding says in which
    of them it is listed."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    engine = kb["engines"][item.engine]
    try:
        specifier = SpecifierSet(cast(str, item.specifier))  # a range: the caller's test
    except InvalidSpecifier:
        result.targets.append(Target(item, None, f"{item.specifier} is not a version range"))
        result.notes.append(f"{engine['name']} {item.specifier} is not a version range: not audited ({item.origin})")
        return
    releases = [r for r in engine["releases"] if specifier.contains(r, prereleases=True)]
    if not releases:
        result.targets.append(Target(item, None, "no tracked release is in the range"))
        result.notes.append(f"{engine['name']} {item.specifier or '(any version)'}: no tracked release is in the "
                            f"range; not audited ({item.origin})")
        return
    span = releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"
    note = (f"{item.specifier or 'any version'} is a range: audited at each of its {len(releases)} tracked "
            f"release{'s' if len(releases) != 1 else ''} ({span}); pin it to audit the one you run")
    result.targets.append(Target(item, releases[-1], note, tuple(releases)))
    result.notes.append(f"{engine['name']} {note} ({item.origin})")
    merged: dict[str, list] = {}
    spared: dict[str, tuple[str, str]] = {}
    for release in releases:
        found, dropped, _changed, ignored = listed(kb, item.engine, release, given, ignore)
        result.ignored.extend(i for i in ignored if i not in result.ignored)
        for entry, group, words in found:
            merged.setdefault(entry["id"], []).append((release, entry, group, words))
        for entry_id, why in dropped:
            spared[entry_id] = (release, why)  # the newest release of the range where the settings spare it
    for entry_id, (release, why) in spared.items():
        if entry_id not in merged:  # spared in every release of the range where it would bite
            result.dropped.append(Dropped(item.engine, release, entry_id, why))
    worst = {BITES: 0, ONLY_IF: 1, UNVERIFIED: 2}
    for hits in merged.values():
        release, entry, _, words = hits[-1]
        group = min((h[2] for h in hits), key=worst.__getitem__)
        result.findings.append(Finding(item.engine, release, item, text_at(entry, item.engine, release), group,
                                       words, tuple(h[0] for h in hits)))


def _within(runs: list, index: int) -> bool:
    return any(a <= index <= b for a, b in runs)


def unknown_settings(kb: dict, engine: str, release: str, settings: Settings) -> list[str]:
    """Notes on the flags and engine variables of a deployment that the audited release's code does not have
    (from its release surface): the engine refuses such a flag, or never reads such a variable."""
    surface = kb.get("surface", {}).get(engine) or {}
    releases = kb["engines"][engine]["releases"]
    if release not in releases or not _within(surface.get("recorded", []), releases.index(release)):
        return []
    index = releases.index(release)
    name = kb["engines"][engine]["name"]
    prefixes = {"vllm": ("VLLM_",), "sglang": ("SGLANG_", "SGL_"), LLAMA_CPP: ("LLAMA_ARG_",)}.get(
        engine, (engine.upper() + "_",))
    notes = []
    for key in settings.flags:
        if key in ("model", "model_tag") or key.startswith("no_") and key[3:] in settings.flags \
                or key in settings.implied:
            continue
        runs = surface.get("flags", {}).get(key)
        if runs is None or not _within(runs, index):
            spelt = _spelt(settings, key)
            where = _where_else(runs, releases)
            notes.append(f"{settings.origin}: {spelt} is not a flag of {name} {release}{where}")
            continue
        value = settings.flags[key]
        allowed = next((c for r, c in surface.get("choices", {}).get(key, []) if _within(r, index)), None)
        if allowed and isinstance(value, str) and "$" not in value and value not in allowed:
            notes.append(f"{settings.origin}: {_spelt(settings, key)} {value} is not one of its choices in {name} "
                         f"{release} ({', '.join(allowed)}): the engine refuses to start")
    for variable in settings.env:
        if not variable.startswith(prefixes):
            continue
        runs = surface.get("env", {}).get(variable)
        if runs is None or not _within(runs, index):
            notes.append(f"{settings.origin}: {name} {release} does not read {variable}{_where_else(runs, releases)}")
    return notes


def _spelt(settings: Settings, key: str) -> str:
    """A flag's key as it is written on a command line: `--max-model-len`; for llama-server, as the line wrote it
    (`-np`: its short flags are flags of their own spelling)."""
    if settings.engine == LLAMA_CPP and key in settings.written:
        return settings.written[key]
    return "--" + key.replace("_", "-")


def _where_else(runs: list | None, releases: list[str]) -> str:
    if not runs:
        return " (nor any tracked release)"
    spans = [releases[a] if a == b else f"{releases[a]}-{releases[b]}" for a, b in runs]
    return f" (it is in {', '.join(spans)})"


def failing(result: Audit, fail_on: str) -> bool:
    """`bites`: only what the deployment's settings make bite; `holds` (the default): also 'bites only if';
    `unverified`: also entries unverified at the release."""
    groups = (BITES,) if fail_on == "bites" else (BITES, ONLY_IF) if fail_on == HOLDS else GROUPS
    return any(f.group in groups for f in result.findings)


# --- formats ---------------------------------------------------------------------------------------------

def _url(site_url: str, entry_id: str) -> str | None:
    """The entry's page on the site at `site_url` (`urls.entry_url`); None without a site."""
    return entry_url(entry_id, site_url) if site_url else None


def render(fmt: str, kb: dict, result: Audit, site_url: str = "") -> str:
    """The audit in `fmt`, one of `report.choices("audit")` (its writers are this module's)."""
    from .report import writer

    return writer("audit", fmt)(kb, result, site_url)


def _by_target(kb: dict, result: Audit):
    for target in result.targets:
        if target.release is None:
            continue
        name = kb["engines"][target.installed.engine]["name"]
        found = [f for f in result.findings if f.installed == target.installed]
        yield target, name, found


def headline(kb: dict, target: Target, found: list[Finding]) -> str:
    """`12 gotchas; upgrading to 0.33.0 clears 7 of 12 and brings 2 new`."""
    count = f"{len(found)} gotcha{'s' if len(found) != 1 else ''}" if found else "no gotcha applies"
    if len(target.releases) > 1:
        count += f" across {len(target.releases)} tracked releases ({release_spans(target.releases, target.releases)})"
    upgrade = target.upgrade
    if upgrade is not None:
        count += (f"; upgrading to {upgrade.to} clears {len(upgrade.clears)} of {len(found)}"
                  + (f" and brings {len(upgrade.brings)} new" if upgrade.brings else ""))
    return count


def fixed_words(target: Target, f: Finding) -> str | None:
    if target.upgrade is None:
        return None
    return f"fixed in {f.fixed_in}" if f.fixed_in else "not fixed in any tracked release"


def where_words(kb: dict, target: Target, f: Finding) -> str | None:
    """For a range, the releases of it where the finding is listed, when not all of them."""
    if len(target.releases) <= 1 or len(f.releases) == len(target.releases):
        return None
    return f"in {release_spans(f.releases, kb['engines'][f.engine]['releases'])} only"


def _origins(target: Target) -> str:
    """Where the version was read, and where its settings were when elsewhere (`pyproject.toml:3, run by
    serve.sh:2`)."""
    settings = target.installed.settings
    if settings is not None and settings.origin != target.installed.origin:
        return f"{target.installed.origin}, run by {settings.origin}"
    return target.installed.origin


def text(kb: dict, result: Audit, site_url: str = "") -> str:
    from .report import terminal

    out = []
    for target, name, found in _by_target(kb, result):
        shown = target.installed.version if target.installed.version == target.release or len(target.releases) > 1 \
            else f"{target.installed.version} (audited as {target.release})"
        out.append(f"{name} {shown} ({_origins(target)}): {headline(kb, target, found)}")
        for group in GROUPS:
            members = [f for f in found if f.group == group]
            if not members:
                continue
            out.append(f"  {group} ({len(members)}):")
            for f in members:
                out.append(f"    [{f.severity or 'unrated'}] {f.id}: {f.entry['title']}")
                if f.entry.get("parts"):
                    out.append(f"      bites {'; '.join(f.entry['parts'])}")
                for words in f.conditions:
                    out.append(f"      only if {words}")
                if f.entry["workaround"]:
                    out.append(f"      workaround: {f.entry['workaround']}")
                extra = [w for w in (where_words(kb, target, f), fixed_words(target, f)) if w]
                if extra:
                    out.append(f"      {'; '.join(extra)}")
                url = _url(site_url, f.id)
                if url:
                    out.append(f"      {url}")
        if target.upgrade is not None and target.upgrade.brings:
            out.append(f"  upgrading to {target.upgrade.to} brings: {', '.join(target.upgrade.brings)}")
    if result.dropped:
        out.append("not listed, because of the deployment's settings:")
        out.extend(f"  {d.id} ({d.engine} {d.release}): {d.reason}" for d in result.dropped)
    if result.ignored:
        out.append(f"ignored (--ignore): {', '.join(sorted(set(result.ignored)))}")
    if not result.audited:
        out.append(NOTHING_AUDITED)
    out.extend(f"note: {n}" for n in result.notes)
    return terminal("\n".join(out)) + "\n"


#: What audit says when it audited no engine version (exit EXIT_NOTHING_AUDITED).
NOTHING_AUDITED = ("nothing audited: no engine version was found at a tracked release; point audit at the "
                   "deployment's files or folder, or give --engine ENGINE==VERSION, --python PATH or --serve-log")


def _finding_json(kb: dict, target: Target, f: Finding, site_url: str) -> dict:
    return {"id": f.id, "title": f.entry["title"], "severity": f.severity, "status": f.group,
            "only_if": list(f.conditions), "workaround": f.entry["workaround"], "parts": f.entry.get("parts", []),
            "releases": list(f.releases), "fixed_in": f.fixed_in, "url": _url(site_url, f.id)}


def as_json(kb: dict, result: Audit, site_url: str = "") -> str:
    data = {
        "tool": f"gotchas {__version__}",
        "kb": kb.get("compiled_by"),
        "audited": result.audited,
        "targets": [{
            "engine": t.installed.engine, "version": t.installed.version, "release": t.release,
            "releases": list(t.releases), "range": t.installed.specifier,
            "origin": t.installed.origin, "note": t.note,
            "settings": t.installed.settings.origin if t.installed.settings is not None else None,
            "upgrade": {"to": t.upgrade.to, "clears": list(t.upgrade.clears), "brings": list(t.upgrade.brings)}
            if t.upgrade else None,
            "gotchas": [_finding_json(kb, t, f, site_url) for f in result.findings if f.installed == t.installed],
        } for t in result.targets],
        "dropped": [{"engine": d.engine, "release": d.release, "id": d.id, "reason": d.reason} for d in result.dropped],
        "ignored": sorted(set(result.ignored)),
        "notes": result.notes,
    }
    return json.dumps(data, indent=2) + "\n"


def markdown(kb: dict, result: Audit, site_url: str = "") -> str:
    out = ["# Gotchas that apply to this deployment", ""]
    for target, name, found in _by_target(kb, result):
        out.append(f"## {md.text(name)} {md.text(target.installed.version)}" + (
            f" (audited as {md.text(target.release)})" if target.release != target.installed.version
            and len(target.releases) <= 1 else ""))
        out += ["", f"From {md.text(_origins(target))}."]
        out.append("")
        said = headline(kb, target, found)
        out += [md.text(said[0].upper() + said[1:], start=True) + ".", ""]
        if not found:
            continue
        out += ["| status | severity | gotcha | workaround | fixed in |", "|---|---|---|---|---|"]
        for group in GROUPS:
            for f in (f for f in found if f.group == group):
                title = f"[{md.inline(f.entry['title'])}]({_url(site_url, f.id)})" if site_url \
                    else md.inline(f.entry["title"])
                status = group + "".join(f": {md.inline(w, links=False)}" for w in f.conditions)
                where = where_words(kb, target, f)
                fixed = md.text(f.fixed_in or ("-" if target.upgrade else ""))
                out.append(f"| {status} | {md.text(str(f.severity))} | {md.code(f.id)}: {title}"
                           f"{f' ({md.text(where)})' if where else ''} | {md.inline(f.entry['workaround'])} | "
                           f"{fixed} |")
        out.append("")
    if result.dropped:
        out += ["Not listed, because of the deployment's settings:", ""]
        out += [f"- {md.code(d.id, table=False)} ({md.text(d.engine)} {md.text(d.release)}): "
                f"{md.inline(d.reason, links=False)}"
                for d in result.dropped]
        out.append("")
    if not result.audited:
        out += [md.text(NOTHING_AUDITED, start=True), ""]
    out += [f"- note: {md.inline(n, links=False)}" for n in result.notes]
    return "\n".join(out).rstrip() + "\n"


_LEVELS = {BITES: "error", ONLY_IF: "warning", UNVERIFIED: "note"}
#: Severities whose findings keep their group's level; the others are one level lower (a gotcha that bites but
#: costs latency, money or visibility is a warning, not an error).
ERROR_SEVERITIES = ("outage", "security", "wrong-output")
_LOWER = {"error": "warning", "warning": "note", "note": "note"}


def sarif_level(f: Finding) -> str:
    level = _LEVELS[f.group]
    return level if f.severity in ERROR_SEVERITIES else _LOWER[level]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: What `sarif_uri` keeps as it is in a path segment (RFC 3986 pchar but ':', which would read as a scheme in a
#: relative reference's first segment): unreserved characters and sub-delims; '/' between segments.
_URI_SAFE = "/-._~!$&'()*+,;=@"


def sarif_uri(path: str, root: str | os.PathLike | None = None) -> str:
    """A file audit read as SARIF's `artifactLocation.uri`, an RFC 3986 URI reference (the one function for it):
    relative to `root` (the folder audit runs in, a repository's root in CI: default the current folder) with
    forward slashes, each byte but unreserved ones and sub-delims percent-encoded (a space, `#`, `?`, `%`, `:`,
    a backslash, non-ASCII as its UTF-8 bytes, undecodable bytes of a file name as they were on disk); a file
    outside `root` as an absolute `file:` URI."""
    if os.path.isabs(path):
        base = os.path.abspath(root if root is not None else os.curdir)
        absolute = os.path.normpath(path)
        try:
            inside = os.path.commonpath([base, absolute]) == base
        except ValueError:  # another drive
            inside = False
        if not inside:
            return "file://" + urllib.parse.quote_from_bytes(os.fsencode(absolute).replace(os.sep.encode(), b"/"),
                                                             safe=_URI_SAFE + ":")
        path = os.path.relpath(absolute, base)
    relative = os.fsencode(path)
    if os.altsep:  # Windows: backslashes are separators
        relative = relative.replace(os.sep.encode(), b"/")
    return urllib.parse.quote_from_bytes(relative, safe=_URI_SAFE)


def sarif(kb: dict, result: Audit, site_url: str = "") -> str:
    rules: list[dict] = []
    index: dict[str, int] = {}
    for f in result.findings:
        if f.id in index:
            continue
        index[f.id] = len(rules)
        rule = {"id": f.id, "name": f.id, "shortDescription": {"text": f.entry["title"]},
                "help": {"text": f.entry["workaround"] or f.entry["title"]},
                "properties": {"engines": f.entry["engines"], "severity": f.severity,
                               "tags": [t for t in (f.severity,) if t]}}
        url = _url(site_url, f.id)
        if url:
            rule["helpUri"] = url
        rules.append(rule)
    results = []
    for f in result.findings:
        name = kb["engines"][f.engine]["name"]
        message = f"{name} {f.installed.version}: {f.entry['title']}"
        if f.conditions:
            message += " (only if " + "; ".join(f.conditions) + ")"
        if f.entry["workaround"]:
            message += f" Workaround: {f.entry['workaround']}"
        if f.fixed_in:
            message += f" Fixed in {f.fixed_in}."
        item = {"ruleId": f.id, "ruleIndex": index[f.id], "level": sarif_level(f), "message": {"text": message},
                "properties": {"status": f.group, "severity": f.severity, "engine": f.engine,
                               "version": f.installed.version, "release": f.release, "fixed_in": f.fixed_in}}
        if f.installed.file:
            region = {"startLine": f.installed.line} if f.installed.line else None
            location: dict[str, dict] = {"physicalLocation": {"artifactLocation": {"uri": sarif_uri(f.installed.file)}}}
            if region:
                location["physicalLocation"]["region"] = region
            item["locations"] = [location]
        results.append(item)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "gotchas", "version": __version__, "semanticVersion": __version__,
                                "rules": rules}},
            "results": results,
        }],
    }
    return json.dumps(log, indent=2) + "\n"
