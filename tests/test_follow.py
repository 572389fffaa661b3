"""`gotchas follow`: the new form of each check a release broke, over a two-release engine served as a package
index of sdists on 127.0.0.1.

    1.0.0  the entry's checks hold as written
    1.1.0  pkg/sched.py moved to pkg/core/scheduler.py              (a move: the same code elsewhere)
           block_size's annotation re-worded, its default kept      (text beside the claim)
           the admission threshold 128 raised to 256               (the claim changed)
           the reset now reads `req.num_computed_tokens = 0` in a  (text: a receiver renamed, in a moved file)
           second scheduler module
"""

from __future__ import annotations

import json

import pytest

from .conftest import VALID_ENTRY, run_cli
from .index_server import IndexServer, make_sdist

SCHED = """\
class Scheduler:
    def preempt(self, request):
        request.status = PREEMPTED
        request.num_computed_tokens = 0
"""

CONFIG_OLD = """\
class CacheConfig:
    block_size: int = 16
    swap_space: int = 4
"""

CONFIG_NEW = """\
class CacheConfig:
    block_size: BlockSize = 16
    swap_space: int = 4
"""

LIMITS = """\
def admit(waiting):
    if len(waiting) > {cap}:
        return False
    return True
"""

RELEASES = {
    "1.0.0": {"pkg/sched.py": SCHED, "pkg/config.py": CONFIG_OLD, "pkg/limits.py": LIMITS.format(cap=128),
              "pkg/metrics.py": 'NAME = "vllm:num_preemptions"\n'},
    "1.1.0": {"pkg/core/scheduler.py": SCHED, "pkg/config.py": CONFIG_NEW, "pkg/limits.py": LIMITS.format(cap=256),
              "pkg/metrics.py": 'NAME = "vllm:num_preemptions"\n'},
}

ENTRY = VALID_ENTRY.replace("""  - id: metric
""", """  - id: block-size
    claim: The block size defaults to 16.
    path: pkg/config.py
    in: CacheConfig.block_size
    contains: 'block_size: int = 16'
  - id: cap
    # the number is the claim
    claim: More than 128 waiting requests are refused.
    path: pkg/limits.py
    in: admit
    contains: |
      if len(waiting) > 128:
          return False
  - id: metric
""")


@pytest.fixture
def index(kb, monkeypatch, tmp_path):
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        for n, (version, files) in enumerate(RELEASES.items()):
            data = {path: text.encode() for path, text in files.items()}
            server.add("vllm", f"vllm-{version}.tar.gz", make_sdist(data, top=f"vllm-{version}"),
                       upload_time=f"2024-0{n + 1}-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        yield server


def test_follow_proposes_a_move_a_text_change_and_refuses_a_changed_claim(index, capsys):
    code, out, err = run_cli(capsys, "follow", "--release", "1.1.0")
    assert code == 1, err  # something is left for a person: the threshold
    blocks = {b.split(" (")[0]: b for b in out.split("\n\n") if b.strip()}
    zero = blocks["ops-example / zero"]
    assert "missing file-missing; held at 1.0.0" in zero
    assert "proposal: move, holds at pkg/core/scheduler.py:4-4 in Scheduler.preempt; the same code" in zero
    assert "path: pkg/core/scheduler.py" in zero
    size = blocks["ops-example / block-size"]
    assert "proposal: text, holds at pkg/config.py:2-2 in CacheConfig.block_size; keeps the claim" in size
    assert "contains: 'block_size: BlockSize = 16'" in size
    # the old and the new line side by side
    assert "    block_size: int = 16" in size and "|     block_size: BlockSize = 16" in size
    cap = blocks["ops-example / cap"]
    assert "the claim may have changed: `128` is gone (the new code has `256`)" in cap
    assert "keeps the claim" not in cap
    assert "ops-example / metric" not in blocks  # it holds at 1.1.0: nothing to follow


def test_follow_write_kinds_move_writes_only_the_move_and_keeps_every_other_byte(index, kb, capsys):
    path = kb / "gotchas" / "ops-example.md"
    code, _, err = run_cli(capsys, "verify", "--release", "1.0.0")
    assert code == 0, err
    code, out, err = run_cli(capsys, "follow", "--release", "1.1.0", "--write", "--kinds", "move")
    assert code == 1, err
    assert out.count("  written") == 1
    assert "not written: a text proposal (--kinds move)" in out
    assert "not written: no proposal keeps the claim" in out
    assert "re-verified 1 entry at the 1 vLLM releases of the ledger" in out
    assert path.read_text() == ENTRY.replace("""    path: pkg/sched.py
    in: Scheduler.preempt
    contains: request.num_computed_tokens = 0
    after: request.status = PREEMPTED
    adjacent: true
""", """    path: pkg/core/scheduler.py
    in: Scheduler.preempt
    contains: request.num_computed_tokens = 0
    after: request.status = PREEMPTED
    adjacent: true
    earlier:
      - until: 1.0.0
        path: pkg/sched.py
""")
    # the ledger was re-verified with the new forms: at 1.0.0 the check holds with its earlier form
    ledger = json.loads((kb / "ledger" / "vllm.json").read_text())
    assert ledger["releases"]["1.0.0"]["entries"]["ops-example"]["checks"]["zero"]["form"] == 1
    assert "1.1.0" not in ledger["releases"]  # left to `verify --new`, which records it for every entry
    code, out, err = run_cli(capsys, "verify", "--new")
    ledger = json.loads((kb / "ledger" / "vllm.json").read_text())
    zero = ledger["releases"]["1.1.0"]["entries"]["ops-example"]["checks"]["zero"]
    assert (zero["verdict"], zero["form"]) == ("holds", 0)


def test_follow_write_writes_text_that_keeps_the_claim_never_a_changed_claim(index, kb, capsys):
    path = kb / "gotchas" / "ops-example.md"
    code, out, err = run_cli(capsys, "follow", "--write")  # the newest release, both kinds
    assert code == 1, err
    text = path.read_text()
    assert "    contains: 'block_size: BlockSize = 16'\n    earlier:\n      - until: 1.0.0\n" \
           "        contains: 'block_size: int = 16'\n" in text
    assert "if len(waiting) > 128:" in text and "256" not in text
    assert "  # the number is the claim\n" in text  # comments kept
    code, out, _ = run_cli(capsys, "follow")
    assert "ops-example / zero" not in out and "ops-example / block-size" not in out  # they hold now


def test_follow_new_follows_the_releases_the_ledger_has_not_seen(index, kb, capsys):
    code, _, err = run_cli(capsys, "verify", "--release", "1.0.0")
    assert code == 0, err
    code, out, _ = run_cli(capsys, "follow", "--new", "--report", str(kb / "follow.md"))
    assert "ops-example / zero (vllm 1.1.0" in out
    report = (kb / "follow.md").read_text()
    assert report.startswith("## Checks followed to their new code")
    assert "### ops-example / cap (1.1.0)" in report
    assert "```diff\n- " in report and "+     if len(waiting) > 256:" in report
    code, _, err = run_cli(capsys, "verify", "--new")
    code, out, _ = run_cli(capsys, "follow", "--new")
    assert out.startswith("nothing to follow")


def test_follow_refuses_bad_kinds_and_an_unknown_release(index, capsys):
    code, _, err = run_cli(capsys, "follow", "--kinds", "moves")
    assert code == 2 and "--kinds takes move, text" in err
    code, _, err = run_cli(capsys, "follow", "--release", "9.9.9")
    assert code == 2 and "no release 9.9.9" in err


# --- the pieces -------------------------------------------------------------------------------------------

def _form(pattern, path="pkg/a.py", scope=None, after=None):
    from verifier.model import Form

    return Form("vllm", path, "contains", pattern, scope, after)


@pytest.mark.parametrize("old,new,lost", [
    ("if n > 128: return False", "if n > 256: return False", ["`128` is gone (the new code has `256`)"]),
    ("if n > 128: return False", "if n >= 128: return False", ["`>` is gone (the new code has `>=`)"]),
    ("x = f(a, key=True)", "x = f(a, other=True)", ["`key=` is gone (the new code has `other=`)"]),
    ("if not ready: return", "if ready: return", ["`not` is gone"]),
    ('name = "lpm"', 'name = "fcfs"', ["`'lpm'` is gone (the new code has `'fcfs'`)"]),
    ("self.cuda_graph_max_bs = 512", "config.max_bs = 512",  # a rename is for a person
     ["`cuda_graph_max_bs` is gone (the new code has `config`, `max_bs`)", "`self` is gone (the new code has "
      "`config`, `max_bs`)"]),
    ("logger.warning(msg)", "logger.debug(msg)", ["`warning` is gone (the new code has `debug`)"]),
    ("sampled = sample(logits)", "sampled, logprobs = sample(logits)",  # a new shape of result
     ["the new code adds `,`: a condition, a term or a result joined the claim"]),
    ("x = f(a, key=True)", "x = f(a, b, key=True)", []),  # an argument added beside it
    ("block_size: int = 16", "block_size: BlockSize = 16", []),  # an annotation is not the claim
    ("if a:\n    x()\n    return", "if a:\n    check()\n    x()\n    return",
     ["the new code adds a statement (`check()`): the claim's code does more now"]),
    ("t = 5 * 60", "t = 5 * 60", []),
    # a condition joined on narrows when the gotcha bites: for a person
    ("if free < wanted: raise E", "if free < wanted and not extensible: raise E",
     ["the new code adds `and`, `not`: a condition, a term or a result joined the claim"]),
    ("x = a - b", "x = a - b - c", ["the new code adds `-`: a condition, a term or a result joined the claim"]),
])
def test_concerns_name_what_of_the_claim_the_new_code_lost(old, new, lost):
    from verifier.follow import concerns

    assert list(concerns(_form(old), _form(new))) == lost


def test_a_generalization_across_the_claim_lets_a_mutant_through(tmp_path):
    """`f($$$)` would also hold where the keyword argument the claim is about was dropped: the mutant that
    drops it caught the old form, and does not catch the general one; the literal new code catches it."""
    from verifier import follow
    from verifier.model import Release
    from verifier.sources import Snapshot

    old_text = "def g():\n    f(a, key=1)\n"
    new_text = "def g():\n    f(a, key=1, extra=2)\n"

    class Files(Snapshot):
        def __init__(self, text):
            self.text = text

        def read(self, path):
            return self.text.encode() if path == "pkg/a.py" else None

        def paths(self):
            return ["pkg/a.py"]

        def close(self):
            pass

    class Source:
        def open(self, release):
            return Files(old_text if release.version == "1" else new_text)

    reader = follow.Reader(Source())
    held, release = Release("vllm", "1"), Release("vllm", "2")
    template = _form("f(a, key=1)", scope="g")
    held_verdict = reader.form(template, held)
    general, literal = _form("f($$$)", scope="g"), _form("f(a, key=1, extra=2)", scope="g")
    caught, of = follow.mutants_kept(template, held_verdict, held, general, reader.form(general, release), release,
                                     reader)
    assert of >= 2 and caught < of
    caught, of = follow.mutants_kept(template, held_verdict, held, literal, reader.form(literal, release), release,
                                     reader)
    assert of >= 2 and caught == of


def test_aligned_code_keeps_the_templates_metavariables_where_their_code_still_is():
    from verifier import code, follow

    old = code.SourceFile("a.py", b"def g():\n    x = 1\n    cached = make(ret['n']) if on else None\n    y = 2\n")
    new = code.SourceFile("a.py", b"def g():\n    x = 1\n    cached = (\n        Details(n=ret['n'])\n"
                                  b"        if on\n        else None\n    )\n    y = 2\n")
    pattern = "cached = make($COUNT) if on else None"
    scope = old.scopes("g")[0]
    span = old.find(code.fragment(pattern), scope)[0]
    found = follow._aligned_code(pattern, old, scope, span, new, new.scopes("g")[0], {"$COUNT"})
    assert found and found[0][1] == "cached = (\n    Details(n=$COUNT)\n    if on\n    else None\n)"


def test_replace_form_makes_an_inherited_key_explicit_and_keeps_crlf(tmp_path):
    """An `earlier` item that inherited the check's path must keep meaning what it meant when the path changes."""
    from dataclasses import replace

    from verifier.entries import load_entry
    from verifier.rewrite import write_followed

    entry = VALID_ENTRY.replace("""    adjacent: true
  - id: metric""", """    adjacent: true
    earlier:
      - until: 0.9.0
        in: Scheduler.schedule
  - id: metric""")
    path = tmp_path / "ops-example.md"
    path.write_bytes(entry.replace("\n", "\r\n").encode())
    loaded = load_entry(path)
    check = loaded.entry.checks[0]
    write_followed(path, loaded, check, replace(check.own, path="pkg/new.py"), "1.0.0")
    text = path.read_bytes().decode()
    assert "\n" not in text.replace("\r\n", "")
    again = load_entry(path).entry.checks[0]
    assert [(f.path, f.scope, f.until) for f in again.forms] == [
        ("pkg/new.py", "Scheduler.preempt", None), ("pkg/sched.py", "Scheduler.preempt", "1.0.0"),
        ("pkg/sched.py", "Scheduler.schedule", "0.9.0")]
    assert "      - until: 0.9.0\r\n        in: Scheduler.schedule\r\n        path: pkg/sched.py\r\n" in text


def test_replace_form_refuses_a_check_written_in_flow_style_and_leaves_the_file(tmp_path):
    from dataclasses import replace

    from verifier.entries import load_entry
    from verifier.rewrite import RewriteError, write_followed

    entry = VALID_ENTRY.replace("""    adjacent: true
  - id: metric""", """    adjacent: true
    earlier: [{until: 0.9.0, in: Scheduler.schedule}]
  - id: metric""")
    path = tmp_path / "ops-example.md"
    path.write_text(entry)
    loaded = load_entry(path)
    check = loaded.entry.checks[0]
    with pytest.raises(RewriteError, match="flow style"):
        write_followed(path, loaded, check, replace(check.own, path="pkg/new.py"), "1.0.0")
    assert path.read_text() == entry


def test_a_multi_line_fragment_is_written_as_a_literal_block():
    from verifier.rewrite import block

    assert block("contains", "if x:\n    y\n", 4) == ["    contains: |", "      if x:", "          y"]
    assert block("contains", "if x:\n    y", 4) == ["    contains: |-", "      if x:", "          y"]
    assert block("contains", " lead\nx", 4) == ['    contains: " lead\\nx"']  # a block would lose the space


def test_the_nightly_workflow_writes_the_moves_and_reports_the_rest(index, kb, capsys, tmp_path):
    """The scheduled workflow's own steps, run as its shell runs them: the pull request it opens carries the
    entries with the moves applied, the ledger with the new release, and a report listing the text proposals."""
    import os
    import subprocess
    import sys

    import yaml

    from .conftest import REPO

    code, _, err = run_cli(capsys, "verify", "--release", "1.0.0")
    assert code == 0, err
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "verify-releases.yml").read_text())
    steps = {s.get("name"): s for s in workflow["jobs"]["verify"]["steps"]}
    shim = tmp_path / "bin" / "gotchas"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m verifier "$@"\n')
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{shim.parent}{os.pathsep}{os.environ['PATH']}", "SITE_URL": "",
           "GITHUB_OUTPUT": str(tmp_path / "output"), "GITHUB_STEP_SUMMARY": str(tmp_path / "summary"),
           "PYTHONPATH": str(REPO)}
    for name in ("Follow the checks the new releases broke", "Verify new releases"):
        done = subprocess.run(["bash", "-e", "-c", steps[name]["run"]], cwd=kb, env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    entry = (kb / "gotchas" / "ops-example.md").read_text()
    assert "    path: pkg/core/scheduler.py\n" in entry and "      - until: 1.0.0\n        path: pkg/sched.py\n" in entry
    assert "'block_size: int = 16'" in entry  # a text change is for a person
    report = (kb / "report.md").read_text()
    assert "## Checks followed to their new code" in report
    assert "| ops-example | zero | 1.1.0 | `pkg/core/scheduler.py` in `Scheduler.preempt` |" in report
    assert "### ops-example / block-size (1.1.0)" in report and "### ops-example / cap (1.1.0)" in report
    ledger = json.loads((kb / "ledger" / "vllm.json").read_text())
    assert ledger["releases"]["1.1.0"]["entries"]["ops-example"]["checks"]["zero"]["verdict"] == "holds"
    paths = steps["Open a pull request with the ledger"]["with"]["add-paths"].split()
    assert paths == ["ledger/", "gotchas/"]


def test_replace_form_adds_and_drops_keys_and_keeps_the_checks_own_bounds(tmp_path):
    """A new form with a scope the old one lacked gets an `in`; one without the old `after` loses it; the
    check's own `since` bounds both the new form and the old one kept in `earlier`."""
    from dataclasses import replace

    from verifier.entries import load_entry
    from verifier.rewrite import write_followed

    entry = VALID_ENTRY.replace("""  - id: metric
    claim: The metric exists.
    path: pkg/metrics.py
    string: "vllm:num_preemptions"
""", """  - id: metric
    claim: The metric exists.
    path: pkg/metrics.py
    string: "vllm:num_preemptions"
    since: 0.5.0
""")
    path = tmp_path / "ops-example.md"
    path.write_text(entry)
    loaded = load_entry(path)
    zero, metric = loaded.entry.checks
    write_followed(path, loaded, metric, replace(metric.own, path="pkg/obs.py", scope="Metrics"), "1.0.0")
    loaded = load_entry(path)
    zero = loaded.entry.checks[0]
    write_followed(path, loaded, zero, replace(zero.own, scope=None, after=None, adjacent=False,
                                               pattern="$R.num_computed_tokens = 0"), "1.0.0")
    zero, metric = load_entry(path).entry.checks
    assert [(f.path, f.scope, f.since, f.until) for f in metric.forms] == [
        ("pkg/obs.py", "Metrics", "0.5.0", None), ("pkg/metrics.py", None, "0.5.0", "1.0.0")]
    assert [(f.scope, f.pattern, f.after, f.adjacent, f.until) for f in zero.forms] == [
        (None, "$R.num_computed_tokens = 0", None, False, None),
        ("Scheduler.preempt", "request.num_computed_tokens = 0", "request.status = PREEMPTED", True, "1.0.0")]
    text = path.read_text()
    assert "    path: pkg/sched.py\n    contains: $R.num_computed_tokens = 0\n    earlier:\n" in text
    assert "    string: \"vllm:num_preemptions\"\n    in: Metrics\n    since: 0.5.0\n    earlier:\n" in text
    assert text.index("severity: performance") > text.index("        in: null")  # the front matter's next key


def test_trace_write_to_the_last_check_stays_above_the_next_front_matter_key(tmp_path):
    """`trace --write` and `follow --write` share the end of a check: for the last check, the line before the
    next key of the front matter (`severity:`), not the closing fence."""
    from verifier.entries import load_entry
    from verifier.rewrite import write_forms

    path = tmp_path / "ops-example.md"
    path.write_text(VALID_ENTRY)
    loaded = load_entry(path)
    metric = loaded.entry.checks[1]
    write_forms(path, loaded, metric, [{"until": "0.9.0", "path": "pkg/old_metrics.py"}])
    again = load_entry(path).entry
    assert again.severity == "performance"
    assert [(f.path, f.until) for f in again.checks[1].forms] == [("pkg/metrics.py", None),
                                                                  ("pkg/old_metrics.py", "0.9.0")]


def test_a_release_that_cannot_be_read_is_an_error_not_a_proposal(kb, monkeypatch, tmp_path, capsys):
    """A broken archive at the new release: every check is `error unavailable` there, which says nothing about
    the code; follow proposes nothing, writes nothing and exits 3."""
    (kb / "gotchas" / "ops-example.md").write_text(ENTRY)
    monkeypatch.setenv("GOTCHAS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with IndexServer() as server:
        files = {path: text.encode() for path, text in RELEASES["1.0.0"].items()}
        server.add("vllm", "vllm-1.0.0.tar.gz", make_sdist(files, top="vllm-1.0.0"), upload_time="2024-01-01T00:00:00Z")
        server.add("vllm", "vllm-1.1.0.tar.gz", b"this is not a gzip file", upload_time="2024-02-01T00:00:00Z")
        monkeypatch.setenv("PIP_INDEX_URL", server.url)
        before = (kb / "gotchas" / "ops-example.md").read_text()
        code, out, err = run_cli(capsys, "follow", "--release", "1.1.0", "--write")
    assert code == 3, (out, err)
    assert "a failure of the machinery says nothing of the code; nothing is proposed" in out
    assert "proposal:" not in out
    assert (kb / "gotchas" / "ops-example.md").read_text() == before
