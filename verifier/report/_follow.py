"""What `gotchas follow` prints: per check that a release broke, the form proposed for it, and the old and new
lines side by side; and the same as Markdown for the nightly pull request's body."""

from __future__ import annotations

from .. import md
from ._terminal import _terminal_lines

#: Characters of each side of a side-by-side line.
_SIDE = 58


def follow_text(found: list, written: dict, kinds) -> str:
    """`found`: Following records (verifier.follow), in the order followed; `written`: (entry, check, release) ->
    what writing did ("written", or why not)."""
    from ..rewrite import _lines_of, form_fields

    if not found:
        return "nothing to follow: every check that holds at the release before holds at the release too\n"
    out = []
    for item in found:
        verdict = item.verdict
        said = f"{verdict.status} {verdict.reason or ''}".strip() if verdict else "?"
        out.append(f"{item.entry} / {item.check.id} ({item.check.engine} {item.release}: {said}"
                            + (f"; held at {item.held}" if item.held else "") + ")")
        if not item.proposals:
            out.append("  " + (item.note or "no proposal"))
            out.append("")
            continue
        for n, proposal in enumerate(item.proposals[:3]):
            where = f"{proposal.verdict.path}:{proposal.verdict.lines[0]}-{proposal.verdict.lines[1]}" \
                if proposal.verdict.lines else proposal.form.path
            judged = _judgement(proposal)
            out.append(f"  {'proposal' if n == 0 else 'or'}: {proposal.kind}, holds at {where}"
                                f"{' in ' + proposal.verdict.symbol if proposal.verdict.symbol else ''}; {judged}")
            out.append("    " + proposal.how)
            out.extend("      " + line for line in _lines_of(form_fields(proposal.form), 0))
            if proposal.kind == "text" and n == 0:
                out.extend("    " + line for line in side_by_side(proposal.old, proposal.new,
                                                                           item.held or "before", item.release))
        state = written.get((item.entry, item.check.id, item.release))
        if state:
            out.append("  " + state)
        out.append("")
    return _terminal_lines(out)


def _judgement(proposal) -> str:
    if proposal.kind == "move":
        return "the same code: keeps the claim" if not proposal.concerns else \
            "the same code, for review: " + "; ".join(proposal.concerns)
    parts = []
    if proposal.concerns:
        parts.append("the claim may have changed: " + "; ".join(proposal.concerns))
    if proposal.mutants is not None:
        caught, of = proposal.mutants
        parts.append(f"{caught} of the {of} mutants that caught the old form catch it" if of else
                     "no mutant that caught the old form is made again here: nothing shows it says the same")
    if proposal.keeps_claim:
        parts.insert(0, "keeps the claim")
    elif not proposal.concerns:
        parts.insert(0, "for review")
    return "; ".join(parts)


def side_by_side(old: tuple[str, ...], new: tuple[str, ...], old_label: str, new_label: str) -> list[str]:
    """The old and the new lines in two columns, each cut to a width."""
    width = _SIDE
    rows = [f"{old_label:<{width}} | {new_label}", f"{'-' * width} | {'-' * width}"]
    for n in range(max(len(old), len(new))):
        a = old[n].rstrip() if n < len(old) else ""
        b = new[n].rstrip() if n < len(new) else ""
        a = a if len(a) <= width else a[:width - 1] + "…"
        b = b if len(b) <= width else b[:width - 1] + "…"
        rows.append(f"{a:<{width}} | {b}")
    return rows


def follow_markdown(found: list, written: dict) -> str:
    """The section of the nightly report: the forms written without a person, then the proposals to review."""
    from ..rewrite import _lines_of, form_fields

    moved = [f for f in found if written.get((f.entry, f.check.id, f.release)) == "written"]
    review = [f for f in found if f not in moved]
    out = ["## Checks followed to their new code", ""]
    if not found:
        out.append("No check that held at the release before broke.")
        return "\n".join(out) + "\n"
    out.append(f"{len(found)} check(s) broke; {len(moved)} moved and were written; {len(review)} to review.")
    out.append("")
    if moved:
        out += ["| entry | check | release | new place |", "|---|---|---|---|"]
        for f in moved:
            p = f.best
            out.append(f"| {md.text(f.entry)} | {md.text(f.check.id)} | {md.text(f.release)} | "
                       f"{md.code(p.form.path)}{' in ' + md.code(p.form.scope) if p.form.scope else ''} |")
        out.append("")
    for f in review:
        out.append(f"### {md.text(f.entry)} / {md.text(f.check.id)} ({md.text(f.release)})")
        out.append("")
        if not f.proposals:
            out.append(md.inline(f.note or "no proposal", start=True, links=False))
            out.append("")
            continue
        p = f.proposals[0]
        out.append(f"Proposal ({md.text(p.kind)}): {md.inline(_judgement(p), links=False)}. "
                   f"{md.inline(p.how, links=False)}")
        out.append("")
        out.append("```yaml")
        out.extend(md.fence(line) for line in _lines_of(form_fields(p.form), 0))
        out.append("```")
        out.append("")
        out.append("```diff")
        out.extend(md.fence("- " + line) for line in p.old)
        out.extend(md.fence("+ " + line) for line in p.new)
        out.append("```")
        out.append("")
    return "\n".join(out) + "\n"
