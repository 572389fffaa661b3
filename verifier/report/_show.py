"""What `gotchas show` prints of one entry: per engine its status across the releases in the ledger, each
check's history, its transitions and what contradicts its bounds; or the same as JSON records."""

from __future__ import annotations

from ..model import HOLDS, entry_bounds
from ._terminal import _terminal_lines


def show_records(kb, entry, ledger, engine_filter=None) -> list[dict]:
    """`gotchas show ID --format json`: one record per engine and release, in release order."""
    records = []
    for engine in entry.engines:
        if engine_filter and engine != engine_filter:
            continue
        engine_ledger = ledger.load(engine)
        engine_ledger.restatus({entry.id: entry_bounds(entry, engine)})
        for version in engine_ledger.versions():
            found = engine_ledger.entry(version, entry.id)
            if found is None:
                continue
            checks = [{"check": check.id, "verdict": record.verdict, "reason": record.reason, "form": record.form}
                      for check in entry.checks if check.engine == engine
                      for record in [found.checks.get(check.id)] if record is not None]
            records.append({"engine": engine, "version": version, "status": found.status, "checks": checks})
    return records


def show_entry(kb, entry, ledger, engine_filter=None) -> str:
    from .. import history

    out = [f"{entry.id}: {entry.title}",
           f"  severity {entry.severity or 'none'}; scheme {entry.scheme}; concepts {', '.join(entry.concepts)}"]
    if entry.withdrawn:
        out.append(f"  withdrawn on {entry.withdrawn}")
    for engine in entry.engines:
        if engine_filter and engine != engine_filter:
            continue
        name = kb.engines[engine].name if engine in kb.engines else engine
        engine_ledger = ledger.load(engine)
        introduced, fixed = entry_bounds(entry, engine)
        engine_ledger.restatus({entry.id: (introduced, fixed)})
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


def _check_history(ledger, entry: str, check: str) -> str:
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


def _plain_where(record) -> str:
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
