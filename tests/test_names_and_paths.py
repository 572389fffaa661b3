"""What data may name, and where the tool reads: the load-time rule (entries, checks, vocabulary terms,
engine keys, release bounds) and the readers that refuse links and devices (`verifier.safety`)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from verifier import kb as kb_module
from verifier import lint
from verifier.changes import entries_to_check
from verifier.entries import MAX_ENTRY_BYTES, load_entry
from verifier.safety import MAX_NAME, PathError, inside, name_problem, read_regular

from .conftest import REPO, VALID_ENTRY, run_cli
from .test_pr_mode import repo  # noqa: F401  (the KB as a git repository on a branch `pr`)

LEAVING = ["../x", "..", "a/../../b", "/etc/x", "a/b", "a\\b", "x\0y", "C:x", ".hidden", "a.."]


@pytest.mark.parametrize("value", LEAVING + ["UPPER", "under_score", "-lead", "trail-", "a--b", "", "x" * (MAX_NAME + 1)])
def test_an_id_that_is_not_plain_kebab_case_is_refused(value):
    assert name_problem(value) is not None


@pytest.mark.parametrize("value", ["ops-example", "a", "0-9", "x" * MAX_NAME])
def test_a_kebab_id_is_a_name(value):
    assert name_problem(value) is None


@pytest.mark.parametrize("value", ["0.10.1", "0.10.1+cu126", "0.5.0rc1", "1!2.0", "HEAD", "0.11.2.post1", "v0_1"])
def test_release_versions_are_names(value):
    assert name_problem(value, "version") is None


@pytest.mark.parametrize("value", LEAVING + ["0.1..2", ".1", "1.", "0.1 ", "0.1/2", 3])
def test_versions_that_could_leave_a_folder_are_refused(value):
    assert name_problem(value, "version") is not None


@pytest.mark.parametrize("relative", ["../x", "a/../../x", "/abs", "a//b", "./a", "a/", "x\\..\\y", "a\0b", "c:x"])
def test_inside_refuses_any_path_that_could_leave_its_folder(tmp_path, relative):
    with pytest.raises(PathError):
        inside(tmp_path, relative)


def test_inside_refuses_a_symbolic_link_on_the_way(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "releases").symlink_to(outside)
    with pytest.raises(PathError, match="symbolic link"):
        inside(tmp_path / "out", "releases/vllm.html")
    assert inside(tmp_path / "out", "entries/a.html") == tmp_path / "out" / "entries" / "a.html"


def test_read_regular_refuses_links_devices_and_fifos_and_reads_at_most_one_byte_over(tmp_path):
    target = tmp_path / "t.md"
    target.write_bytes(b"x" * 100)
    (tmp_path / "link.md").symlink_to(target)
    os.mkfifo(tmp_path / "fifo.md")  # opened without blocking, then refused: a writer never comes
    for path in (tmp_path / "link.md", "/dev/zero", tmp_path / "fifo.md", tmp_path):
        with pytest.raises(PathError):
            read_regular(path, 10)
    assert read_regular(target, 10) == b"x" * 11
    assert read_regular(target, 1000) == b"x" * 100


def test_an_entry_that_is_a_link_is_refused_with_g107_even_when_its_target_is_a_good_entry(tmp_path):
    good = tmp_path / "elsewhere.md"
    good.write_text(VALID_ENTRY)
    (tmp_path / "ops-example.md").symlink_to(good)
    loaded = load_entry(tmp_path / "ops-example.md", display="gotchas/ops-example.md")
    assert loaded.entry is None
    assert [(d.code, d.line) for d in loaded.diagnostics] == [("G107", 1)]
    assert loaded.diagnostics[0].message == "the file is a symbolic link; only regular files are read"


def test_an_entry_linked_to_dev_zero_is_refused_at_once_without_reading_it_whole(tmp_path):
    (tmp_path / "ops-zero.md").symlink_to("/dev/zero")
    (tmp_path / "ops-big.md").write_bytes(b"---\n" + b"x" * (MAX_ENTRY_BYTES + 5))
    # In a child with 1 GiB of address space: reading /dev/zero whole would die of MemoryError there.
    code = f"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from verifier.entries import load_entry
for path in ({str(tmp_path / "ops-zero.md")!r}, "/dev/zero", {str(tmp_path / "ops-big.md")!r}):
    loaded = load_entry(path, display=path.rsplit("/", 1)[-1])
    print(path, [(d.code, d.message) for d in loaded.diagnostics])
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 0, done.stderr
    link, zero, big = done.stdout.splitlines()
    assert "G107" in link and "the file is a symbolic link" in link
    assert "G107" in zero and "the file is not a regular file (a character device)" in zero
    assert "G107" in big and f"over {MAX_ENTRY_BYTES} bytes" in big


def _kb_with(kb_root, file: str, text: str):
    (kb_root / "gotchas" / file).write_text(text)
    return kb_module.load(kb_root)


@pytest.mark.parametrize("file, text, line, what", [
    ("engines.yaml", "vllm:\n  name: vLLM\n  package: vllm\n  repository: https://example.org/vllm\n"
                     "  tag_pattern: v{version}\n'../../escape':\n  name: X\n  package: x\n"
                     "  repository: https://example.org/x\n  tag_pattern: v{version}\n", 6, "engine key '../../escape'"),
    ("engines.yaml", "vllm:\n  name: vLLM\n  package: vllm\n  repository: https://example.org/vllm\n"
                     "  tag_pattern: v{version}\n  oldest: ../0.8.0\n", 6, "oldest '../0.8.0'"),
    ("concepts.yaml", "kv-cache: The KV cache.\npreemption: Preemption.\n'../evil': A term.\n", 3, "term '../evil'"),
    ("schemes.yaml", "ops: Operations.\n'Ops/Config': A term.\n", 2, "term 'Ops/Config'"),
])
def test_the_kb_refuses_vocabulary_terms_and_engine_keys_that_are_not_names(kb_root, file, text, line, what):
    with pytest.raises(kb_module.KBError) as caught:
        _kb_with(kb_root, file, text)
    message = str(caught.value)
    assert message.startswith(f"{kb_root / 'gotchas' / file}:{line}: ") and what in message


def test_a_bad_vocabulary_term_stops_every_command_with_a_usage_error_naming_file_and_line(kb_root, monkeypatch, capsys):
    (kb_root / "gotchas" / "concepts.yaml").write_text("kv-cache: The KV cache.\npreemption: P.\n'../evil': A term.\n")
    monkeypatch.chdir(kb_root)
    for command in (["check", "--offline"], ["site", "--out", str(kb_root / "out")], ["verify", "--engine", "vllm"]):
        code, _, err = run_cli(capsys, *command)
        assert code == 2 and "concepts.yaml:3: term '../evil'" in err, (command, err)
    assert not (kb_root / "out").exists()


def test_lint_says_why_an_id_is_not_a_name(tmp_path):
    long_id = "a" * (MAX_NAME + 1)
    path = tmp_path / f"{long_id}.md"
    path.write_text(VALID_ENTRY.replace("id: ops-example", f"id: {long_id}").replace("  - id: zero", "  - id: Zero"))
    found = {(d.code, d.message) for d in lint.lint(load_entry(path), kb_module.load(REPO))}
    assert ("G204", f"id {long_id!r} is {MAX_NAME + 1} characters long; at most {MAX_NAME}") in found
    assert ("G204", "check id 'Zero' must be kebab-case (a-z, 0-9, '-')") in found


def test_a_pull_request_adding_an_entry_linked_to_a_device_is_checked_and_refused(repo, capsys):  # noqa: F811 - the fixture imported above
    (repo.path / "gotchas" / "ops-zero.md").symlink_to("/dev/zero")
    repo.commit("a link")
    assert entries_to_check(kb_module.load(repo.path), "main") == [repo.path / "gotchas" / "ops-zero.md"]
    code, out, _ = run_cli(capsys, "check", "--changed-since", "main", "--offline", "--format", "github")
    assert code == 1
    assert "::error file=gotchas/ops-zero.md,line=1," in out and "title=G107::" in out


def test_an_entry_named_by_path_is_read_as_the_link_it_is(repo, capsys):  # noqa: F811 - the fixture imported above
    elsewhere = repo.path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "target.md").write_text(VALID_ENTRY.replace("id: ops-example", "id: ops-linked"))
    (repo.path / "gotchas" / "ops-linked.md").symlink_to(elsewhere / "target.md")
    for name in ("ops-linked", "gotchas/ops-linked.md"):
        code, out, _ = run_cli(capsys, "check", "--offline", name, "--format", "github")
        assert code == 1 and "::error file=gotchas/ops-linked.md,line=1," in out and "title=G107::" in out, out


def test_verify_does_not_start_while_lint_reports_a_problem_and_writes_nothing(kb_root, monkeypatch, capsys):
    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY.replace("id: ops-example", "id: ../../evil"))
    monkeypatch.chdir(kb_root)
    code, _, err = run_cli(capsys, "verify", "--source", "dir:/nonexistent")
    assert code == 1  # a lint problem: for an author to fix
    assert "gotchas/ops-example.md:2:1: G204 id '../../evil' must be kebab-case" in err
    assert "2 lint problem(s) above" in err  # G204, and G205: the id is not the file name
    assert not (kb_root / "ledger").exists()


def test_site_does_not_start_while_lint_reports_a_problem_and_writes_nothing(kb_root, monkeypatch, capsys):
    (kb_root / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    (kb_root / "gotchas" / "ops-other.md").write_text(VALID_ENTRY)  # claims ops-example's id
    monkeypatch.chdir(kb_root)
    code, _, err = run_cli(capsys, "site", "--out", str(kb_root / "out"))
    assert code == 1
    assert "gotchas/ops-other.md:2:1: G205 id 'ops-example' must equal the file name 'ops-other'" in err
    assert not (kb_root / "out").exists()
