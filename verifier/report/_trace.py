"""What `gotchas trace` prints: per check the forms it proposes, with their evidence, and where the gotcha
begins."""

from __future__ import annotations

from ..model import before, version_key
from ._terminal import terminal


def trace_text(kb, entry, traces) -> str:
    """What `gotchas trace` found: per check, the proposed forms as YAML with their evidence, and where the walk
    stopped. `traces` are (trace.Trace, the versions walked, oldest first)."""
    from ..rewrite import render_items

    out = []
    for found, versions in traces:
        check = found.check
        name = kb.engines[check.engine].name if check.engine in kb.engines else check.engine
        out.append(f"{entry.id} / {check.id} ({name}, {versions[0] if versions else '?'} – "
                   f"{versions[-1] if versions else '?'})")
        if found.note:
            out.append(f"  {found.note}")
            out.append("")
            continue
        for proposal in found.proposals:
            first, last = proposal.releases[0], proposal.releases[-1]
            span = first if first == last else f"{first} – {last}"
            out.append(f"  form {proposal.form.index}: holds in {span}; {proposal.how}")
            out.extend("    " + line for line in render_items([proposal.fields(check)], 0))
            v = proposal.verdict
            if v.lines:
                a, b = v.lines
                out.append(f"    evidence in {last}: {v.path}:{a}" + (f"-{b}" if b != a else "")
                           + (f" in {v.symbol}" if v.symbol else ""))
                out.extend(f"      {a + n}| {line}" for n, line in enumerate(proposal.excerpt[:12]))
        holds_from = found.holds_from(versions)
        if found.proposals or holds_from:
            out.append(f"  with {'these forms' if found.proposals else 'its forms'}: holds from {holds_from} on"
                       if holds_from else "  holds in no release")
        if found.stop is not None:
            version, verdict = found.stop
            out.append(f"  stops holding in {version}: {verdict.status}"
                       + (f" ({verdict.reason})" if verdict.reason else "") + "; no other place found there")
            if verdict.hint:
                out.append(f"    hint: {verdict.hint}")
            out.append("    if the behaviour is really different there, the gotcha begins later (`introduced`); "
                       f"if only this claim arrived later, give the check `since: {holds_from}`")
        elif not found.proposals:
            out.append("  nothing to add")
        out.append("")
    for engine in dict.fromkeys(t.check.engine for t, _ in traces):
        ours = [(t.check, t.holds_from(v)) for t, v in traces if t.check.engine == engine]
        versions = next(v for t, v in traces if t.check.engine == engine)
        if not versions or any(start is None for _, start in ours):
            continue
        earliest = min((start for _, start in ours), key=version_key)
        # A check that starts later cuts the gotcha's range, unless its own `since` says it starts there.
        later = [(check.id, start) for check, start in ours
                 if start != earliest and (check.since is None or before(check.since, start))]
        stated = entry.introduced.get(engine)
        if earliest == versions[0]:
            out.append(f"{engine}: checks hold from {earliest}, the oldest release walked: the gotcha may be older "
                       "than the releases tracked" + (f" (the entry says introduced {stated})" if stated else ""))
        else:
            out.append(f"{engine}: the earliest check holds from {earliest}: `introduced: {{{engine}: {earliest}}}` if "
                       "that is where the gotcha begins" + (f" (the entry says {stated})" if stated else ""))
        if later:
            out.append(f"  later: {', '.join(f'{check} from {start}' for check, start in later)}. The entry holds only "
                       "where all its checks do: a claim that arrived after the gotcha needs an earlier form, or its "
                       "own `since`, so that it does not cut the gotcha's range")
    return terminal("\n".join(out)) + "\n"
