"""Issue #32, "Writes that can lose an entry": every file the tool writes whole (an entry `trace --write` and
`follow --write` edit, the skeleton `new` writes, what `schema --write` writes) is written atomically (a
temporary file, fsync, rename) and never through a link (`safety.write_text_atomically`)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys

import pytest
import yaml

from .conftest import run_cli
from .test_history import ENTRY, engine_repo  # noqa: F401 (a fixture)


def _limited(limit: int):
    def child() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit is EFBIG, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return child


# --- 1. a failed write leaves the entry as it was ---------------------------------------------------------


def test_trace_write_under_a_file_size_limit_leaves_the_entry_byte_identical(kb, engine_repo, capsys):  # noqa: F811
    path = kb / "gotchas" / "ops-example.md"
    path.write_text(ENTRY)
    path.chmod(0o640)
    source = ["--source", f"git:{engine_repo.path}"]
    code, out, _ = run_cli(capsys, "trace", "ops-example", "zero", *source)  # the caches warm, the limit unpaid
    assert code == 0 and out.count("  form ") == 3
    before = path.read_bytes()
    done = subprocess.run([sys.executable, "-m", "verifier", "trace", "ops-example", "zero", *source, "--write"],
                          cwd=kb, capture_output=True, text=True, timeout=60,
                          preexec_fn=_limited(len(before) + 64))  # noqa: PLW1509 (no threads are started before)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "gotchas/ops-example.md: cannot write: File too large; it is unchanged" in done.stderr
    assert path.read_bytes() == before
    assert oct(path.stat().st_mode & 0o777) == oct(0o640)
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # no temporary file is left


def test_a_written_entry_keeps_its_mode(kb, engine_repo, capsys):  # noqa: F811
    path = kb / "gotchas" / "ops-example.md"
    path.write_text(ENTRY)
    path.chmod(0o600)
    code, out, _ = run_cli(capsys, "trace", "ops-example", "zero", "--source", f"git:{engine_repo.path}", "--write")
    assert code == 0 and "wrote 3 forms" in out
    assert path.stat().st_mode & 0o777 == 0o600


def test_the_atomic_write_refuses_links_on_the_way_and_paths_outside_its_root(tmp_path):
    from verifier.safety import PathError, write_text_atomically

    root, outside = tmp_path / "kb", tmp_path / "outside"
    (root / "gotchas").mkdir(parents=True)
    outside.mkdir()
    (root / "linked").symlink_to(outside)
    for path, said in [(root / "linked" / "x.md", "symbolic link"), (outside / "x.md", "is not under"),
                       (root / "gotchas" / ".." / ".." / "outside" / "x.md", "is not under")]:
        with pytest.raises(PathError, match=said):
            write_text_atomically(path, "text", root)
    assert list(outside.iterdir()) == []
    write_text_atomically(root / "gotchas" / "x.md", "one", root)
    with pytest.raises(PathError, match="exists already"):
        write_text_atomically(root / "gotchas" / "x.md", "two", root, exclusive=True)
    assert (root / "gotchas" / "x.md").read_text() == "one"


# --- 2. a keep-chomped block scalar keeps its trailing lines -----------------------------------------------


KEPT_ENTRY = ENTRY.replace("""    contains: request.num_computed_tokens = 0
    after: request.status = RequestStatus.PREEMPTED
    adjacent: true
""", """    after: request.status = RequestStatus.PREEMPTED
    adjacent: true
    contains: |+
      request.num_computed_tokens = 0


""")
KEPT = "request.num_computed_tokens = 0\n\n\n"


@pytest.mark.parametrize("extra", ["", "  # a comment that belongs to what follows\n\n"])
def test_adding_forms_keeps_the_trailing_lines_of_a_keep_chomped_block_scalar(tmp_path, extra):
    from verifier.entries import load_entry
    from verifier.rewrite import write_forms

    path = tmp_path / "ops-example.md"
    path.write_text(KEPT_ENTRY.replace("\n\n\n  - id: metric", "\n\n\n" + extra + "  - id: metric"))
    loaded = load_entry(path)
    check = next(c for c in loaded.entry.checks if c.id == "zero")

    def code_of(text: str) -> str:
        front = yaml.safe_load(text.split("---\n")[1])
        return next(c for c in front["checks"] if c["id"] == "zero")["contains"]

    assert code_of(path.read_text()) == KEPT
    write_forms(path, loaded, check, [{"until": "0.3.0", "in": "Scheduler.schedule"}])
    after = path.read_text()
    assert code_of(after) == KEPT
    assert extra in after
    assert len(next(c for c in load_entry(path).entry.checks if c.id == "zero").earlier) == 1


def test_following_keeps_the_trailing_lines_of_a_keep_chomped_block_scalar(tmp_path):
    from dataclasses import replace

    from verifier.entries import load_entry
    from verifier.rewrite import write_followed

    path = tmp_path / "ops-example.md"
    path.write_text(KEPT_ENTRY)
    loaded = load_entry(path)
    check = next(c for c in loaded.entry.checks if c.id == "zero")
    write_followed(path, loaded, check, replace(check.own, path="pkg/new.py"), "1.0.0")
    front = yaml.safe_load(path.read_text().split("---\n")[1])
    zero = next(c for c in front["checks"] if c["id"] == "zero")
    assert zero["contains"] == KEPT
    assert zero["path"] == "pkg/new.py" and zero["earlier"][0]["until"] == "1.0.0"


# --- 3. an entry edited while trace runs -------------------------------------------------------------------


def test_an_entry_edited_between_read_and_write_is_not_overwritten(tmp_path, monkeypatch):
    from verifier import rewrite
    from verifier.entries import load_entry

    path = tmp_path / "ops-example.md"
    path.write_text(ENTRY)
    loaded = load_entry(path, display="gotchas/ops-example.md")
    check = next(c for c in loaded.entry.checks if c.id == "zero")
    edited = ENTRY.replace("Preemption resets the computed tokens.", "Someone else's sentence.")
    parse = rewrite.parse_entry

    def meanwhile(*args, **kwargs):  # between the read of the entry and its replacement
        path.write_text(edited)
        return parse(*args, **kwargs)

    monkeypatch.setattr(rewrite, "parse_entry", meanwhile)
    with pytest.raises(rewrite.RewriteError, match=r"^gotchas/ops-example.md changed while trace ran; not written"):
        rewrite.write_forms(path, loaded, check, [{"until": "0.3.0", "in": "Scheduler.schedule"}])
    assert path.read_text() == edited


@pytest.mark.parametrize("edit", [
    lambda text: text.replace("  - id: zero", "  - id: zero-renamed"),  # the check is gone
    lambda text: text.replace("scheme: ops", "scheme: nope"),  # the entry does not lint any more
    lambda text: text.replace("Preemption resets the computed tokens.", "Another claim."),
])
def test_trace_write_refuses_an_entry_edited_while_it_ran(kb, engine_repo, capsys, monkeypatch, edit):  # noqa: F811
    from verifier import run

    path = kb / "gotchas" / "ops-example.md"
    path.write_text(ENTRY)
    traced = run.trace_checks

    def editing(*args, **kwargs):
        found = traced(*args, **kwargs)
        path.write_text(edit(ENTRY))
        return found

    monkeypatch.setattr(run, "trace_checks", editing)
    code, _, err = run_cli(capsys, "trace", "ops-example", "zero", "--source", f"git:{engine_repo.path}", "--write")
    assert code == 1
    assert "gotchas/ops-example.md changed while trace ran; not written" in err
    assert path.read_text() == edit(ENTRY)


# --- 4. `new` and `schema --write` never write through a link ----------------------------------------------


NEW = ["new", "--id", "perf-linked", "--title", "A title", "--scheme", "perf", "--severity", "performance",
       "--engine", "vllm", "--concept", "kv-cache"]


def test_new_refuses_a_dangling_link_at_the_entry_name(kb, tmp_path, capsys):
    outside = tmp_path / "outside.md"
    (kb / "gotchas" / "perf-linked.md").symlink_to(outside)
    code, _, err = run_cli(capsys, *NEW)
    assert code == 2 and "Traceback" not in err
    assert "gotchas/perf-linked.md" in err and "symbolic link" in err
    assert not outside.exists() and (kb / "gotchas" / "perf-linked.md").is_symlink()


def test_the_skeleton_is_never_written_through_a_link_planted_after_the_questions(kb, tmp_path):
    from verifier import kb as kb_module
    from verifier import scaffold
    from verifier.safety import PathError

    loaded = kb_module.load(kb)
    fields = scaffold.gather(loaded, {"id": "perf-linked", "title": "A title", "scheme": "perf",
                                      "severity": "performance", "engines": ["vllm"], "concepts": ["kv-cache"]}, None)
    outside = tmp_path / "outside.md"
    (kb / "gotchas" / "perf-linked.md").symlink_to(outside)  # after gather looked
    with pytest.raises(PathError, match="perf-linked.md is a symbolic link"):
        scaffold.write(loaded, fields)
    assert not outside.exists()
    (kb / "gotchas" / "perf-linked.md").unlink()
    (kb / "gotchas" / "perf-linked.md").write_text("someone's\n")
    with pytest.raises(PathError, match="exists already"):
        scaffold.write(loaded, fields)
    assert (kb / "gotchas" / "perf-linked.md").read_text() == "someone's\n"


def test_new_writes_a_new_file_atomically(kb, capsys):
    code, out, _ = run_cli(capsys, *NEW)
    assert code == 0 and "wrote gotchas/perf-linked.md" in out
    assert (kb / "gotchas" / "perf-linked.md").read_text().startswith("---\nid: perf-linked\n")
    assert not [p.name for p in (kb / "gotchas").iterdir() if p.name.endswith(".tmp")]


def test_schema_write_refuses_a_dangling_link_at_the_schema_name(kb, tmp_path, capsys):
    outside = tmp_path / "outside.json"
    (kb / "gotchas" / "entry.schema.json").symlink_to(outside)
    code, _, err = run_cli(capsys, "schema", "--write")
    assert code == 2 and "Traceback" not in err
    assert "entry.schema.json" in err and "symbolic link" in err
    assert not outside.exists()


def test_schema_write_refuses_a_linked_docs_folder(kb, tmp_path, capsys):
    from .conftest import REPO

    outside = tmp_path / "docs"
    outside.mkdir()
    (outside / "format.md").write_text((REPO / "docs" / "format.md").read_text())
    os.utime(outside / "format.md", ns=(10**18, 10**18))
    (kb / "docs").symlink_to(outside)
    code, _, err = run_cli(capsys, "schema", "--write")
    assert code == 2 and "Traceback" not in err and "symbolic link" in err
    assert (outside / "format.md").stat().st_mtime_ns == 10**18  # not written through the link


def test_schema_write_writes_the_schema(kb, capsys):
    (kb / "gotchas" / "entry.schema.json").write_text("{}\n")
    os.chmod(kb / "gotchas" / "entry.schema.json", 0o640)
    code, _, _ = run_cli(capsys, "schema", "--write")
    assert code == 0
    assert (kb / "gotchas" / "entry.schema.json").read_text().startswith("{")
    assert (kb / "gotchas" / "entry.schema.json").stat().st_mode & 0o777 == 0o640
