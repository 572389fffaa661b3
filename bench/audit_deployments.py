"""Audit before and after issue #26 on the real deployments of tests/data/deployments.

Before: the command at an older commit (a worktree, BEFORE), given the files a new user would give it (every file of
the deployment that names an engine). After: this checkout's `gotchas audit FOLDER`. Prints, per deployment, the
exit code, the versions audited and the number of gotchas listed, dropped and 'bites only if'; with --json, the
after listing per deployment, for a reading by hand (bench/RESULTS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data" / "deployments"


def run(gotchas_root: Path, args: list[str]) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "verifier", "audit", *args], cwd=gotchas_root, capture_output=True,
                          text=True, env={"PYTHONPATH": str(gotchas_root), "PATH": "/usr/bin:/bin"}, timeout=600)
    return done.returncode, done.stdout


def main() -> None:
    before_root = Path(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else Path("/tmp/before")
    if not (before_root / "verifier").is_dir():
        sys.exit(f"{before_root}: not a checkout of the command before #26; make one with "
                 f"`git worktree add {before_root} 4cdf12a`")
    want_json = "--json" in sys.argv
    rows, listings = [], {}
    for folder in sorted(p for p in DATA.iterdir() if p.is_dir()):
        files = [str(p) for p in sorted(folder.rglob("*")) if p.is_file() and p.name != "SOURCE.md"
                 and ("vllm" in p.read_text(errors="replace").lower() or "sglang" in p.read_text(errors="replace").lower())]
        code_b, out_b = run(before_root, [*files, "--format", "json"]) if files else (None, "")
        try:
            before = json.loads(out_b)
            listed_b = sum(len(t["gotchas"]) for t in before["targets"])
            versions_b = [f"{t['engine']} {t['version']}" for t in before["targets"] if t["release"]]
        except ValueError:
            listed_b, versions_b = None, []
        code_a, out_a = run(REPO, [str(folder), "--format", "json"])
        after = json.loads(out_a)
        listings[folder.name] = after
        gotchas = [g for t in after["targets"] for g in t["gotchas"]]
        # Before, typed by hand: the older command given the versions after found (pins only), no settings.
        by_hand = []
        for t in after["targets"]:
            if t["release"] and not t["range"]:
                code_h, out_h = run(before_root, ["--engine", f"{t['engine']}=={t['release']}", "--format", "json"])
                by_hand.append(sum(len(x["gotchas"]) for x in json.loads(out_h)["targets"]))
        rows.append((folder.name, code_b, versions_b, listed_b, sum(by_hand) if by_hand else "-", code_a,
                     [f"{t['engine']} {t['version']}" for t in after["targets"] if t["release"]],
                     sum(g["status"] == "bites" for g in gotchas), sum(g["status"] == "bites only if" for g in gotchas),
                     len(after["dropped"])))
    if want_json:
        print(json.dumps(listings, indent=1))
        return
    print("| deployment | before: exit | versions | listed | before, versions typed by hand: listed | after: exit | "
          "versions | bites | only if | dropped |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(", ".join(x) if isinstance(x, list) else str(x) for x in row) + " |")


if __name__ == "__main__":
    main()
