"""Entry pages: the status on each engine in words and as a labelled strip, the sections, and the evidence of
each claim at the latest release (a few lines, links to code only where the file exists)."""

from __future__ import annotations

from .. import history
from ..model import CHANGED, HOLDS, UNVERIFIED, Entry
from . import evidence
from .model import Site
from .text import MAX_MARKDOWN, render_sections
from .words import reason_anchor
from .writer import Builder, Page, release_url


def runs(site: Site, entry: Entry, engine: str) -> list[dict]:
    """The engine's releases, oldest first, in runs of one status (an entry's `None`: not verified there)."""
    view = site.engines.get(engine)
    if view is None:
        return []
    st = site.status(entry, engine)
    statuses = dict(st.statuses)
    found: list[dict] = []
    for version in view.versions:
        status = statuses.get(version)
        if found and found[-1]["status"] == status:
            found[-1]["last"] = version
            found[-1]["count"] += 1
        else:
            found.append({"status": status, "first": version, "last": version, "count": 1, "latest": False,
                          "oldest": False})
    for run in found:
        run["verified"] = st.verified.get(run["last"]) if run["status"] == UNVERIFIED else None
        run["first_url"] = release_url(engine, run["first"])
        run["last_url"] = release_url(engine, run["last"])
    total = len(view.versions)
    for i, run in enumerate(found):  # a change's version is written on the strip where it fits
        needed = 7 * len(run["first"]) + 8  # pixels, at the strip's font size
        run["label"] = "" if i == 0 else "always" if run["count"] / total * 220 >= needed else (
            "wide" if run["count"] / total * 900 >= needed else "")  # a bar of 220 px at 360, 900 px from 1120
    if found:
        found[-1]["latest"] = True
        found[0]["oldest"] = True
    return found


def conditions_view(site: Site, entry: Entry, engine: str, version: str | None = None) -> list[dict]:
    """An entry's conditions for one engine (FORMAT.md, "Conditions"), in words: at `version`, only those that
    apply there, each saying whether its witness (the check that pins the default) holds in that release."""
    found = []
    for condition in entry.conditions:
        if condition.engine != engine or (version is not None and not condition.applies(version)):
            continue
        span = ", ".join(f"{word} {bound}" for word, bound in (("from", condition.since), ("until", condition.until))
                         if bound)
        confirmed = None
        if version is not None and condition.witness:
            record = site.record(entry, engine, version)
            verdict = record.checks.get(condition.witness) if record else None
            confirmed = verdict is not None and verdict.verdict == HOLDS
        # A setting without a written default takes the code's at each release (the release surface): on a
        # release's page, that release's; what clients send and facts have none.
        default = condition.default_text if condition.default is not None else None
        if default is None and version is not None and condition.kind in ("flag", "env") and condition.given is None:
            default = _code_default(site, engine, version, condition)
        found.append({"text": condition.describe(), "default": default, "witness": condition.witness,
                      "span": span, "confirmed": confirmed})
    return found


def _code_default(site: Site, engine: str, version: str, condition) -> str | None:
    """The default the code of `version` gives the condition's setting, in words, from its release surface."""
    from ..model import COMPUTED, setting_word
    from ..surface.conditions import surface_default
    from .surface import surfaced

    view = site.engines.get(engine)
    surface = surfaced(view, version) if view is not None else None
    found = surface_default(condition, surface) if surface is not None else None
    if found is None:
        return None
    value, where = found
    return f"{'computed by the engine' if value == COMPUTED else setting_word(value)} in {version}, {where}"


def status_view(site: Site, entry: Entry, engine: str) -> dict:
    st = site.status(entry, engine)
    view = site.engines.get(engine)
    found = runs(site, entry, engine)
    oldest_changed = bool(found) and found[0]["status"] == CHANGED and len(found) > 1
    return {"engine": engine, "name": site.engine_name(engine), "latest": st.latest,
            "latest_version": st.latest_version, "runs": found, "total": len(view.versions) if view else 0,
            "oldest_changed": oldest_changed, "conditions": conditions_view(site, entry, engine)}


def check_view(site: Site, entry: Entry, check) -> dict:
    view = site.engines.get(check.engine)
    version = view.latest if view else None
    record = site.record(entry, check.engine, version) if version else None
    verdict = record.checks.get(check.id) if record else None
    found = evidence.record(view, f"{entry.id}/{check.id}", version)
    return {
        "check": check, "verdict": verdict, "version": version, "engine_name": site.engine_name(check.engine),
        "tag": site.kb.engines[check.engine].tag(version) if version and check.engine in site.kb.engines else "",
        "link": evidence.code_link(site, check.engine, version, verdict) if version else None,
        "reason_anchor": reason_anchor(verdict.reason, verdict.message) if verdict else "",
        "excerpt": evidence.excerpt(found, evidence.whole_scope(check, verdict)) if verdict else None,
    }


def build(b: Builder) -> None:
    site = b.site
    for entry in site.entries:
        transitions = [(engine, t) for engine in entry.engines for t in site.status(entry, engine).transitions]
        context = {
            "entry": entry,
            "statuses": [status_view(site, entry, engine) for engine in entry.engines],
            "sections": render_sections(entry),
            "checks": [check_view(site, entry, check) for check in entry.checks],
            "transitions": transitions, "describe": history.describe_verdict,
            "edit_url": f"{site.edit_base}gotchas/{entry.id}.md" if site.edit_base else None,
            "HOLDS": HOLDS, "max_markdown": MAX_MARKDOWN, "severities": site.kb.severities,
        }
        b.pages.append(Page(("entries", entry.id, "index.html"), entry.title, "entry.html", context,
                            entry.sections.get("Symptom", entry.title)[:300]))
