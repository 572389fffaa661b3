"""Audit's readers against the files a pull request feeds them (the Action and the pre-commit hook): every
spelling pip takes of an include is followed, a chain of includes is bounded rather than a RecursionError, a
FIFO is refused rather than waited on, TOML is bounded in depth and key length before tomllib reads it, the
readers are linear in what they read (a lock or pyproject naming an engine thousands of times, a Dockerfile
whose variables double themselves, a serve log's long line), and a folder's file that could not be read is never
an exit 0.

The hostile sizes are chosen so that the readers before these bounds took minutes (or forever): each runs in a
child with a deadline far above what it takes now, so a regression fails instead of hanging the suite."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import deployment
from verifier.deployment import _llama_logs, _versions

from .conftest import child_env
from .test_audit_inputs import read, versions

PACKAGES = {"vllm": "vllm", "sglang": "sglang"}


def within(seconds: float, script: str) -> str:
    """`script` run in a child Python, which must end within `seconds`; its standard output."""
    try:
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=child_env(), capture_output=True,
                              text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"not done within {seconds} s")
    assert done.returncode == 0, done.stderr
    return done.stdout


# --- requirement files: pip's spellings, chains, FIFOs --------------------------------------------------------

@pytest.mark.parametrize("line", ["-rmore.txt", "--requirement=more.txt", "--requirement more.txt",
                                  "--requirem more.txt", "--pre -r more.txt", "-cmore.txt", "--constraint=more.txt",
                                  "-c more.txt", "--constr=more.txt", "-r 'more.txt'"])
def test_every_spelling_pip_takes_of_an_include_is_followed(tmp_path, line):
    (tmp_path / "more.txt").write_text("vllm==0.9.2\n")
    (tmp_path / "requirements.txt").write_text(f"numpy\n{line}\n")
    found, _ = read(tmp_path / "requirements.txt")
    assert versions(found) == [("vllm", "0.9.2", None)]


def test_an_option_line_pip_refuses_is_refused_with_its_line(tmp_path):
    (tmp_path / "requirements.txt").write_text("numpy\n--no-such-option x\n")
    with pytest.raises(deployment.DeploymentError, match=r"requirements\.txt:2: pip cannot read this line's "
                                                         r"options \(no such option: --no-such-option\)"):
        read(tmp_path / "requirements.txt")


def test_only_the_first_file_a_line_names_is_read_as_pip_does(tmp_path):
    (tmp_path / "a.txt").write_text("vllm==0.9.2\n")
    (tmp_path / "b.txt").write_text("sglang==0.5.2\n")
    (tmp_path / "requirements.txt").write_text("-r a.txt -r b.txt\n")
    found, notes = read(tmp_path / "requirements.txt")
    assert versions(found) == [("vllm", "0.9.2", None)]
    assert any("requirements.txt:1: pip reads only the first file a line names (a.txt); b.txt not read" in n
               for n in notes)


def chain(folder, length: int) -> None:
    """requirements-0.txt includes requirements-1.txt ... includes requirements-{length-1}.txt, which pins vLLM."""
    for i in range(length - 1):
        (folder / f"requirements-{i}.txt").write_text(f"-r requirements-{i + 1}.txt\n")
    (folder / f"requirements-{length - 1}.txt").write_text("vllm==0.9.2\n")


def test_a_chain_of_includes_is_read_to_its_bound_and_refused_past_it(tmp_path):
    chain(tmp_path, _versions.MAX_REQUIREMENT_FILES)  # deeper than Python's stack: a RecursionError before
    found, _ = read(tmp_path / "requirements-0.txt")
    assert versions(found) == [("vllm", "0.9.2", None)]
    longer = tmp_path / "longer"
    longer.mkdir()
    chain(longer, _versions.MAX_REQUIREMENT_FILES + 1)
    with pytest.raises(deployment.DeploymentError, match=rf"requirements-{_versions.MAX_REQUIREMENT_FILES - 1}\.txt:1: "
                                                         "includes "
                                                         "more than 1000 requirement files in all; not read"):
        read(longer / "requirements-0.txt")


def test_an_include_cycle_ends_where_it_closes(tmp_path):
    (tmp_path / "a.txt").write_text("-r b.txt\nvllm==0.9.2\n")
    (tmp_path / "b.txt").write_text("-r ./a.txt\n")
    found, _ = read(tmp_path / "a.txt")
    assert versions(found) == [("vllm", "0.9.2", None)]


def test_a_fifo_named_by_an_include_is_refused_at_the_line_that_names_it(tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")  # a read of it would wait for a writer forever
    (tmp_path / "requirements.txt").write_text("numpy\n-r pipe.txt\n")
    out = within(30, f"""
        from pathlib import Path
        from verifier import deployment
        try:
            deployment.read_path(Path({str(tmp_path / 'requirements.txt')!r}), {{"vllm": "vllm"}}, [], {{}})
        except deployment.DeploymentError as exc:
            print(exc)
        """)
    assert out.strip() == (f"{tmp_path}/requirements.txt:2: includes {tmp_path}/pipe.txt: not a regular file (a "
                           "folder, a FIFO or a device); not read")


# --- a folder: what could not be read is never an exit 0 -------------------------------------------------------

@pytest.mark.parametrize("bad", ["not UTF-8", "FIFO"])
def test_a_folder_file_that_cannot_be_read_makes_the_audit_exit_2_after_its_answer(audit_cli, tmp_path, bad):
    (tmp_path / "requirements.txt").write_text("vllm==0.10.0\n")
    (tmp_path / "deploy").mkdir()
    broken = tmp_path / "deploy" / "requirements-gpu.txt"
    if bad == "FIFO":
        os.mkfifo(broken)
    else:
        broken.write_bytes(b"vllm==0.9.2 \xff\n")  # names an engine: it may pin the one that runs
    code, out, err = audit_cli(str(tmp_path), "--format", "json")
    assert code == 2
    assert '"release": "0.10.0"' in out  # what could be read is still answered
    assert f"gotchas: audit is incomplete: 1 file(s) that may declare an engine could not be read ({broken}: " in err
    assert ("not UTF-8" if bad == "not UTF-8" else "not a regular file") in err


def test_a_folder_skips_links_and_files_that_name_no_engine_without_failing(audit_cli, tmp_path):
    (tmp_path / "requirements.txt").write_text("vllm==0.10.0\n")
    (tmp_path / "notes.txt").write_bytes(b"\xff\xfe no engine here\n")  # not a candidate: names no engine
    (tmp_path / "constraints.txt").symlink_to("/dev/zero")  # links are never followed in a folder
    code, _, err = audit_cli(str(tmp_path), "--format", "json")
    assert code in (0, 1) and "incomplete" not in err


# --- TOML: depth and dotted keys bounded, brackets in strings not counted -----------------------------------

def test_deep_toml_nesting_is_refused_with_its_line_not_a_recursion_error(tmp_path):
    lock = tmp_path / "uv.lock"
    lock.write_text('version = 1\n\n[[package]]\nname = "x"\nextra = ' + "[" * 10_000 + "]" * 10_000 + "\n")
    with pytest.raises(deployment.DeploymentError, match=r"uv\.lock:5: nested more than 64 deep; not read"):
        read(lock)


def test_a_long_dotted_key_is_refused_before_tomllib_reads_it(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "x"\n' + ".".join(["a"] * 50_000) + ' = 1\n')
    out = within(20, f"""
        from pathlib import Path
        from verifier import deployment
        try:
            deployment.read_path(Path({str(pyproject)!r}), {{"vllm": "vllm"}}, [], {{}})
        except deployment.DeploymentError as exc:
            print(exc)
        """)
    assert out.strip() == f"{pyproject}:3: a key of more than 64 dotted parts; not read"


def test_brackets_and_dots_inside_strings_and_comments_are_not_counted(tmp_path):
    deep = "[" * 100
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f'[project]\nname = "x"  # {deep} {"." * 100}\ndescription = "{deep}"\n'
                         f"summary = '{'.' * 100}'\nnotes = '''\n{deep}\n'''\n"
                         'dependencies = ["vllm==0.10.0"]\n')
    found, _ = read(pyproject)
    assert versions(found) == [("vllm", "0.10.0", None)]


# --- linear readers --------------------------------------------------------------------------------------------

def test_a_lock_pinning_an_engine_thousands_of_times_is_read_in_linear_time(tmp_path):
    lock = tmp_path / "uv.lock"
    lock.write_text("version = 1\n" + "".join(f'\n[[package]]\nname = "vllm"\nversion = "0.9.{i}"\n'
                                              for i in range(8000)))  # 212 s before
    out = within(30, f"""
        from pathlib import Path
        from verifier import deployment
        found = deployment.read_path(Path({str(lock)!r}), {{"vllm": "vllm"}}, [], {{}})
        print(len(found.installed), found.installed[7999].version, found.installed[7999].line)
        """)
    assert out.split() == ["8000", "0.9.7999", str(2 + 4 * 7999 + 2)]  # each at its own `name =` line


def test_a_lock_listing_the_same_version_twice_gives_each_its_own_line(tmp_path):
    lock = tmp_path / "uv.lock"
    lock.write_text('version = 1\n\n[[package]]\nname = "vllm"\nversion = "0.9.2"\n\n'
                    '[[package]]\nname = "vllm"\nversion = "0.9.2"\n')
    found, _ = read(lock)
    assert [i.line for i in found.installed] == [4, 8]


def test_a_pyproject_naming_an_engine_thousands_of_times_is_read_in_linear_time(tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    requirements = ",\n".join(f'  "vllm==0.9.{i}"' for i in range(8000))
    pyproject.write_text(f'[project]\nname = "x"\ndependencies = [\n{requirements}\n]\n')  # 19 s before
    out = within(30, f"""
        from pathlib import Path
        from verifier import deployment
        found = deployment.read_path(Path({str(pyproject)!r}), {{"vllm": "vllm"}}, [], {{}})
        print(len(found.installed), found.installed[-1].line, found.installed[10].line)
        """)
    assert out.split() == ["8000", str(4 + 7999), "14"]  # `"vllm==0.9.1"` is not found at `"vllm==0.9.10"`


def test_a_setup_cfg_naming_an_engine_thousands_of_times_is_read_in_linear_time(tmp_path):
    setup_cfg = tmp_path / "setup.cfg"
    setup_cfg.write_text("[options]\ninstall_requires =\n" + "".join(f"    vllm==0.9.{i}\n" for i in range(8000)))
    out = within(30, f"""
        from pathlib import Path
        from verifier import deployment
        found = deployment.read_path(Path({str(setup_cfg)!r}), {{"vllm": "vllm"}}, [], {{}})
        print(len(found.installed), found.installed[-1].line)
        """)
    assert out.split() == ["8000", str(3 + 7999)]


def test_variables_that_double_themselves_are_refused_not_expanded(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM vllm/vllm-openai:v0.10.0\nENV A=x\n" + "ENV A=$A$A\n" * 64 + 'CMD ["--model", "m"]\n')
    out = within(30, f"""
        from pathlib import Path
        from verifier import deployment
        try:
            deployment.read_path(Path({str(dockerfile)!r}), {{"vllm": "vllm"}}, [], {{"vllm": "0.10.0"}})
        except deployment.DeploymentError as exc:
            print(exc)
        """)
    assert re.fullmatch(rf"{re.escape(str(dockerfile))}:(\d+): its variables expand to more than 8 times the "
                        r"file's size \(one doubles itself\?\); not read\n", out)


def test_a_script_whose_assignments_double_themselves_is_refused(tmp_path):
    script = tmp_path / "serve.sh"
    script.write_text("A=x\n" + 'A="$A$A"\n' * 64 + "vllm serve m --max-model-len $A\n")
    with pytest.raises(deployment.DeploymentError, match=r"serve\.sh:\d+: its variables expand to more than 8"):
        read(script)


def test_real_variable_use_stays_within_the_budget(tmp_path):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("ARG TAG=v0.10.0\nFROM vllm/vllm-openai:${TAG}\nENV PATH=/opt/bin:$PATH\n"
                          + "ENV PATH=/opt/x:$PATH\n" * 50 + 'ENV MODEL=meta/llama\nCMD ["--model", "$MODEL"]\n')
    found, _ = read(dockerfile)
    assert versions(found) == [("vllm", "0.10.0", None)]


@pytest.mark.parametrize("line", ["'build: 1 with ' * 4000", "'build info ' * 40_000", "'version: ' + 'x' * 200_000",
                                  "'build = 1 (' * 40_000"])
def test_a_long_serve_log_line_is_read_in_linear_time(line):
    out = within(20, f"""
        from verifier.deployment import _llama_logs
        line = {line}
        print(_llama_logs.looks_like_llama_log(line), _llama_logs.parse_llama_log(line + "\\n", "serve.log"))
        """)  # `build: 1 with ` x 2000 took 42 s before, x 4000 some 4 minutes
    assert out.split()[0] == "False"


_PIECES = st.lists(st.sampled_from(["build", ": ", " =", " 1", "1", " with ", " for ", "x", "\n", " ", "info",
                                    " build info ", "build=12 commit=\"abcdef0\"", "commit=", '"', "abcdef0"]),
                   max_size=14).map("".join)


@settings(max_examples=400, deadline=None)
@given(_PIECES)
def test_the_linear_readers_find_what_the_patterns_they_replace_found(text):
    old_buildish = re.compile(r"\bbuild(?::| =| \d)[^\n]* with [^\n]* for ")
    old_json = re.compile(r"\bbuild info\b.*?\bbuild=(?P<n>\d+) commit=\"(?P<c>[0-9a-f]{7,40}|unknown)\"")
    assert _llama_logs._buildish(text) == bool(old_buildish.search(text))
    new, old = _llama_logs._JsonBuild().search(text), old_json.search(text)
    assert (new and new.group("n", "c")) == (old and old.group("n", "c"))


def test_an_error_naming_a_hostile_file_name_is_escaped_on_standard_error(audit_cli, tmp_path):
    hostile = tmp_path / "requirements-\x1b[2J.txt"
    hostile.write_bytes(b"vllm==\xff\n")
    code, _, err = audit_cli(str(hostile))
    assert code == 2 and "\x1b" not in err and "requirements-\\x1b[2J.txt: not UTF-8" in err
