"""llama.cpp builds: which tracked release a build that ggml-org publishes stands for, and what each release of
llama-server declares of its flags.

Operators run ggml-org's binaries and images, named by build number (`b4763`, `server-cuda-b4763`), and their logs
print `build: 4763 (f777a73e)`; the tracked releases are llama-cpp-python versions, each vendoring one llama.cpp
commit (the ledger's `commit`). A build maps to a release

1. exactly, when the printed commit starts the commit a release vendors;
2. else by its number, to the newest tracked release whose recorded build number (gotchas/llama-cpp-builds.yaml)
   is not above it: the nearest release before it, with a note (and, when releases near it have no recorded
   number, that one of them may be nearer);
3. else not at all, with a note.

The build number is `git rev-list --count HEAD` on master: it grows with the commits, so the recorded numbers must
grow with the releases, which the loader checks, with the file and line of what is wrong.

What this module reads lives in a KB checkout (the builds file, the ledger's commits, the release surfaces); the
compiled KB does not carry it, so `kb_data` makes it from the checkout audit compiled, and audit notes its absence.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import EXIT_USAGE, GotchasError

ENGINE = "llama-cpp"
BUILDS_FILE = "llama-cpp-builds.yaml"
_FIELDS = {"build", "commit", "source", "evidence", "note"}
_HEX = re.compile(r"[0-9a-f]{7,40}")
#: What llama.cpp prints for a build made without git (cmake/build-info.cmake: `0`, "unknown") or from a shallow
#: clone (`git rev-list --count HEAD` is 1): no master build number.
NOT_A_BUILD_NUMBER = (0, 1)


class BuildsError(GotchasError, exit_code=EXIT_USAGE):
    """The builds file is not what this module reads; the message names the file and line."""


def load_builds(root: str | Path, commits: dict[str, str]) -> dict[str, dict]:
    """release -> {"build", "commit", "source", "line"} from the KB's builds file (none when it has none), checked
    against the ledger's commits (`commits`: release -> the commit it vendors, in release order)."""
    from .. import _yaml

    path = Path(root) / "gotchas" / BUILDS_FILE
    if not path.is_file():
        return {}
    shown = f"gotchas/{BUILDS_FILE}"
    try:
        node = _yaml.load(path.read_text(encoding="utf-8"))
    except _yaml.YAMLProblem as exc:
        raise BuildsError(f"{shown}:{exc.line}: {exc.message}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BuildsError(f"{shown}: cannot read: {exc}") from None
    if node is None or not node.is_mapping or set(node.value) != {"releases"} or not node.value["releases"].is_mapping:
        raise BuildsError(f"{shown}:{node.line if node else 1}: expected one mapping, `releases:`")
    found = {}
    for release, item in node.value["releases"].value.items():
        line = node.value["releases"].key_lines.get(release, item.line)
        found[release] = _record(release, item, commits, f"{shown}:{line}")
        found[release]["line"] = line
    _check_order(found, commits, shown)
    return found


def _record(release: str, item, commits: dict[str, str], where: str) -> dict:
    if release not in commits:
        raise BuildsError(f"{where}: {release} is not a tracked release of llama.cpp (ledger/llama-cpp.json)")
    if not item.is_mapping:
        raise BuildsError(f"{where}: {release}: expected a mapping of {', '.join(sorted(_FIELDS))}")
    fields = {k: v.value for k, v in item.value.items()}
    unknown, missing = set(fields) - _FIELDS, {"build", "commit", "source", "evidence"} - set(fields)
    if unknown or missing:
        raise BuildsError(f"{where}: {release}: " + "; ".join(
            part for part in (f"unknown {sorted(unknown)}" if unknown else "",
                              f"missing {sorted(missing)}" if missing else "") if part))
    build, commit, source = fields["build"], str(fields["commit"]), fields["source"]
    if not isinstance(build, int) or isinstance(build, bool) or build in NOT_A_BUILD_NUMBER or build < 0:
        raise BuildsError(f"{where}: {release}: build {build!r} is not a master build number (a count above 1)")
    if not _HEX.fullmatch(commit):
        raise BuildsError(f"{where}: {release}: commit {commit!r} is not 7 to 40 lowercase hex digits")
    vendored = commits[release]
    if vendored and not vendored.startswith(commit):
        raise BuildsError(f"{where}: {release}: commit {commit} is not the commit {release} vendors ({vendored[:12]}, "
                          "ledger/llama-cpp.json)")
    if not isinstance(source, str) or not source.startswith("https://"):
        raise BuildsError(f"{where}: {release}: source {source!r} is not an https URL")
    if not isinstance(fields["evidence"], str) or not fields["evidence"].strip():
        raise BuildsError(f"{where}: {release}: evidence must quote what was printed")
    return {"build": build, "commit": commit, "source": source}


def _check_order(found: dict[str, dict], commits: dict[str, str], shown: str) -> None:
    """Build numbers count commits: a later release's is higher, or the same for the same commit."""
    ordered = [r for r in commits if r in found]
    for before, after in zip(ordered, ordered[1:]):
        a, b = found[before], found[after]
        same = commits[before] and commits[before] == commits[after]
        if (same and a["build"] != b["build"]) or (not same and b["build"] <= a["build"]):
            raise BuildsError(f"{shown}:{b['line']}: {after} has build {b['build']}, {before} has {a['build']}: "
                              + ("the same commit is one build" if same else
                                 "a later release vendors a later commit, whose build number is higher"))


def kb_data(root: str | Path, releases: list[str]) -> dict:
    """What audit needs of llama.cpp beyond the compiled KB, from a KB checkout: each release's vendored commit (the
    ledger), the recorded build numbers, and each release's flag declarations (the release surface). BuildsError
    when the builds file is malformed; a ledger that cannot be read gives no commits."""
    from ..ledger import DEFAULT_DIR, Ledger, LedgerError

    ledger = Ledger(Path(root) / DEFAULT_DIR)
    try:
        loaded = ledger.load(ENGINE)
        surfaces = ledger.load_surfaces(ENGINE)
    except LedgerError:
        return {"commits": {}, "builds": {}, "grammars": {}}
    return loaded_data(root, loaded, surfaces, releases)


def vendored_data(root: str | Path, engine: str, ledger, surfaces, releases: list[str]) -> dict | None:
    """`kb_data` of an engine from its ledger (ledger.EngineLedger) and surfaces (surface.store.EngineSurfaces)
    already read: what the compiled KB carries, so that an installation without a checkout audits builds as well.
    None for an engine whose builds this module does not read (all but llama.cpp)."""
    if engine != ENGINE:
        return None
    return loaded_data(root, ledger, surfaces, releases)


def loaded_data(root: str | Path, ledger, surfaces, releases: list[str]) -> dict:
    commits = {v: (ledger.releases[v].commit or "") for v in releases if v in ledger.releases}
    return {"commits": commits, "builds": load_builds(root, commits), "grammars": grammars(surfaces, releases)}


# --- flag declarations -----------------------------------------------------------------------------------------

def grammars(surfaces, releases: list[str]) -> dict[str, list[dict]]:
    """release -> its flags as plain records (`_llama.Grammar.of` reads them), for each release with a recorded
    surface; consecutive releases that declare the same share one list."""
    found: dict[str, list[dict]] = {}
    previous: list[dict] | None = None
    for version in releases:
        surface = surfaces.surface(version) if version in surfaces.releases else None
        if surface is None:
            continue
        records = declarations(surface)
        if previous is not None and records == previous:
            records = previous
        found[version] = previous = records
    return found


def declarations(surface) -> list[dict]:
    """The flags of one release surface as llama-server's parser needs them: each flag's spellings, the spellings
    that turn a negatable pair off, how many words follow it, and the variable that sets it. Read from the items
    as the C++ extractor writes them (verifier/surface/extract_cpp.py): a flag's `detail` is empty for a switch,
    `off: -nkvo, --no-kv-offload` for a pair, `value: N` for one value and `values: FNAME SCALE` for two; a
    variable's `detail` is `sets --ctx-size`, the flag it sets."""
    env: dict[str, str] = {}
    for item in surface.of_kind("env"):
        if item.detail.startswith("sets ") and item.name.startswith("LLAMA_ARG_"):
            env.setdefault(item.detail[5:].strip(), item.name)
    records = []
    for item in surface.of_kind("flag"):
        detail = (item.detail or "").strip()
        negatives = [s.strip() for s in detail[4:].split(",") if s.strip()] if detail.startswith("off:") else []
        values = 2 if detail.startswith("values:") else 1 if detail.startswith("value:") else 0
        records.append({"spellings": [s for s in item.spellings() if s not in negatives], "negatives": negatives,
                        "values": values, "env": env.get(item.name)})
    return records


# --- which release a build stands for -----------------------------------------------------------------------------

def parse_build(version: str) -> int | None:
    """The build number of `b4763` (None for anything else)."""
    match = re.fullmatch(r"[bB](\d+)", version.strip())
    return int(match.group(1)) if match else None


def is_build(version: str) -> bool:
    return parse_build(version) is not None or version.strip() == "unknown"


def release_for(data: dict | None, releases: list[str], version: str, commit: str | None) -> tuple[str | None, str]:
    """The tracked release a llama.cpp build stands for, and the note that says how it was told: by its commit
    (exact), by its build number (the nearest recorded release at or before it), or not at all."""
    build = parse_build(version)
    shown = f"build {build}" if build is not None else "a build with no number"
    shown += f" ({commit})" if commit else ""
    if data is None:
        return None, (f"{shown}: this installation has no table of llama.cpp's builds and commits (give --kb with a "
                      "checkout of the KB); not audited")
    commits, builds = data.get("commits", {}), data.get("builds", {})
    if commit:
        exact = [r for r in releases if commits.get(r, "").startswith(commit.lower())]
        if exact:
            chosen = exact[-1]
            also = f" (also vendored by {', '.join(exact[:-1])})" if len(exact) > 1 else ""
            recorded = builds.get(chosen, {}).get("build")
            odd = (f"; the build number printed, {build}, is not the one recorded for it ({recorded})"
                   if build is not None and recorded and build != recorded and build not in NOT_A_BUILD_NUMBER else "")
            return chosen, (f"{shown} is the commit llama-cpp-python {chosen} vendors{also}: audited as {chosen}, "
                            f"exactly{odd}")
    if build is None or build in NOT_A_BUILD_NUMBER:
        why = ("no build number" if build is None else
               f"build number {build}, which is what a build without git (0) or from a shallow clone (1) prints")
        return None, (f"{shown}: {why}, and the commit is no tracked release's"
                      if commit else f"{shown}: {why} and no commit") + "; not audited"
    return _nearest(releases, builds, build, shown, bool(commit))


def _nearest(releases: list[str], builds: dict[str, dict], build: int, shown: str, had_commit: bool):
    recorded = [r for r in releases if r in builds]
    if not recorded:
        return None, f"{shown}: no build number of a tracked release is recorded; not audited"
    which = "its commit is no tracked release's; " if had_commit else ""
    at_or_before = [r for r in recorded if builds[r]["build"] <= build]
    if not at_or_before:
        oldest = recorded[0]
        return None, (f"{shown}: {which}older than {oldest} (build {builds[oldest]['build']}), the "
                      "oldest tracked release with a recorded build; not audited")
    chosen = at_or_before[-1]
    number = builds[chosen]["build"]
    if number == build:  # one build number is one commit of master
        but = f": its commit is no tracked release's, but build {build}" if had_commit else ""
        return chosen, (f"{shown}{but} is the build of the commit llama-cpp-python {chosen} vendors (its recorded "
                        f"build number, gotchas/{BUILDS_FILE}): audited as {chosen}")
    later = [r for r in recorded if builds[r]["build"] > build]
    between = releases[releases.index(chosen) + 1:releases.index(later[0]) if later else len(releases)]
    what = (f"newer than every tracked release (the newest, {chosen}, is build {number})" if not between and not later
            else "not the build of a tracked release")
    note = (f"{shown}: {which}{what}: audited as {chosen} (build {number}), the newest tracked release at or before "
            f"build {build}, the nearest by recorded build numbers")
    if between:
        note += (f"; {_span(between)} {'has' if len(between) == 1 else 'have'} no recorded build number, so "
                 f"{'it' if len(between) == 1 else 'one of them'} may be nearer")
    return chosen, note


def _span(releases: list[str]) -> str:
    return releases[0] if len(releases) == 1 else f"{releases[0]}-{releases[-1]}"
