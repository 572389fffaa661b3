"""What `gotchas show` prints of one entry: per engine its status across the releases in the ledger, each
check's history, its transitions and what contradicts its bounds; or the same as JSON records."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..errors import EXIT_USAGE, GotchasError
from ..model import HOLDS, entry_bounds, entry_rules
from ._terminal import _terminal_lines

if TYPE_CHECKING:
    from ..kb import KB
    from ..ledger import CheckRecord, EngineLedger, Ledger
    from ..model import Entry


class NoSuchRelease(GotchasError, exit_code=EXIT_USAGE):
    """`show --release V` names a release no ledger of the entry's engines has."""


def _surfaces(entry: Entry, ledger: Ledger) -> dict:
    """The entry's engines' release surfaces, for `{default --flag}`; an engine whose file is unreadable has none."""
    from ..ledger import LedgerError

    found = {}
    for engine in entry.engines:
        try:
            found[engine] = ledger.load_surfaces(engine)
        except LedgerError:
            continue
    return found


def _ledgers(kb: KB, entry: Entry, ledger: Ledger, engine_filter: str | None = None) -> dict:
    """The entry's engines' ledgers (its statuses recomputed as the entry says now), by engine."""
    found = {}
    for engine in entry.engines:
        if engine_filter and engine != engine_filter:
            continue
        engine_ledger = ledger.load(engine)
        engine_ledger.restatus({entry.id: entry_rules(entry, engine)})
        found[engine] = engine_ledger
    return found


def _reader(kb: KB, entry: Entry, ledger: Ledger, ledgers: dict):
    """`read(engine, version)`: the entry as it reads there (`prose.entry_text`; both None: across all), with the
    values of `ledgers` and, when the prose writes a default, the release surfaces."""
    from .. import prose

    names = {key: e.name for key, e in kb.engines.items()}
    surfaces = _surfaces(entry, ledger) if prose.default_refs(entry) else {}
    return lambda engine, version: prose.entry_text(entry, engine, version, ledgers, kb.engines, names, surfaces)


def _engines_at(kb: KB, entry: Entry, ledgers: dict, release: str) -> list[str]:
    engines = [e for e, engine_ledger in ledgers.items() if engine_ledger.entry(release, entry.id) is not None]
    if not engines:
        names = ", ".join(kb.engines[e].name if e in kb.engines else e for e in ledgers) or "no engine"
        raise NoSuchRelease(f"{entry.id} has no verdicts at {release} in the ledger of {names}: name a release "
                            f"the ledger has (`gotchas show {entry.id}` lists them)")
    return engines


def show_records(kb: KB, entry: Entry, ledger: Ledger, engine_filter: str | None = None,
                 release: str | None = None) -> list[dict]:
    """`gotchas show ID --format json`: one record per engine and release, in release order (with `release`, that
    release's only): its status, the parts of the claim that hold (with parts), the title as it reads there, and
    each check's verdict with the values it read."""
    ledgers = _ledgers(kb, entry, ledger, engine_filter)
    if release is not None:
        _engines_at(kb, entry, ledgers, release)
    read = _reader(kb, entry, ledger, ledgers)
    records = []
    for engine, engine_ledger in ledgers.items():
        for version in engine_ledger.versions():
            found = engine_ledger.entry(version, entry.id)
            if found is None or (release is not None and version != release):
                continue
            checks = []
            for check in entry.checks:
                record = found.checks.get(check.id) if check.engine == engine else None
                if record is None:
                    continue
                item = {"check": check.id, "verdict": record.verdict, "reason": record.reason, "form": record.form}
                if record.values:
                    item["values"] = dict(record.values)
                checks.append(item)
            text = read(engine, version)
            record = {"engine": engine, "version": version, "status": found.status, "title": text.title,
                      "checks": checks}
            if entry.parts:
                record["parts"] = text.parts
            records.append(record)
    return records


def show_json(kb: KB, entry: Entry, ledger: Ledger, engine_filter: str | None = None,
              release: str | None = None) -> str:
    """`gotchas show ID --format json`: `show_records`, as JSON."""
    return json.dumps(show_records(kb, entry, ledger, engine_filter, release), indent=2) + "\n"


def show_text(kb: KB, entry: Entry, ledger: Ledger, engine_filter: str | None = None,
              release: str | None = None) -> str:
    """`gotchas show ID`: the entry's history (`show_entry`), or with `release`, the entry as that release's reader
    reads it (`show_at`)."""
    return show_at(kb, entry, ledger, release, engine_filter) if release else show_entry(kb, entry, ledger,
                                                                                        engine_filter)


def show_at(kb: KB, entry: Entry, ledger: Ledger, release: str, engine_filter: str | None = None) -> str:
    """`gotchas show ID --release V`: the entry as a reader of that release reads it."""
    ledgers = _ledgers(kb, entry, ledger, engine_filter)
    names = {key: e.name for key, e in kb.engines.items()}
    read = _reader(kb, entry, ledger, ledgers)
    out = []
    for engine in _engines_at(kb, entry, ledgers, release):
        record = ledgers[engine].entry(release, entry.id)
        text = read(engine, release)
        status = record.status
        if record.status == HOLDS and text.parts:
            status += f" (part{'s' if len(text.parts) > 1 else ''}: {', '.join(text.parts)}: {'; '.join(text.says)})"
        elif record.status != HOLDS and record.status != "not-affected":
            held, total = record.verified
            status += f" ({held} of {total} claims hold)"
        out += [f"{entry.id} at {names.get(engine, engine)} {release}: {status}", "", f"# {text.title}", ""]
        for title, body in text.sections.items():
            out += [f"## {title}", "", *body.split("\n"), ""]
        out.append("Checks:")
        for check in entry.checks:
            found = record.checks.get(check.id) if check.engine == engine else None
            if found is None:
                continue
            values = "".join(f" {k}={v}" for k, v in (found.values or ()))
            where = f" {found.path}:{found.lines[0]}" if found.lines else ""
            out.append(f"  {check.id}: {found.verdict}{f' ({found.reason})' if found.reason else ''}{values}{where}")
        out.append("")
    return _terminal_lines(out)


def show_entry(kb: KB, entry: Entry, ledger: Ledger, engine_filter: str | None = None) -> str:
    from .. import history

    ledgers = _ledgers(kb, entry, ledger)  # every engine's: the title across them names each one's values
    out = [f"{entry.id}: {_reader(kb, entry, ledger, ledgers)(None, None).title}",
           f"  severity {entry.severity or 'none'}; scheme {entry.scheme}; concepts {', '.join(entry.concepts)}"]
    if entry.withdrawn:
        out.append(f"  withdrawn on {entry.withdrawn}")
    for engine in entry.engines:
        if engine_filter and engine != engine_filter:
            continue
        name = kb.engines[engine].name if engine in kb.engines else engine
        engine_ledger = ledgers[engine]
        introduced, fixed = entry_bounds(entry, engine)
        statuses = history.entry_statuses(engine_ledger, entry.id, decided=True)
        out.append("")
        out.append(f"{name}: {history.describe(name, statuses)}")
        if introduced or fixed:
            out.append("  stated: " + ", ".join(f"{k} {v}" for k, v in (("introduced", introduced), ("fixed", fixed))
                                                 if v))
        for condition in (c for c in entry.conditions if c.engine == engine):
            span = ", ".join(f"{k} {v}" for k, v in (("since", condition.since), ("until", condition.until)) if v)
            # A written default, else the code's at each release (`gotchas surface`); what clients send has none.
            said = [f"default {condition.default_text}" + (f", pinned by check {condition.witness}"
                                                           if condition.witness else "")] \
                if condition.default is not None else []
            said += [span] if span else []
            out.append(f"  bites only if {condition.describe()}" + (f" ({'; '.join(said)})" if said else ""))
        if not statuses:
            continue
        latest_version, latest = statuses[-1]
        out.append(f"  latest verified: {latest} in {latest_version}")
        unverified = [(v, engine_ledger.entry(v, entry.id)) for v, s in statuses if s == history.UNVERIFIED]
        if unverified:
            version, record = unverified[-1]
            held, total = record.verified
            out.append(f"  unverified in {len(unverified)} release{'s' if len(unverified) != 1 else ''}: "
                       f"in {version}, {held} of {total} claims verified")
        for check in entry.checks:
            if check.engine != engine:
                continue
            out.append(f"  {check.id}: {_check_history(engine_ledger, entry.id, check.id)}")
        flips = history.transitions(engine_ledger, entry.id)
        if flips:
            out.append("  transitions:")
            for t in flips:
                out.append(f"    {t.summary}")
                out.append(f"      before: {_plain_where(t.before)}")
                out.append(f"      after:  {_plain_where(t.after)}")
        problems = history.bounds_problems(engine_ledger, entry.id, introduced, fixed)
        if problems:
            out.append("  releases that contradict `introduced` or `fixed`:")
            out.extend(f"    {p}" for p in problems)
    return _terminal_lines(out)


def _check_history(ledger: EngineLedger, entry: str, check: str) -> str:
    """Where a check holds, in which form: `holds in 0.8.2 – 0.11.2 (form 1), 0.12.0 – 0.33.0 (latest)`."""
    runs: list[list] = []  # [form, first, last] of consecutive releases where it holds in one form
    decided = []
    for version in ledger.versions():
        found = ledger.entry(version, entry)
        record = found.checks.get(check) if found is not None else None
        if record is None or not record.decided:
            continue
        decided.append(version)
        if record.verdict == HOLDS:
            if runs and len(decided) > 1 and runs[-1][2] == decided[-2] and runs[-1][0] == record.form:
                runs[-1][2] = version
            else:
                runs.append([record.form, version, version])
    if not runs:
        return "holds in no verified release"
    newest = ledger.versions()[-1]
    parts = []
    for form, first, last in runs:
        span = first if first == last else f"{first} – {last}"
        if last == newest:
            span += " (latest)"
        parts.append(span + (f" (form {form})" if form else ""))
    return "holds in " + ", ".join(parts)


def _plain_where(record: CheckRecord) -> str:
    text = record.verdict
    if record.reason:
        text += f" ({record.reason})"
    if record.form:
        text += f" (form {record.form})"
    text += f" {record.path}"
    if record.lines:
        a, b = record.lines
        text += f":{a}" + (f"-{b}" if b != a else "")
    if record.symbol:
        text += f" in {record.symbol}"
    if record.hint:
        text += f"; hint: {record.hint}"
    return text
