"""Replay the KB's history through `gotchas follow` (#28): at every boundary where a check's authored form
changed between two consecutive tracked releases, give the verifier only the form that held before the boundary
and ask `follow` for the form at the release after it.

A boundary, from the ledger: a check holds at release P with form a, and at the next tracked release R

- with another form b whose code (matcher, fragment, `after`, `adjacent`) is a's: a *move*;
- with another form b whose code differs: a *text* change;
- not at all, and the authored history says the claim changed there (the check is `changed` at R, or its own
  bounds end at P because the gotcha or the claim ended): a *claim change*.

Counted (bench/RESULTS.md, "#28"):

- moves followed correctly: the best proposal is a move, holds at R, and equals the authored form b
  (path, scope, code) -- what `follow --write --kinds move` would write without a person;
- text changes with a proposal that holds and keeps the claim (no concern, the template's caught mutants
  caught again); and of those, equal to the authored form b modulo layout;
- wrong proposals: at a claim change, a proposal offered as keeping the claim (it would hide the change).

    PYTHONPATH=. python bench/follow_replay.py [--engine vllm] [--limit N] [--json out.json] [--no-mutants]

Reads releases through the verifier's own cache (the PyPI source, the default index), like `gotchas verify`.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from verifier import code  # noqa: E402
from verifier import follow as follow_module  # noqa: E402
from verifier import kb as kb_module  # noqa: E402
from verifier.entries import load_entry  # noqa: E402
from verifier.ledger import Ledger  # noqa: E402
from verifier.model import HOLDS  # noqa: E402


def boundaries(kb, ledgers, entries, engines, tracked):
    """(kind, entry, check, P, R, form at P, authored form at R or None), in release order per engine."""
    found = []
    for entry in entries:
        for check in entry.checks:
            if check.engine not in engines:
                continue
            ledger = ledgers[check.engine]
            versions = tracked[check.engine]
            for p, r in zip(versions, versions[1:]):
                at_p, at_r = ledger.entry(p, entry.id), ledger.entry(r, entry.id)
                cp = at_p.checks.get(check.id) if at_p else None
                cr = at_r.checks.get(check.id) if at_r else None
                if cp is None or cp.verdict != HOLDS or cp.form is None:
                    continue
                a = check.forms[cp.form]
                if cr is not None and cr.verdict == HOLDS and cr.form != cp.form:
                    b = check.forms[cr.form]
                    same = (a.matcher, a.pattern, a.after, a.adjacent) == (b.matcher, b.pattern, b.after, b.adjacent)
                    found.append(("move" if same else "text", entry, check, p, r, a, b))
                elif (cr is not None and cr.verdict == "changed") or (cr is None and at_r is not None):
                    found.append(("claim", entry, check, p, r, a, None))
    return found


def hint_equal(reader, release, template, authored, kind) -> bool:
    """The alternative, as an author had it before `follow`: for a move, whether the relocation hint's first place
    is the authored form's place; for a text change, whether the closest line the `changed` hint shows is the
    authored fragment (modulo layout)."""
    from verifier import locate

    snapshot = reader.snapshot(release)
    if kind == "move":
        places = locate.relocation_places(template, snapshot, lambda: reader.python_files(release), reader.parsed,
                                          reader.searches)
        def same(place):
            if locate._names_symbol(template):
                return (place.path, place.symbol) == (authored.path, authored.pattern)
            return (place.path, locate._scope_for(template, place)) == (authored.path, authored.scope)

        return "first" if places and same(places[0]) else "named" if any(same(p) for p in places[:3]) else False
    verdict = reader.form(replace(template, since=None, until=None), release)
    hint = verdict.hint or ""
    marker = "closest line in the scope: "
    if marker not in hint:
        return False
    line = hint.split(marker, 1)[1].split(": ", 1)[-1]
    try:
        return same_form(replace(authored, pattern=line, after=authored.after), authored)
    except Exception:
        return False


def hides(ledger, entry, check, version: str) -> bool:
    """Whether writing a holding form for `check` at `version` would change the entry's status there from what
    the authored history says (a `changed` or `unverified` entry made `holds`): the change hidden."""
    from verifier.ledger import CheckRecord, status_of
    from verifier.model import entry_rules

    record = ledger.entry(version, entry.id)
    if record is None:
        return False
    checks = dict(record.checks)
    checks[check.id] = CheckRecord(HOLDS, form=0)
    rules = entry_rules(entry, check.engine)
    return status_of(version, checks, rules) != record.status


def same_form(a, b) -> bool:
    """Equal modulo layout: the same place, and fragments with the same canonical tokens."""
    if (a.path, a.scope, a.matcher, a.adjacent) != (b.path, b.scope, b.matcher, b.adjacent):
        return False

    def tokens(text):
        if text is None:
            return None
        if a.matcher in ("contains", "absent"):
            return [t.text for t in code.fragment(text).tokens]
        return code.fold_whitespace(text)

    return tokens(a.pattern) == tokens(b.pattern) and tokens(a.after) == tokens(b.after)


def undo_boundary(kb, ledgers, engine: str, release: str, into: Path) -> list[str]:
    """A copy of the KB at `into` (entries, engines, ledger) in which every check of `engine` whose form changed at
    `release` has the form that held at the release before it as its own again, the later form removed: the KB
    as it was before an author followed `release`. The checks undone, as "entry / check"."""
    import shutil

    from verifier.entries import load_entry as load
    from verifier.rewrite import replace_form

    if into.exists():
        raise SystemExit(f"{into} exists; give a new folder")
    shutil.copytree(kb.root, into, ignore=shutil.ignore_patterns(".git", ".venv", "_site", "*.egg-info", "__pycache__",
                                                               ".pytest_cache", ".ruff_cache", ".mypy_cache",
                                                               ".hypothesis"))
    ledger = ledgers[engine]
    versions = ledger.versions()
    before = versions[versions.index(release) - 1]
    undone = []
    for path in sorted((into / "gotchas").glob("*.md")):
        while True:
            loaded = load(path)
            entry = loaded.entry
            at_p, at_r = ledger.entry(before, entry.id), ledger.entry(release, entry.id)
            todo = None
            for check in entry.checks:
                if check.engine != engine or (entry.id, check.id) in {tuple(u.split(" / ")) for u in undone}:
                    continue
                cp = at_p.checks.get(check.id) if at_p else None
                cr = at_r.checks.get(check.id) if at_r else None
                if cp and cr and cp.verdict == cr.verdict == HOLDS and cp.form != cr.form and cr.form == 0:
                    todo = (check, check.forms[cp.form], cp.form)
                    break
            if todo is None:
                break
            check, form, index = todo
            text = replace_form(path.read_text(encoding="utf-8"), loaded, check, replace(form, since=None, until=None),
                                None, drop=index)
            path.write_text(text, encoding="utf-8")
            undone.append(f"{entry.id} / {check.id}")
    return undone


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", action="append")
    parser.add_argument("--limit", type=int)
    parser.add_argument("--only", choices=("move", "text", "claim"))
    parser.add_argument("--entry")
    parser.add_argument("--json")
    parser.add_argument("--no-mutants", action="store_true")
    parser.add_argument("--show", action="store_true", help="print each boundary's outcome")
    parser.add_argument("--undo", nargs=2, metavar=("RELEASE", "DIR"),
                        help="only write a copy of the KB to DIR with the forms of RELEASE (of --engine) undone")
    args = parser.parse_args()
    root = Path(__file__).resolve().parent.parent
    kb = kb_module.load(root)
    ledger = Ledger(kb.root / "ledger")
    engines = args.engine or sorted(kb.engines)
    ledgers = {e: ledger.load(e) for e in engines}
    if args.undo:
        if len(engines) != 1:
            raise SystemExit("--undo needs one --engine")
        undone = undo_boundary(kb, ledgers, engines[0], args.undo[0], Path(args.undo[1]))
        print(f"{len(undone)} checks undone at {engines[0]} {args.undo[0]} in {args.undo[1]}:")
        for item in undone:
            print(f"  {item}")
        return 0
    entries = [load_entry(p).entry for p in kb.entry_files()]
    if args.entry:
        entries = [e for e in entries if e.id == args.entry]
    from verifier.cli._common import _sources
    from verifier.verdicts import SearchCache, VerdictCache

    sources = _sources(kb, [], None, set(engines), default="pypi")
    verdicts, searches = VerdictCache(), SearchCache()
    tracked, releases = {}, {}
    for engine in engines:
        versions = set(ledgers[engine].versions())
        releases[engine] = {r.version: r for r in sources[engine].releases() if r.version in versions}
        tracked[engine] = [v for v in ledgers[engine].versions() if v in releases[engine]]
    found = boundaries(kb, ledgers, entries, engines, tracked)
    if args.only:
        found = [b for b in found if b[0] == args.only]
    if args.limit:
        found = found[:args.limit]
    order = {e: {v: i for i, v in enumerate(tracked[e])} for e in engines}
    found.sort(key=lambda b: (b[2].engine, order[b[2].engine][b[4]]))
    rows, seconds = [], []
    readers = {e: follow_module.Reader(sources[e], verdicts, searches) for e in engines}
    started = time.monotonic()
    try:
        for n, (kind, entry, check, p, r, a, b) in enumerate(found, 1):
            engine = check.engine
            alone = replace(check, path=a.path, matcher=a.matcher, pattern=a.pattern, scope=a.scope, after=a.after,
                            adjacent=a.adjacent, since=None, until=None, earlier=())
            alone.__dict__.pop("own", None)
            alone.__dict__.pop("forms", None)
            t0 = time.monotonic()
            result = follow_module.follow_check(entry, alone, releases[engine][p], releases[engine][r],
                                                readers[engine], mutants=not args.no_mutants)
            seconds.append(time.monotonic() - t0)
            best = result.best if result else None
            top = result.proposals[0] if result and result.proposals else None
            row = {"kind": kind, "entry": entry.id, "check": check.id, "engine": engine, "held": p, "release": r,
                   "still_holds": result is None,
                   "best": None if best is None else {"kind": best.kind, "path": best.form.path,
                                                      "in": best.form.scope, "pattern": best.form.pattern,
                                                      "mutants": best.mutants},
                   "equal": bool(best and b is not None and same_form(best.form, b)),
                   "top_concerns": list(top.concerns) if top else [],
                   "top_holds_any": bool(top),
                   "kept": None if not result else next(
                       ({"kind": q.kind, "concerns": list(q.concerns), "pattern": q.form.pattern,
                         "equal": bool(b is not None and same_form(q.form, b))}
                        for q in result.proposals if q.mutants_kept), None),
                   "note": result.note if result else None,
                   "reason": result.verdict.reason if result and result.verdict else None}
            if b is not None and result is not None:
                row["hint_equal"] = hint_equal(readers[engine], releases[engine][r], a, b, kind)
            if kind == "claim" and best is not None:
                row["hides"] = hides(ledgers[engine], entry, check, r)
            rows.append(row)
            if args.show:
                print(f"[{n}/{len(found)}] {kind} {entry.id}/{check.id} {p}->{r}: "
                      f"{'still holds' if result is None else (best.kind + (' =' if row['equal'] else ' !=')) if best else 'none'}"
                      f" {'' if best is None or row['equal'] or b is None else repr(best.form.pattern[:80]) + ' vs ' + repr(b.pattern[:80]) + ' ' + str((best.form.path, best.form.scope, b.path, b.scope))} from {(a.path, a.scope)}"
                      f" {row['top_concerns'][:2] if not best else ''}", flush=True)
            elif sys.stderr.isatty():
                print(f"\r{n}/{len(found)}", end="", file=sys.stderr, flush=True)
    finally:
        for reader in readers.values():
            reader.close()
        verdicts.close()
        searches.close()
    total = time.monotonic() - started
    summarize(rows, seconds, total)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def summarize(rows, seconds, total) -> None:
    by = collections.defaultdict(list)
    for row in rows:
        by[row["kind"]].append(row)
    moves, texts, claims = by["move"], by["text"], by["claim"]

    def pct(a, b):
        return f"{a}/{b} ({100 * a / b:.1f}%)" if b else "0/0"

    print(f"old form still holds at the next release (nothing to follow): "
          f"{sum(1 for r in rows if r['still_holds'])}")
    moves = [r for r in moves if not r["still_holds"]]
    texts = [r for r in texts if not r["still_holds"]]
    claims = [r for r in claims if not r["still_holds"]]
    followed = sum(1 for r in moves if r["best"] and r["best"]["kind"] == "move" and r["equal"])
    moved_holding = sum(1 for r in moves if r["best"] and r["best"]["kind"] == "move")
    kept = sum(1 for r in texts if r["best"])
    text_equal = sum(1 for r in texts if r["best"] and r["equal"])
    any_holding = sum(1 for r in texts if r["top_holds_any"])
    mutants_kept = sum(1 for r in texts if r["kept"])
    flagged = sum(1 for r in texts if r["kept"] and r["kept"]["concerns"])
    kept_equal = sum(1 for r in texts if r["kept"] and r["kept"]["equal"])
    wrong = [r for r in claims if r["best"]]
    hidden = [r for r in wrong if r.get("hides")]
    flagged_claims = sum(1 for r in claims if not r["best"] and r["top_holds_any"])
    print(f"boundaries: {len(rows)} ({len(moves)} moves, {len(texts)} text changes, {len(claims)} claim changes)")
    hinted = sum(1 for r in moves if r.get("hint_equal") == "first")
    named = sum(1 for r in moves if r.get("hint_equal"))
    text_hinted = sum(1 for r in texts if r.get("hint_equal"))
    print(f"before follow: the relocation hint's first place is the authored one for {pct(hinted, len(moves))} of "
          f"moves (one of the three it shows: {pct(named, len(moves))}); the closest line shown is the authored fragment for {pct(text_hinted, len(texts))} of text changes")
    print(f"moves followed correctly (a move, equal to the authored form): {pct(followed, len(moves))}; "
          f"a holding move proposed: {pct(moved_holding, len(moves))}")
    print(f"text changes with a proposal that holds and keeps the mutants caught: {pct(mutants_kept, len(texts))}"
          f" (of them, {flagged} with a concern: the claim's text changed, for review; "
          f"equal to the authored form: {kept_equal})")
    print(f"text changes with a proposal that holds and keeps the claim: {pct(kept, len(texts))}; "
          f"equal to the authored form: {pct(text_equal, len(texts))}; "
          f"some holding proposal (with concerns too): {pct(any_holding, len(texts))}")
    print(f"claim changes with a proposal offered as keeping the claim (wrong): {pct(len(wrong), len(claims))}; "
          f"with a holding proposal flagged as changing the claim: {flagged_claims}; of the wrong ones, writing "
          f"would change the entry's status there (hide the change): {len(hidden)}")
    for r in wrong:
        print(f"  wrong{' (hides)' if r.get('hides') else ''}: {r['entry']}/{r['check']} {r['held']}->{r['release']}: "
              f"{r['best']}")
    if seconds:
        print(f"time: {total:.0f} s in all; per boundary median {statistics.median(seconds) * 1000:.0f} ms, "
              f"max {max(seconds):.1f} s")


if __name__ == "__main__":
    raise SystemExit(main())
