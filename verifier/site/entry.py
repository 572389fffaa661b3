"""Entry pages: the status on each engine in words and as a labelled strip, the sections, and the evidence of
each claim at a release the reader picks (a few lines, links to code only where the file exists): the page opens
at the newest release, or the last one a fixed entry bit; `evidence.json` beside it has every release."""

from __future__ import annotations

from .. import history
from ..model import CHANGED, HOLDS, NOT_AFFECTED, UNVERIFIED, Entry
from ..urls import release_url
from . import evidence, words
from .model import Site, short_ref
from .safe import _json
from .text import MAX_MARKDOWN, cut, render_sections
from .words import VERDICT_TERMS, reason_anchor
from .writer import Builder, Page


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
    """An entry's conditions for one engine (docs/format.md, "Conditions"), in words: at `version`, only those that
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
        text = condition.describe()
        found.append({"text": text, "default": default, "witness": condition.witness, "short": cut(text, 70),
                      "setting": condition.kind in ("flag", "env"),
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


def shown_release(site: Site, entry: Entry, engine: str) -> str | None:
    """The release whose evidence an entry page opens at: the newest, or, for an entry the newest release is not
    affected by (fixed), the last release it bit, where its code is."""
    view = site.engines.get(engine)
    if view is None:
        return None
    st = site.status(entry, engine)
    if st.latest == NOT_AFFECTED:
        bit = [version for version, status in st.statuses if status in (HOLDS, UNVERIFIED)]
        if bit:
            return bit[-1]
    return view.latest


def check_view(site: Site, entry: Entry, check, version: str | None = None) -> dict:
    """A check's evidence at `version` of its engine (default: the release the page opens at)."""
    view = site.engines.get(check.engine)
    version = version or shown_release(site, entry, check.engine)
    record = site.record(entry, check.engine, version) if version else None
    verdict = record.checks.get(check.id) if record else None
    key = f"{entry.id}/{check.id}"
    found = evidence.record(view, key, version) or (
        evidence.at_release(view, key, version, verdict) if version else None)  # no release: no verdict either
    form = _form_of(check, verdict)
    return {
        "check": check, "form": form, "verdict": verdict, "version": version,
        "engine_name": site.engine_name(check.engine),
        "tag": short_ref(site.engines[check.engine].ref(version)) if version and check.engine in site.engines else "",
        "link": evidence.code_link(site, check.engine, version, verdict) if version else None,
        "reason_anchor": reason_anchor(verdict.reason, verdict.message) if verdict else "",
        "excerpt": evidence.excerpt(found, evidence.whole_scope(check, verdict)) if verdict else None,
    }


def _form_of(check, verdict):
    """The form of the check a verdict is of (the check's own form when the verdict does not say)."""
    forms = check.forms
    if verdict is not None and verdict.form is not None and 0 <= verdict.form < len(forms):
        return forms[verdict.form]
    return forms[0]


def evidence_json(site: Site, entry: Entry) -> dict:
    """What the entry page's release picker shows, for every release of each engine (evidence.js renders it as the
    page renders its default release): per check its forms; per release and check the verdict, the place, the
    link to the code and the window of lines (an index into the check's distinct windows, its first line)."""
    checks: dict[str, dict] = {}
    engines: dict[str, dict] = {}
    for check in entry.checks:
        checks[check.id] = {"engine": check.engine, "claim": check.claim, "windows": [],
                            "forms": [[f.matcher, f.pattern, f.scope or "", f.after or "", bool(f.adjacent), f.path]
                                      for f in check.forms]}
    distinct: dict[str, dict[tuple, int]] = {}
    for engine in entry.engines:
        view = site.engines.get(engine)
        if view is None:
            continue
        at: dict[str, dict] = {}
        for version in view.versions:
            record = site.record(entry, engine, version)
            if record is None:
                continue
            found = {}
            for check in entry.checks:
                verdict = record.checks.get(check.id) if check.engine == engine else None
                if verdict is None:
                    continue
                window = evidence.at_release(view, f"{entry.id}/{check.id}", version, verdict)
                item = [verdict.verdict, verdict.form or 0, verdict.path or "", list(verdict.lines or ()),
                        verdict.symbol or "", verdict.reason or "", verdict.hint or "",
                        evidence.code_link(site, engine, version, verdict) or "",
                        reason_anchor(verdict.reason, verdict.message) if verdict.reason else "",
                        evidence.whole_scope(check, verdict)]
                if window is not None:
                    lines = tuple(window["lines"])
                    index = distinct.setdefault(check.id, {}).setdefault(lines, len(distinct[check.id]))
                    item += [index, window["start"]]
                found[check.id] = item
            at[version] = found
        engines[engine] = {"name": site.engine_name(engine), "shown": shown_release(site, entry, engine),
                           "versions": list(reversed(view.versions)), "at": at,
                           "tags": {v: short_ref(view.ref(v)) for v in view.versions}}
    for check_id, by_lines in distinct.items():
        checks[check_id]["windows"] = [list(lines) for lines in by_lines]
    # the title and sections as they read at each release (prose bounds and values), each wording once
    texts: dict[tuple, int] = {}
    for engine, info in engines.items():
        info["text"] = {}
        for version in site.engines[engine].versions:
            text = site.text_at(entry, engine, version)
            shown = tuple((sec["anchor"], str(sec["html"]) if sec["html"] is not None else None)
                          for sec in render_sections(text.sections))
            info["text"][version] = texts.setdefault((text.title, shown), len(texts))
    wordings = [{"title": title, "sections": {a: html for a, html in shown if html is not None}}
                for title, shown in texts]
    terms = {t.name: [words.css(t.name), words.verdict_anchor(t.name), words.STATUS_ICONS.get(t.name, "?"),
                      words.word(t.name), t.meaning] for t in VERDICT_TERMS}
    terms[""] = [words.css(None), words.verdict_anchor(None), words.STATUS_ICONS[None], words.word(None), ""]
    return {"entry": entry.id, "engines": engines, "checks": checks, "verdicts": terms, "wordings": wordings}


def build(b: Builder) -> None:
    site = b.site
    for entry in site.entries:
        transitions = [(engine, t) for engine in entry.engines for t in site.status(entry, engine).transitions]
        context = {
            "entry": entry,
            "statuses": [status_view(site, entry, engine) for engine in entry.engines],
            "sections": render_sections(entry),
            "checks": [check_view(site, entry, check) for check in entry.checks],
            "shown": {engine: shown_release(site, entry, engine) for engine in entry.engines},
            "versions": {engine: list(reversed(site.engines[engine].versions)) for engine in entry.engines
                         if engine in site.engines and site.engines[engine].versions},
            "transitions": transitions, "describe": history.describe_verdict,
            "edit_url": f"{site.edit_base}gotchas/{entry.id}.md" if site.edit_base else None,
            "HOLDS": HOLDS, "max_markdown": MAX_MARKDOWN, "severities": site.kb.severities,
        }
        b.add(("entries", entry.id, "evidence.json"), _json(evidence_json(site, entry)))
        b.page(Page(("entries", entry.id, "index.html"), entry.title, "entry.html", context,
                    entry.sections.get("Symptom", entry.title)[:300]))
