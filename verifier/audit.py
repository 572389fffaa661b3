"""`gotchas audit`: which gotchas bite a deployment, from its engine versions and settings (the pip-audit model).

The KB comes compiled (`compiled.py`): packaged with the wheel, or from a checkout. For each engine version a
deployment runs, the nearest tracked release stands in for it (with a note when it is not that release), and
each entry's status there decides: `holds` bites, `unverified` is listed as such, `not-affected` and `changed`
are not listed. Then the entry's conditions (`when`) of that engine that apply at that release: a deployment's
settings (a serve command line, a start-up log) decide them; a setting it does not give takes the condition's
default, which counts only in a release where its witness check holds. A condition that is not met drops the
entry; one that cannot be decided makes it "bites only if ...".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from . import __version__
from .compiled import condition_from_json
from .deployment import UNKNOWN, Installed, Settings, boolean, flag_key
from .model import CHANGED, COMPUTED, HOLDS, UNVERIFIED, Condition, setting_word

BITES = "bites"
ONLY_IF = "bites only if"
#: The groups of a report, in the order they are shown; `--fail-on holds` fails on the first two.
GROUPS = (BITES, ONLY_IF, UNVERIFIED)
FORMATS = ("text", "json", "markdown", "sarif")

MET, NOT_MET, UNDECIDED = "met", "not met", "undecided"


@dataclass(frozen=True)
class Finding:
    engine: str
    release: str  # the tracked release audited
    installed: Installed
    entry: dict  # the compiled entry
    group: str  # bites | bites only if | unverified
    conditions: tuple[str, ...] = ()  # what it bites only if, in words

    @property
    def id(self) -> str:
        return self.entry["id"]


@dataclass(frozen=True)
class Dropped:
    """An entry whose status bites the release, and that a setting of the deployment spares."""

    engine: str
    release: str
    id: str
    reason: str


@dataclass
class Target:
    """One engine version of the deployment, and the tracked release audited for it."""

    installed: Installed
    release: str | None
    note: str | None = None


@dataclass
class Audit:
    targets: list[Target] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def nearest_release(version: str, tracked: list[str]) -> tuple[str | None, str | None]:
    """The tracked release that stands in for `version`, and a note when it is not that release.

    A local build (`0.10.1+cu126`) is its public version; a release candidate is the final release it
    precedes, when tracked; a development build, a release the ledger does not track, or one newer than every
    tracked release is the newest tracked release before it. Older than every tracked release: none."""
    try:
        wanted = Version(version)
    except InvalidVersion:
        return None, f"{version} is not a PEP 440 version: not audited"
    by_version = {}
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


def _setting(condition: Condition, settings: Settings) -> tuple[object, bool]:
    if condition.env is not None:
        return (settings.env[condition.env], True) if condition.env in settings.env else (None, False)
    for flag in condition.flags:
        key = flag_key(flag)
        if key in settings.flags:
            return settings.flags[key], True
    return None, False


def audit(kb: dict, installed: list[Installed], settings: dict[str, Settings], ignore: set[str] = frozenset()
          ) -> Audit:
    result = Audit()
    seen = set()
    for item in installed:
        if item.engine not in kb["engines"] or (item.engine, item.version) in seen:
            continue
        seen.add((item.engine, item.version))
        engine = kb["engines"][item.engine]
        release, note = nearest_release(item.version, engine["releases"])
        result.targets.append(Target(item, release, note))
        if note:
            result.notes.append(f"{engine['name']} {note} ({item.origin})")
        if release is None:
            continue
        changed = []
        for entry in kb["entries"]:
            status = entry["statuses"].get(item.engine, {}).get(release)
            if status not in (HOLDS, UNVERIFIED):
                if status == CHANGED:
                    changed.append(entry["id"])
                continue
            if entry.get("withdrawn"):
                continue
            if entry["id"] in ignore:
                result.ignored.append(entry["id"])
                continue
            outcome, words = MET, []
            for data in entry["conditions"]:
                condition = condition_from_json(data)
                if condition.engine != item.engine or not condition.applies(release):
                    continue
                decided, why = decide(condition, release, set(data["confirmed"]), settings.get(item.engine),
                                      data.get("defaults"))
                if decided == NOT_MET:
                    outcome = NOT_MET
                    result.dropped.append(Dropped(item.engine, release, entry["id"], why))
                    break
                if decided == UNDECIDED:
                    outcome = UNDECIDED
                    words.append(why)
            if outcome == NOT_MET:
                continue
            group = UNVERIFIED if status == UNVERIFIED else BITES if outcome == MET else ONLY_IF
            result.findings.append(Finding(item.engine, release, item, entry, group, tuple(words)))
        if changed:
            result.notes.append(f"{engine['name']} {release}: {len(changed)} entr{'y' if len(changed) == 1 else 'ies'}"
                                f" whose code says otherwise in this release (`changed`) not listed: "
                                f"{', '.join(changed)}")
    for target in result.targets:
        given = settings.get(target.installed.engine)
        if given is not None and target.release is not None:
            result.notes.extend(unknown_settings(kb, target.installed.engine, target.release, given))
    for key, given in settings.items():
        result.notes.extend(given.notes)
        if not any(t.installed.engine == key for t in result.targets):
            result.notes.append(f"{given.origin}: settings of {key}, which no audited version is of")
    return result


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
    prefixes = {"vllm": ("VLLM_",), "sglang": ("SGLANG_", "SGL_")}.get(engine, (engine.upper() + "_",))
    notes = []
    for key in settings.flags:
        if key in ("model", "model_tag") or key.startswith("no_") and key[3:] in settings.flags:
            continue
        runs = surface.get("flags", {}).get(key)
        if runs is None or not _within(runs, index):
            spelt = "--" + key.replace("_", "-")
            where = _where_else(runs, releases)
            notes.append(f"{settings.origin}: {spelt} is not a flag of {name} {release}{where}")
    for variable in settings.env:
        if not variable.startswith(prefixes):
            continue
        runs = surface.get("env", {}).get(variable)
        if runs is None or not _within(runs, index):
            notes.append(f"{settings.origin}: {name} {release} does not read {variable}{_where_else(runs, releases)}")
    return notes


def _where_else(runs: list | None, releases: list[str]) -> str:
    if not runs:
        return " (nor any tracked release)"
    spans = [releases[a] if a == b else f"{releases[a]}-{releases[b]}" for a, b in runs]
    return f" (it is in {', '.join(spans)})"


def failing(result: Audit, fail_on: str) -> bool:
    groups = (BITES, ONLY_IF) if fail_on == HOLDS else GROUPS
    return any(f.group in groups for f in result.findings)


# --- formats ---------------------------------------------------------------------------------------------

def entry_url(site_url: str, entry_id: str) -> str | None:
    return f"{site_url.rstrip('/')}/entries/{entry_id}/" if site_url else None


def render(fmt: str, kb: dict, result: Audit, site_url: str = "") -> str:
    return {"text": text, "json": as_json, "markdown": markdown, "sarif": sarif}[fmt](kb, result, site_url)


def _by_target(kb: dict, result: Audit):
    for target in result.targets:
        if target.release is None:
            continue
        name = kb["engines"][target.installed.engine]["name"]
        found = [f for f in result.findings if f.installed == target.installed]
        yield target, name, found


def text(kb: dict, result: Audit, site_url: str = "") -> str:
    from .report import terminal

    out = []
    for target, name, found in _by_target(kb, result):
        shown = target.installed.version if target.installed.version == target.release else \
            f"{target.installed.version} (audited as {target.release})"
        out.append(f"{name} {shown} ({target.installed.origin}): "
                   + (f"{len(found)} gotcha{'s' if len(found) != 1 else ''}" if found else "no gotcha applies"))
        for group in GROUPS:
            members = [f for f in found if f.group == group]
            if not members:
                continue
            out.append(f"  {group} ({len(members)}):")
            for f in members:
                out.append(f"    {f.id}: {f.entry['title']}")
                for words in f.conditions:
                    out.append(f"      only if {words}")
                if f.entry["workaround"]:
                    out.append(f"      workaround: {f.entry['workaround']}")
                url = entry_url(site_url, f.id)
                if url:
                    out.append(f"      {url}")
    if result.dropped:
        out.append("not listed, because of the deployment's settings:")
        out.extend(f"  {d.id} ({d.engine} {d.release}): {d.reason}" for d in result.dropped)
    if result.ignored:
        out.append(f"ignored (--ignore): {', '.join(sorted(set(result.ignored)))}")
    if not result.targets:
        out.append("no engine found to audit: give --engine ENGINE==VERSION, a requirements or lock file, or "
                   "--python PATH")
    out.extend(f"note: {n}" for n in result.notes)
    return terminal("\n".join(out)) + "\n"


def _finding_json(f: Finding, site_url: str) -> dict:
    return {"id": f.id, "title": f.entry["title"], "status": f.group, "only_if": list(f.conditions),
            "workaround": f.entry["workaround"], "url": entry_url(site_url, f.id)}


def as_json(kb: dict, result: Audit, site_url: str = "") -> str:
    data = {
        "tool": f"gotchas {__version__}",
        "kb": kb.get("compiled_by"),
        "targets": [{
            "engine": t.installed.engine, "version": t.installed.version, "release": t.release,
            "origin": t.installed.origin, "note": t.note,
            "gotchas": [_finding_json(f, site_url) for f in result.findings if f.installed == t.installed],
        } for t in result.targets],
        "dropped": [{"engine": d.engine, "release": d.release, "id": d.id, "reason": d.reason} for d in result.dropped],
        "ignored": sorted(set(result.ignored)),
        "notes": result.notes,
    }
    return json.dumps(data, indent=2) + "\n"


def _md(value: str) -> str:
    return value.replace("|", "\\|").replace("\n", " ")


def markdown(kb: dict, result: Audit, site_url: str = "") -> str:
    out = ["# Gotchas that apply to this deployment", ""]
    for target, name, found in _by_target(kb, result):
        out.append(f"## {name} {target.installed.version}" + (
            f" (audited as {target.release})" if target.release != target.installed.version else ""))
        out.append("")
        if not found:
            out += ["No gotcha applies.", ""]
            continue
        out += ["| status | gotcha | workaround |", "|---|---|---|"]
        for group in GROUPS:
            for f in (f for f in found if f.group == group):
                title = f"[{_md(f.entry['title'])}]({entry_url(site_url, f.id)})" if site_url else _md(f.entry["title"])
                status = group + ("".join(f": {_md(w)}" for w in f.conditions) if f.conditions else "")
                out.append(f"| {status} | `{f.id}`: {title} | {_md(f.entry['workaround'])} |")
        out.append("")
    if result.dropped:
        out += ["Not listed, because of the deployment's settings:", ""]
        out += [f"- `{d.id}` ({d.engine} {d.release}): {_md(d.reason)}" for d in result.dropped]
        out.append("")
    out += [f"- note: {_md(n)}" for n in result.notes]
    return "\n".join(out).rstrip() + "\n"


_LEVELS = {BITES: "error", ONLY_IF: "warning", UNVERIFIED: "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def sarif(kb: dict, result: Audit, site_url: str = "") -> str:
    rules, index = [], {}
    for f in result.findings:
        if f.id in index:
            continue
        index[f.id] = len(rules)
        rule = {"id": f.id, "name": f.id, "shortDescription": {"text": f.entry["title"]},
                "help": {"text": f.entry["workaround"] or f.entry["title"]},
                "properties": {"engines": f.entry["engines"]}}
        url = entry_url(site_url, f.id)
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
        item = {"ruleId": f.id, "ruleIndex": index[f.id], "level": _LEVELS[f.group], "message": {"text": message},
                "properties": {"status": f.group, "engine": f.engine, "version": f.installed.version,
                               "release": f.release}}
        if f.installed.file:
            region = {"startLine": f.installed.line} if f.installed.line else None
            location = {"physicalLocation": {"artifactLocation": {"uri": f.installed.file}}}
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
