"""Release pages as an answer to "what bites this release, and what do I do", scanned in seconds: a table of the
entries that bite (or may), the worst first, each row a line (severity, area, the settings it needs, where it
stops) that opens on its symptom, what to do and the claims at this release; how many an upgrade to the newest
clears; then, collapsed, what is contradicted, not affected, and changed since the previous release."""

from __future__ import annotations

from ..model import CHANGED, HOLDS, NOT_AFFECTED, UNVERIFIED
from . import evidence
from .entry import conditions_view
from .model import EngineView
from .safe import web_url
from .surface import has_surface
from .text import section_html, summary
from .words import reason_anchor
from .writer import Builder, Page

#: The sections of a release page, by entry status: what each says to an operator.
SECTIONS = (
    (HOLDS, "bite", "These gotchas bite {name} {version}",
     "Every claim of these entries holds in this release's code: expect the symptom, apply the workaround."),
    (UNVERIFIED, "unverified", "Probably bite {name} {version}: not every claim verified",
     ("Not every claim could be checked here (its code is not where the check looks, or could not be read); "
      "none is contradicted. Do not read this as \"does not apply\".")),
    (CHANGED, "changed", "Changed in {name} {version}: a claim is contradicted",
     ("A claim is contradicted by this release's code: the gotcha may be gone or different here. Read the "
      "contradicted claim before relying on the workaround.")),
    (NOT_AFFECTED, "not-affected", "Not affected in {name} {version}",
     "These entries say their gotcha began later or was fixed earlier (introduced / fixed)."),
)


def build(b: Builder, key: str, view: EngineView, version: str, previous: str | None, following: str | None) -> None:
    site = b.site
    release = view.ledger.releases[version]
    groups: dict[str, list[dict]] = {status: [] for status, *_ in SECTIONS}
    changed_since = []
    later = view.versions[view.versions.index(version) + 1:]
    for entry in site.entries:
        result = release.entries.get(entry.id)
        if result is None:
            continue
        text = site.text_at(entry, key, version)  # as it reads in this release: its bounds, its values
        before = view.ledger.entry(previous, entry.id) if previous else None
        if before is not None and before.status != result.status:
            changed_since.append({"entry": entry, "title": text.title, "before": before.status,
                                  "after": result.status})
        checks = []
        for check in entry.checks:
            verdict = result.checks.get(check.id)
            if verdict is not None:
                checks.append({"check": check, "verdict": verdict,
                               "link": evidence.code_link(site, key, version, verdict),
                               "reason_anchor": reason_anchor(verdict.reason, verdict.message)})
        groups.setdefault(result.status, []).append({
            "entry": entry, "status": result.status, "verified": result.verified, "checks": checks,
            "title": text.title, "parts": text.says,
            "symptom": section_html(text.sections.get("Symptom", "")),
            "workaround": summary(text.sections.get("Workaround", "")),
            "introduced": entry.introduced.get(key), "fixed": entry.fixed.get(key),
            "conditions": conditions_view(site, entry, key, version),
            **_until(dict(site.status(entry, key).statuses), later),
        })
    rank = {term: i for i, term in enumerate(site.kb.severities)}
    for members in groups.values():  # the worst first, as audit ranks them; then the KB's order
        members.sort(key=lambda item: rank.get(item["entry"].severity, len(rank)))
    # The table: what bites and what probably does, the worst first, then what bites before what may.
    table = sorted(groups.get(HOLDS, []) + groups.get(UNVERIFIED, []),
                   key=lambda item: (rank.get(item["entry"].severity, len(rank)), item["status"] != HOLDS))
    sections = [{"status": status, "anchor": anchor,
                 "heading": heading.format(name=view.engine.name, version=version),
                 "meaning": meaning, "members": groups.get(status, [])}
                for status, anchor, heading, meaning in SECTIONS]
    newest = view.latest
    clears = [item for item in table if item["cleared"]]
    context = {"key": key, "engine": view.engine, "version": version, "release": release, "previous": previous,
               "following": following, "sections": sections, "changed_since": changed_since, "table": table,
               "tag": view.ref(version), "commit": view.commit(version),
               "commit_url": tree_url(view.engine, view.commit(version)), "surface": has_surface(view, version),
               "newest": newest,
               "clears": clears, "severities": [s for s in site.kb.severities
                                                if any(i["entry"].severity == s for i in table)],
               "schemes": sorted({item["entry"].scheme for item in table})}
    b.page(Page(("engines", key, version, "index.html"), f"Gotchas in {view.engine.name} {version}",
                "release.html", context,
                f"Which gotchas bite {view.engine.name} {version}, and what to do about each."))


def tree_url(engine, commit: str | None) -> str | None:
    """The forge's page of the tree at a commit, when the repository is a web URL."""
    if not commit:
        return None
    found = engine.repository.rstrip("/").removesuffix(".git") + "/tree/" + commit
    return found if web_url(found) else None


def _until(statuses: dict[str, str], later: list[str]) -> dict:
    """Where an entry that bites here stops being listed in a later release (`until`: the first later release
    where it is not affected, fixed, or a claim is contradicted, changed; None while it bites or may in every
    later release tracked), and whether the newest release is clear of it (`cleared`)."""
    clear = (NOT_AFFECTED, CHANGED)
    first = next((v for v in later if statuses.get(v) in clear), None)
    return {"until": {"version": first, "status": statuses[first]} if first else None,
            "cleared": bool(later) and statuses.get(later[-1]) in clear}
