"""Claims across releases (FORMAT.md): earlier forms, `missing` apart from `changed`, entry statuses,
introduced/fixed cross-checks and `gotchas trace`, over one synthetic engine history served two ways, as a git
repository and as a package index of sdists.

The history, oldest first (the check under test is written against 0.4.0's layout):

    0.0.9  pkg/core/scheduler.py       OldScheduler.schedule, inline, keeps computed tokens  (really different)
    0.1.0  pkg/core/scheduler.py       OldScheduler.schedule, inline, resets them            (the gotcha begins)
    0.2.0  pkg/core/sched/scheduler.py the file moved
    0.3.0  pkg/core/sched/scheduler.py the class renamed to Scheduler
    0.4.0  pkg/core/sched/scheduler.py the reset extracted into Scheduler._preempt_request
    0.5.0  the same
    0.6.0  _preempt_request keeps computed tokens                                          (really changed)
"""

from __future__ import annotations

import json

import pytest

from .conftest import VALID_ENTRY, run_cli
from .gitrepo import GitRepo
from .index_server import IndexServer, make_sdist

OLD = "pkg/core/scheduler.py"
NEW = "pkg/core/sched/scheduler.py"

INLINE = """\
from .status import RequestStatus


class {cls}:
    def schedule(self):
        while self.out_of_blocks():
            preempted_req = self.running.pop()
            preempted_req.status = RequestStatus.PREEMPTED
            preempted_req.num_computed_tokens {reset}
            self.waiting.appendleft(preempted_req)
"""

EXTRACTED = """\
from .status import RequestStatus


class Scheduler:
    def schedule(self):
        while self.out_of_blocks():
            self._preempt_request(self.running.pop())

    def _preempt_request(self, request):
        request.status = RequestStatus.PREEMPTED
        request.num_computed_tokens {reset}
        self.waiting.appendleft(request)
"""

RESET, KEPT = "= 0", "-= 0  # kept"

HISTORY = [
    ("0.0.9", {OLD: INLINE.format(cls="OldScheduler", reset=KEPT)}),
    ("0.1.0", {OLD: INLINE.format(cls="OldScheduler", reset=RESET)}),
    ("0.2.0", {NEW: INLINE.format(cls="OldScheduler", reset=RESET)}),
    ("0.3.0", {NEW: INLINE.format(cls="Scheduler", reset=RESET)}),
    ("0.4.0", {NEW: EXTRACTED.format(reset=RESET)}),
    ("0.5.0", {NEW: EXTRACTED.format(reset=RESET)}),
    ("0.6.0", {NEW: EXTRACTED.format(reset=KEPT)}),
]
VERSIONS = [v for v, _ in HISTORY]
METRICS = 'NAME = "vllm:num_preemptions"\n'

ENTRY = VALID_ENTRY.replace("""  - id: zero
    claim: Preemption resets the computed tokens.
    path: pkg/sched.py
    in: Scheduler.preempt
    contains: request.num_computed_tokens = 0
    after: request.status = PREEMPTED
    adjacent: true
""", f"""  - id: zero
    claim: Preemption resets the computed tokens.
    # written against 0.4.0's layout
    path: {NEW}
    in: Scheduler._preempt_request
    contains: request.num_computed_tokens = 0
    after: request.status = RequestStatus.PREEMPTED
    adjacent: true
""")

#: The forms `trace` must find, as `--write` puts them (git's rename detection names the old path).
TRACED = f"""    earlier:
      - until: 0.3.0
        in: Scheduler.schedule
        contains: $REQUEST.num_computed_tokens = 0
        after: $REQUEST.status = RequestStatus.PREEMPTED
        adjacent: true
      - until: 0.2.0
        in: OldScheduler.schedule
        contains: $REQUEST.num_computed_tokens = 0
        after: $REQUEST.status = RequestStatus.PREEMPTED
        adjacent: true
      - until: 0.1.0
        path: {OLD}
        in: OldScheduler.schedule
        contains: $REQUEST.num_computed_tokens = 0
        after: $REQUEST.status = RequestStatus.PREEMPTED
        adjacent: true
"""


def files_of(version: str) -> dict[str, str]:
    found = dict(next(f for v, f in HISTORY if v == version))
    found["pkg/metrics.py"] = METRICS
    found["pkg/core/status.py"] = "class RequestStatus:\n    PREEMPTED = 2\n"
    return found


@pytest.fixture
def engine_repo(tmp_path, isolated_git) -> GitRepo:
    repo = GitRepo(tmp_path / "engine")
    previous: set[str] = set()
    for version, _ in HISTORY:
        files = files_of(version)
        for gone in previous - set(files):
            if gone == OLD and NEW in files:
                repo.move(OLD, NEW)  # a rename, for git's rename detection
            else:
                (repo.path / gone).unlink()
        for path, text in files.items():
            repo.write(path, text)
        repo.commit(f"release {version}")
        repo.tag(f"v{version}")
        previous = set(files)
    return repo


@pytest.fixture
def history_index(monkeypatch, tmp_path):
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        for n, (version, _) in enumerate(HISTORY):
            files = {path: text.encode() for path, text in files_of(version).items()}
            server.add("vllm", f"vllm-{version}.tar.gz", make_sdist(files, top=f"vllm-{version}"),
                       upload_time=f"2024-0{n + 1}-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        yield server


@pytest.fixture(params=["git", "pypi"])
def history_source(request, kb, tmp_path, isolated_git, monkeypatch) -> list[str]:
    """`--source` options that serve the history, as git tags or as an index (the KB holds ENTRY)."""
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY)
    if request.param == "git":
        return ["--source", f"git:{request.getfixturevalue('engine_repo').path}"]
    request.getfixturevalue("history_index")
    return []


def ledger_of(kb) -> dict:
    return json.loads((kb / "ledger" / "vllm.json").read_text())


def statuses(kb) -> dict[str, tuple[str, str | None, int | None]]:
    """version -> (entry status, verdict of check zero, its form)."""
    found = {}
    for version, record in ledger_of(kb)["releases"].items():
        entry = record["entries"]["ops-example"]
        zero = entry["checks"].get("zero", {})
        found[version] = (entry["status"], zero.get("verdict"), zero.get("form"))
    return found


# --- trace ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("code,general", [
    ("request.num_computed_tokens = 0", "$REQUEST.num_computed_tokens = 0"),  # a receiver
    ("self.waiting.prepend_request(request)", "self.waiting.prepend_request($REQUEST)"),  # an argument
    ("max(self.running, key=lambda r: (r.priority, r.arrival_time))",
     "max(self.running, key=lambda $R: ($R.priority, $R.arrival_time))"),  # a lambda's parameter
    ("room = max_model_len - input_length", "$ROOM = max_model_len - input_length"),  # a target, not the values
    ("self.enable_prefix_caching = default_prefix_caching", "self.enable_prefix_caching = default_prefix_caching"),
    ("if x == limit: return", "if x == limit: return"),  # compared values stay
    ("f(key=value, other)", "f(key=value, $OTHER)"),  # keyword names and their values stay
    ("blocks[i].hash", "$BLOCKS[i].hash"),  # the index stays
    ("self.x(len(reqs), RequestStatus.WAITING)", "self.x(len($REQS), RequestStatus.WAITING)"),  # Python's own, classes
])
def test_generalize_makes_metavariables_of_objects_not_values(code, general):
    from verifier.trace import generalize

    assert generalize(code, {}) == general


@pytest.mark.parametrize("code,distinctive", [
    ("] = False", False), ("return None", False), ("self.x = $V", False), ("len($$$) > 0", False),
    ("request.num_computed_tokens = 0", True), ("'] = False', max_tokens", True),
])
def test_trace_searches_the_release_for_a_fragment_only_where_it_says_something(code, distinctive):
    """A fragment with no name of its own (`] = False`) occurs in a hundred unrelated places: trace tries it
    only in the check's own file and in definitions with the check's symbol's name."""
    from verifier.trace import _distinctive

    assert _distinctive(code) is distinctive


def test_a_fragment_and_its_after_share_their_metavariables():
    from verifier.trace import generalize

    names: dict[str, str] = {}
    assert generalize("req.status = RequestStatus.PREEMPTED", names) == "$REQ.status = RequestStatus.PREEMPTED"
    assert generalize("req.num_computed_tokens = 0", names) == "$REQ.num_computed_tokens = 0"
    assert names == {"req": "$REQ"}


def test_trace_proposes_each_form_with_its_bound_and_evidence(history_source, capsys):
    code, out, err = run_cli(capsys, "trace", "ops-example", "zero", *history_source)
    assert code == 0, err
    assert out.count("  form ") == 3
    assert "form 1: holds in 0.3.0; " in out and "local names as metavariables (request)" in out
    assert "form 2: holds in 0.2.0; " in out and "OldScheduler.schedule" in out
    assert "form 3: holds in 0.1.0; " in out
    assert f"evidence in 0.1.0: {OLD}:9 in OldScheduler.schedule" in out
    assert "9|             preempted_req.num_computed_tokens = 0" in out
    # 0.0.9 is really different: nothing holds there, and the trace says where it stopped and why.
    assert "stops holding in 0.0.9: changed (not-found)" in out
    assert "with these forms: holds from 0.1.0 on" in out
    for item in TRACED.splitlines()[1:]:
        assert item.strip() in out


def test_trace_finds_the_old_path_by_git_rename_detection(kb, engine_repo, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY)
    code, out, _ = run_cli(capsys, "trace", "ops-example", "zero", "--source", f"git:{engine_repo.path}")
    assert code == 0
    assert f"git: {NEW} was {OLD} in 0.1.0" in out


def test_trace_write_adds_the_forms_and_leaves_every_other_byte(history_source, kb, capsys):
    path = kb / "gotchas" / "ops-example.md"
    before = path.read_text()
    code, out, _ = run_cli(capsys, "trace", "ops-example", *history_source, "--write")
    assert code == 0 and "wrote 3 forms to gotchas/ops-example.md" in out
    after = path.read_text()
    anchor = "    adjacent: true\n  - id: metric"
    assert after == before.replace(anchor, "    adjacent: true\n" + TRACED + "  - id: metric")
    assert "# written against 0.4.0's layout" in after
    code, out, _ = run_cli(capsys, "trace", "ops-example", *history_source)
    assert out.count("  form ") == 0  # nothing new to propose
    assert "with its forms: holds from 0.1.0 on" in out


def test_trace_write_appends_to_an_existing_earlier_list_in_a_crlf_file(kb, engine_repo, capsys):
    partial = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + "\n".join(
        TRACED.splitlines()[:6]) + "\n  - id: metric")  # form 1 only, written by hand
    path = kb / "gotchas" / "ops-example.md"
    path.write_bytes(partial.replace("\n", "\r\n").encode())
    code, out, _ = run_cli(capsys, "trace", "ops-example", "zero", "--source", f"git:{engine_repo.path}", "--write")
    assert code == 0 and "wrote 2 forms" in out
    assert path.read_bytes() == ENTRY.replace("    adjacent: true\n  - id: metric",
                                              "    adjacent: true\n" + TRACED + "  - id: metric"
                                              ).replace("\n", "\r\n").encode()


def test_trace_of_a_check_that_holds_nowhere_says_so(kb, engine_repo, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY.replace("contains: request.num_computed_tokens = 0",
                                                                 "contains: request.num_computed_tokens = 7"))
    code, out, _ = run_cli(capsys, "trace", "ops-example", "zero", "--source", f"git:{engine_repo.path}", "--write")
    assert code == 0
    assert "the check holds in no release searched" in out and "nothing to write" in out


def test_trace_refuses_an_entry_with_lint_problems(kb, engine_repo, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY.replace("scheme: ops", "scheme: nope"))
    code, out, err = run_cli(capsys, "trace", "ops-example", "--source", f"git:{engine_repo.path}")
    assert code == 1 and "G206" in out and "fix the entry's lint problems first" in err


# --- verdicts and statuses ----------------------------------------------------------------------------------


def test_without_earlier_forms_a_moved_check_is_missing_not_changed(history_source, kb, capsys):
    code, out, _ = run_cli(capsys, "verify", *history_source)
    assert statuses(kb) == {
        "0.0.9": ("unverified", "missing", 0),  # the file is elsewhere: nothing said about behaviour
        "0.1.0": ("unverified", "missing", 0),
        "0.2.0": ("unverified", "missing", 0),  # the file is there, the symbol is not
        "0.3.0": ("unverified", "missing", 0),
        "0.4.0": ("holds", "holds", 0),
        "0.5.0": ("holds", "holds", 0),
        "0.6.0": ("changed", "changed", 0),  # the place is there and the claim is false
    }
    reasons = {v: r["entries"]["ops-example"]["checks"]["zero"].get("reason") for v, r in ledger_of(kb)["releases"].items()}
    assert reasons["0.1.0"] == "file-missing" and reasons["0.2.0"] == "symbol-missing"
    assert reasons["0.6.0"] == "not-found"


def test_with_the_traced_forms_each_release_holds_in_its_own_form(history_source, kb, capsys):
    path = kb / "gotchas" / "ops-example.md"
    path.write_text(ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + TRACED + "  - id: metric"))
    code, out, _ = run_cli(capsys, "verify", *history_source)
    assert statuses(kb) == {
        "0.0.9": ("changed", "changed", 3),  # form 3 found its place (the old file) and the claim is false
        "0.1.0": ("holds", "holds", 3),
        "0.2.0": ("holds", "holds", 2),
        "0.3.0": ("holds", "holds", 1),
        "0.4.0": ("holds", "holds", 0),
        "0.5.0": ("holds", "holds", 0),
        "0.6.0": ("changed", "changed", 0),  # the forms of the past do not apply after their `until`
    }
    code, out, _ = run_cli(capsys, "show", "ops-example")
    assert "changed in vLLM 0.0.9; holds in vLLM 0.1.0 – 0.5.0; changed in vLLM 0.6.0 (latest)" in out
    assert "zero: holds in 0.1.0 (form 3), 0.2.0 (form 2), 0.3.0 (form 1), 0.4.0 – 0.5.0" in out


@pytest.mark.parametrize("bounds,expected", [
    # introduced/fixed as the code says: 0.0.9 and 0.6.0 are not affected, and nothing contradicts.
    ("introduced: {vllm: 0.1.0}\nfixed: {vllm: 0.6.0}\n",
     {"0.0.9": "not-affected", "0.1.0": "holds", "0.5.0": "holds", "0.6.0": "not-affected"}),
    ("introduced: {vllm: 0.2.0}\n", {"0.1.0": "not-affected", "0.2.0": "holds", "0.6.0": "changed"}),
    ("fixed: {vllm: 0.5.0}\n", {"0.4.0": "holds", "0.5.0": "not-affected"}),
])
def test_introduced_and_fixed_bound_the_statuses(kb, engine_repo, capsys, bounds, expected):
    text = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + TRACED + "  - id: metric")
    (kb / "gotchas" / "ops-example.md").write_text(text.replace("checks:\n", bounds + "checks:\n", 1))
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}")
    found = {v: s for v, (s, _, _) in statuses(kb).items()}
    assert {v: found[v] for v in expected} == expected


@pytest.mark.parametrize("bounds,problem", [
    ("introduced: {vllm: 0.2.0}\n", "every vllm check holds in 0.1.0 (metric, zero), before `introduced: 0.2.0`"),
    ("fixed: {vllm: 0.5.0}\n", "every vllm check holds in 0.5.0 (metric, zero), at or after `fixed: 0.5.0`"),
    ("introduced: {vllm: 0.0.9}\n", "zero is changed in vllm 0.0.9, where the gotcha is stated to bite"),
])
def test_code_that_contradicts_introduced_or_fixed_is_reported(kb, engine_repo, capsys, tmp_path, bounds, problem):
    text = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + TRACED + "  - id: metric")
    (kb / "gotchas" / "ops-example.md").write_text(text.replace("checks:\n", bounds + "checks:\n", 1))
    report = tmp_path / "report.md"
    code, out, _ = run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}", "--report", str(report))
    assert code == 1
    assert problem in out and problem in report.read_text()
    code, out, _ = run_cli(capsys, "show", "ops-example")
    assert problem in out


def test_no_contradiction_is_reported_when_the_bounds_agree_with_the_code(kb, engine_repo, capsys):
    text = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + TRACED + "  - id: metric")
    (kb / "gotchas" / "ops-example.md").write_text(
        text.replace("checks:\n", "introduced: {vllm: 0.1.0}\nfixed: {vllm: 0.6.0}\nchecks:\n", 1))
    code, out, _ = run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}")
    assert "contradict" not in out
    assert code == 1  # status changes still are news: not affected -> holds in 0.1.0, holds -> not affected...
    code, out, _ = run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}")
    assert code == 0 and "0 status changes" in out  # ...once


def test_a_check_with_its_own_since_has_no_verdict_before_it(kb, engine_repo, capsys):
    text = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + TRACED + "  - id: metric")
    text = text.replace('    string: "vllm:num_preemptions"', '    string: "vllm:num_preemptions"\n    since: 0.4.0')
    (kb / "gotchas" / "ops-example.md").write_text(text)
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}")
    releases = ledger_of(kb)["releases"]
    assert "metric" not in releases["0.3.0"]["entries"]["ops-example"]["checks"]
    assert "metric" in releases["0.4.0"]["entries"]["ops-example"]["checks"]
    assert releases["0.3.0"]["entries"]["ops-example"]["status"] == "holds"  # the later claim does not cut it


def test_an_entry_none_of_whose_checks_applies_is_unverified(kb, engine_repo, capsys):
    text = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n    since: 0.4.0\n  - id: metric")
    text = text.replace('    string: "vllm:num_preemptions"', '    string: "vllm:num_preemptions"\n    since: 0.4.0')
    (kb / "gotchas" / "ops-example.md").write_text(text)
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}")
    early = ledger_of(kb)["releases"]["0.2.0"]["entries"]["ops-example"]
    assert early == {"status": "unverified", "checks": {}}


def test_show_json_has_one_record_per_release_in_order(kb, engine_repo, capsys):
    text = ENTRY.replace("    adjacent: true\n  - id: metric", "    adjacent: true\n" + TRACED + "  - id: metric")
    (kb / "gotchas" / "ops-example.md").write_text(text)
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}")
    code, out, _ = run_cli(capsys, "show", "ops-example", "--format", "json")
    records = json.loads(out)
    assert [r["version"] for r in records] == VERSIONS
    assert records[2] == {"engine": "vllm", "version": "0.2.0", "status": "holds",
                          "title": "An example gotcha that is well-formed", "checks": [
        {"check": "zero", "verdict": "holds", "reason": None, "form": 2},
        {"check": "metric", "verdict": "holds", "reason": None, "form": 0}]}
    assert records[0]["status"] == "changed" and records[0]["checks"][0]["reason"] == "not-found"


def test_the_verify_report_tells_moved_code_from_contradicted_claims(kb, engine_repo, capsys, tmp_path):
    """A release where the check's file is gone is work for an author, not a regression; one where the claim
    is false is a regression."""
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY)
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}", "--release", "0.5.0")
    moved = GitRepo.existing(engine_repo.path)
    moved.move(NEW, "pkg/core/sched/v2.py")
    moved.write("pkg/core/sched/v2.py", EXTRACTED.format(reset=RESET))
    moved.commit("release 0.7.0")
    moved.tag("v0.7.0")
    report = tmp_path / "report.md"
    code, out, _ = run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}", "--release", "0.7.0",
                           "--report", str(report))
    assert code == 1
    text = report.read_text()
    assert "## Checks to update" in text and "Claims contradicted" not in text
    assert "holds → missing (file-missing)" in text
    assert "as a form: {path: pkg/core/sched/v2.py}" in text  # the hint, written as a form
    code, out, _ = run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}", "--release", "0.6.0",
                           "--report", str(report))
    assert "## Claims contradicted" in report.read_text()


def test_relocation_searches_are_asked_once_per_release_and_fragment(kb, engine_repo, capsys, monkeypatch):
    """A check that does not hold at the newest release gets a relocation hint, a search of the whole release;
    a re-run answers the same search from the cache and reads no release again."""
    from verifier import locate

    (kb / "gotchas" / "ops-example.md").write_text(ENTRY)
    engine_repo.move(NEW, "pkg/core/sched/v2.py")
    engine_repo.commit("release 0.7.0")
    engine_repo.tag("v0.7.0")
    reads = []
    real = locate.read_python_files
    monkeypatch.setattr(locate, "read_python_files", lambda snapshot: reads.append(snapshot) or real(snapshot))
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}", "--release", "0.7.0")
    first = ledger_of(kb)["releases"]["0.7.0"]["entries"]["ops-example"]["checks"]["zero"]
    assert reads and first["verdict"] == "missing"
    assert "now at pkg/core/sched/v2.py:9-12 in Scheduler._preempt_request" in first["hint"]
    reads.clear()
    (kb / "ledger" / "vllm.json").unlink()
    run_cli(capsys, "verify", "--source", f"git:{engine_repo.path}", "--release", "0.7.0")
    assert reads == []
    assert ledger_of(kb)["releases"]["0.7.0"]["entries"]["ops-example"]["checks"]["zero"]["hint"] == first["hint"]
