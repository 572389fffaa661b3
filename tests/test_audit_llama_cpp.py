"""`gotchas audit` for llama.cpp deployments: llama-server command lines (by llama.cpp's own parsing rules, each
release's flag declarations), LLAMA_ARG_* variables, images and manifests, llama-cpp-python pins, and llama.cpp
builds (an image tag, a logged build line) mapped to the tracked release their commit or build number stands for."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from verifier import audit
from verifier.deployment import (
    BuildsError,
    DeploymentError,
    Grammar,
    Installed,
    for_release,
    from_docker_run,
    from_file,
    from_specs,
    kb_data,
    load_builds,
    parse_log_text,
    parse_serve,
    read_path,
    release_for,
)

from .conftest import REPO, make_kb, run_cli

PACKAGES = {"vllm": "vllm", "sglang": "sglang", "llama-cpp": "llama-cpp-python"}
NEWEST = {"llama-cpp": "0.3.17"}

# Flag declarations modelled on common/arg.cpp of the releases named: in 0.3.16 `-fa` is a switch and
# `--lora-scaled` takes two words, `--no-context-shift` is a switch of its own; in 0.3.17 `-fa` takes on|off|auto,
# `--lora-scaled` one word, and `--context-shift`/`--no-context-shift` are a negatable pair.
COMMON = [
    {"spellings": ["-m", "--model"], "values": 1, "env": "LLAMA_ARG_MODEL"},
    {"spellings": ["-c", "--ctx-size"], "values": 1, "env": "LLAMA_ARG_CTX_SIZE"},
    {"spellings": ["-np", "--parallel"], "values": 1, "env": "LLAMA_ARG_N_PARALLEL"},
    {"spellings": ["-C", "--cpu-mask"], "values": 1},
    {"spellings": ["--metrics"], "values": 0, "env": "LLAMA_ARG_ENDPOINT_METRICS"},
]
DECLARED = {
    "0.3.16": COMMON + [
        {"spellings": ["-fa", "--flash-attn"], "values": 0, "env": "LLAMA_ARG_FLASH_ATTN"},
        {"spellings": ["--lora-scaled"], "values": 2},
        {"spellings": ["--no-context-shift"], "values": 0, "env": "LLAMA_ARG_NO_CONTEXT_SHIFT"},
    ],
    "0.3.17": COMMON + [
        {"spellings": ["-fa", "--flash-attn"], "values": 1, "env": "LLAMA_ARG_FLASH_ATTN"},
        {"spellings": ["--lora-scaled"], "values": 1},
        {"spellings": ["--context-shift"], "negatives": ["--no-context-shift"], "values": 0,
         "env": "LLAMA_ARG_CONTEXT_SHIFT"},
    ],
}
GRAMMAR = {release: Grammar.of(release, records) for release, records in DECLARED.items()}

# Four tracked releases, their vendored commits (the ledger's) and the build numbers recorded for two of them.
RELEASES = ["0.3.0", "0.3.8", "0.3.16", "0.3.17"]
COMMITS = {"0.3.0": "ea9c32be71b91b42ecc538bd902e93cbb5fb36cb", "0.3.8": "7841fc723e059d1fd9640e5c0ef19050fcc7c698",
           "0.3.16": "4227c9be4268ac844921b90f31595f81236bd317",
           "0.3.17": "49bfddeca18e62fa3d39114a23e9fcbdf8a22388"}
VENDORED = {"commits": COMMITS, "builds": {"0.3.0": {"build": 3826}, "0.3.8": {"build": 4875}}, "grammars": DECLARED}


def settings_at(line: str, release: str):
    return for_release(parse_serve(line), GRAMMAR.get(release), release)


# --- command lines ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("program", ["llama-server", "./llama-server", "/app/llama-server", "build/bin/llama-server",
                                     "llama-server.exe", r"C:\llama\llama-server.exe", "exec nohup llama-server"])
def test_llama_server_is_told_by_its_executable_wherever_it_lives(program):
    settings = parse_serve(f"{program} -m model.gguf -c 8192 --parallel 4")
    assert settings.engine == "llama-cpp"
    assert settings.flags == {"m": "model.gguf", "c": "8192", "parallel": "4"}


def test_short_and_long_spellings_are_one_flag_by_the_release_declarations():
    short = settings_at("llama-server -m m.gguf -c 8192 -np 4", "0.3.16")
    long = settings_at("llama-server --model m.gguf --ctx-size 8192 --parallel 4", "0.3.16")
    underscored = settings_at("llama-server --model m.gguf --ctx_size 8192 --parallel 4", "0.3.16")
    assert short.flags == long.flags == underscored.flags == {"model": "m.gguf", "ctx_size": "8192", "parallel": "4"}
    assert short.written["parallel"] == "-np"  # notes name the flag as the line wrote it


def test_a_short_flag_keeps_its_case():
    settings = settings_at("llama-server -C 0xff -c 512", "0.3.16")
    assert settings.flags == {"cpu_mask": "0xff", "ctx_size": "512"}
    generic = parse_serve("llama-server -C 0xff -c 512")  # no declarations: the spellings themselves
    assert generic.flags == {"C": "0xff", "c": "512"}


def test_which_flags_take_a_value_is_the_release_s_own_declaration():
    line = "llama-server -fa -m m.gguf"
    # 0.3.16: -fa is a switch, and -m takes the model.
    assert settings_at(line, "0.3.16").flags == {"flash_attn": None, "model": "m.gguf"}
    # 0.3.17: -fa takes the next word, `-m`, as llama.cpp does; m.gguf is then a word llama-server refuses.
    newer = settings_at(line, "0.3.17")
    assert newer.flags == {"flash_attn": "-m"}
    assert any("m.gguf: not an argument of llama-server 0.3.17" in n for n in newer.notes)
    assert settings_at("llama-server -fa on -m m.gguf", "0.3.17").flags == {"flash_attn": "on", "model": "m.gguf"}
    assert settings_at("llama-server --lora-scaled a.gguf 0.5 -c 64", "0.3.16").flags == {
        "lora_scaled": "a.gguf 0.5", "ctx_size": "64"}
    assert settings_at("llama-server --lora-scaled a.gguf:0.5 -c 64", "0.3.17").flags == {
        "lora_scaled": "a.gguf:0.5", "ctx_size": "64"}


def test_without_declarations_a_word_after_a_flag_is_its_value_and_a_note_says_so():
    settings = for_release(parse_serve("llama-server -fa -m m.gguf --metrics --port 8080"), None, "0.3.16")
    assert settings.flags == {"fa": None, "m": "m.gguf", "metrics": None, "port": "8080"}
    assert any("no release surface of llama.cpp 0.3.16 is recorded" in n and "generic rule" in n
               for n in settings.notes)


def test_negatable_pairs_and_their_older_switch_give_the_positive_flag_false():
    older = settings_at("llama-server --no-context-shift", "0.3.16")
    assert older.flags == {"no_context_shift": None, "context_shift": False} and older.implied == {"context_shift"}
    pair = settings_at("llama-server --no-context-shift", "0.3.17")
    assert pair.flags == {"context_shift": False} and not pair.implied
    assert settings_at("llama-server --context-shift", "0.3.17").flags == {"context_shift": True}
    # The last of a repeated argument counts, as in llama.cpp.
    assert settings_at("llama-server --no-context-shift --context-shift", "0.3.17").flags == {"context_shift": True}


def test_flag_equals_value_is_read_with_the_note_that_llama_server_refuses_it():
    settings = settings_at("llama-server --ctx-size=8192", "0.3.17")
    assert settings.flags == {"ctx_size": "8192"}
    assert any("`--ctx-size=8192`" in n and "refuses to start" in n and "write `--ctx-size 8192`" in n
               for n in settings.notes)


def test_what_llama_server_would_refuse_is_a_note():
    stray = settings_at("llama-server model.gguf -c 64", "0.3.17")
    assert stray.flags == {"ctx_size": "64"}
    assert any("model.gguf: not an argument of llama-server 0.3.17" in n for n in stray.notes)
    cut = settings_at("llama-server -c", "0.3.17")
    assert any("-c expects 1 value and the line ends" in n for n in cut.notes)


def test_llama_cpp_python_s_own_server_is_not_llama_server():
    with pytest.raises(DeploymentError, match="llama-cpp-python's own server"):
        parse_serve("python -m llama_cpp.server --model m.gguf --n_ctx 8192")


# --- LLAMA_ARG_* ------------------------------------------------------------------------------------------------

def test_a_variable_sets_its_flag_unless_the_command_line_gives_it():
    settings = settings_at("LLAMA_ARG_CTX_SIZE=4096 LLAMA_ARG_N_PARALLEL=2 llama-server -np 8", "0.3.16")
    assert settings.flags == {"parallel": "8", "ctx_size": "4096"}  # the command line wins for --parallel
    assert settings.env == {"LLAMA_ARG_CTX_SIZE": "4096", "LLAMA_ARG_N_PARALLEL": "2"}
    assert any("LLAMA_ARG_CTX_SIZE=4096 as --ctx-size" in n for n in settings.notes)


def test_a_switch_s_variable_turns_it_on_by_the_words_of_its_release():
    # `on` is no truthy word until 0.3.16 ("1" or "true"), and is one from 0.3.17 (is_truthy).
    assert "metrics" not in settings_at("LLAMA_ARG_ENDPOINT_METRICS=on llama-server", "0.3.16").flags
    assert settings_at("LLAMA_ARG_ENDPOINT_METRICS=true llama-server", "0.3.16").flags == {"metrics": None}
    assert settings_at("LLAMA_ARG_ENDPOINT_METRICS=on llama-server", "0.3.17").flags == {"metrics": None}
    assert "metrics" not in settings_at("LLAMA_ARG_ENDPOINT_METRICS=0 llama-server", "0.3.17").flags


def test_a_pair_s_variable_reads_a_boolean_and_its_no_variable_turns_it_off():
    assert settings_at("LLAMA_ARG_CONTEXT_SHIFT=off llama-server", "0.3.17").flags == {"context_shift": False}
    assert settings_at("LLAMA_ARG_NO_CONTEXT_SHIFT=1 llama-server", "0.3.17").flags == {"context_shift": False}
    refused = settings_at("LLAMA_ARG_CONTEXT_SHIFT=maybe llama-server", "0.3.17")
    assert "context_shift" not in refused.flags and any("not a boolean" in n for n in refused.notes)


# --- containers --------------------------------------------------------------------------------------------------

def test_docker_run_of_a_server_image_names_the_build_and_takes_the_arguments(tmp_path):
    notes = []
    found = from_docker_run("docker run --gpus all -p 8080:8080 -e LLAMA_ARG_N_PARALLEL=2 "
                            "ghcr.io/ggml-org/llama.cpp:server-cuda-b4875 -m /models/m.gguf -c 8192",
                            "--serve", notes, NEWEST)
    (item,) = found.installed
    assert (item.engine, item.version) == ("llama-cpp", "b4875")
    assert item.settings.flags == {"m": "/models/m.gguf", "c": "8192"}
    # the image's own ENV is part of the container's environment, with the container's on top
    assert item.settings.env == {"LLAMA_ARG_HOST": "0.0.0.0", "LLAMA_ARG_N_PARALLEL": "2"}
    assert any("LLAMA_ARG_HOST=0.0.0.0" in n for n in notes)


@pytest.mark.parametrize("image,version,flags,said", [
    ("ghcr.io/ggml-org/llama.cpp:server", "0.3.17", {"m": "m.gguf"}, "names no build"),
    ("ghcr.io/ggerganov/llama.cpp:server-vulkan-b3900", "b3900", {"m": "m.gguf"}, None),
    ("ghcr.io/ggml-org/llama.cpp:full-cuda-b4000 --server", "b4000", {"m": "m.gguf"}, None),
    ("ghcr.io/ggml-org/llama.cpp:light-b4000", None, None, "runs llama-cli"),
    ("ghcr.io/ggml-org/llama.cpp:nightly", None, None, "none of ggml-org's"),
])
def test_a_llama_cpp_image_tag_names_a_kind_and_a_build(image, version, flags, said):
    notes = []
    found = from_docker_run(f"docker run {image} -m m.gguf", "--serve", notes, NEWEST)
    assert [i.version for i in found.installed] == ([version] if version else [])
    if flags is not None:
        assert found.installed[0].settings.flags == flags
    assert (said is None) or any(said in n for n in notes), notes


def test_compose_kubernetes_and_dockerfile_declare_build_and_settings(tmp_path):
    compose = tmp_path / "docker-compose.yml"
    compose.write_text(textwrap.dedent("""\
        services:
          llm:
            image: ghcr.io/ggml-org/llama.cpp:server-cuda-b4875
            command: ["-m", "/models/m.gguf", "-c", "8192", "--parallel", "4"]
            environment:
              LLAMA_ARG_N_GPU_LAYERS: "99"
        """))
    manifest = tmp_path / "deploy.yaml"
    manifest.write_text(textwrap.dedent("""\
        apiVersion: apps/v1
        kind: Deployment
        spec:
          template:
            spec:
              containers:
                - name: llama
                  image: ghcr.io/ggml-org/llama.cpp:server-b5904
                  args: ["-m", "/models/m.gguf", "-np", "2"]
                  env:
                    - {name: LLAMA_ARG_CTX_SIZE, value: "4096"}
        """))
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM ghcr.io/ggml-org/llama.cpp:server-b4875\nENV LLAMA_ARG_CTX_SIZE=16384\n"
                          'CMD ["-m", "/models/m.gguf", "--no-context-shift"]\n')
    replaced = tmp_path / "other.Dockerfile"
    replaced.write_text("FROM ghcr.io/ggml-org/llama.cpp:full-b4875\n"
                        'ENTRYPOINT ["/app/llama-server", "-m", "/models/m.gguf", "-c", "2048"]\n')
    seen = {}
    for path in (compose, manifest, dockerfile, replaced):
        (item,) = read_path(path, PACKAGES, [], NEWEST).installed
        seen[path.name] = (item.version, item.settings.flags, item.settings.env)
    assert seen["docker-compose.yml"] == ("b4875", {"m": "/models/m.gguf", "c": "8192", "parallel": "4"},
                                          {"LLAMA_ARG_HOST": "0.0.0.0", "LLAMA_ARG_N_GPU_LAYERS": "99"})
    assert seen["deploy.yaml"] == ("b5904", {"m": "/models/m.gguf", "np": "2"},
                                   {"LLAMA_ARG_HOST": "0.0.0.0", "LLAMA_ARG_CTX_SIZE": "4096"})
    assert seen["Dockerfile"] == ("b4875", {"m": "/models/m.gguf", "no_context_shift": None, "context_shift": False},
                                  {"LLAMA_ARG_HOST": "0.0.0.0", "LLAMA_ARG_CTX_SIZE": "16384"})
    assert seen["other.Dockerfile"][:2] == ("b4875", {"m": "/models/m.gguf", "c": "2048"})


def test_a_script_and_a_folder_are_searched_for_llama_server_lines(tmp_path):
    (tmp_path / "serve.sh").write_text('#!/bin/sh\nMODEL=/models/m.gguf\n'
                                       'exec ./build/bin/llama-server -m "$MODEL" --ctx-size 8192 -np 4 \\\n'
                                       '    --port 8080 2>&1 | tee log\n')
    (tmp_path / "requirements.txt").write_text("llama_cpp_python==0.3.16\n")
    found = read_path(tmp_path, PACKAGES, [], NEWEST)
    assert [(i.engine, i.version) for i in found.installed] == [("llama-cpp", "0.3.16")]
    (settings,) = found.settings
    assert settings.flags == {"m": "/models/m.gguf", "ctx_size": "8192", "np": "4", "port": "8080"}


# --- versions ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", ["llama-cpp-python==0.3.16", "llama_cpp_python==0.3.16",
                                  "Llama.Cpp.Python[server] == 0.3.16 ; python_version >= '3.9'"])
def test_a_llama_cpp_python_pin_is_the_engine_s_version(tmp_path, line):
    path = tmp_path / "requirements.txt"
    path.write_text(f"fastapi==0.110\n{line}\n")
    (item,) = from_file(path, PACKAGES, [])
    assert (item.engine, item.version, item.line) == ("llama-cpp", "0.3.16", 2)


def test_a_uv_lock_names_llama_cpp_python(tmp_path):
    path = tmp_path / "uv.lock"
    path.write_text('version = 1\n\n[[package]]\nname = "fastapi"\nversion = "0.110.0"\n\n'
                    '[[package]]\nname = "llama-cpp-python"\nversion = "0.3.9"\n'
                    'source = { registry = "https://example.org/simple" }\n')
    (item,) = from_file(path, PACKAGES, [])
    assert (item.engine, item.version, item.line) == ("llama-cpp", "0.3.9", 8)


def test_an_environment_s_llama_cpp_python_distribution_is_the_engine(tmp_path, monkeypatch):
    from verifier.deployment import from_environment, from_paste

    info = tmp_path / "site" / "llama_cpp_python-0.3.16.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: llama_cpp_python\nVersion: 0.3.16\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert ("llama-cpp", "0.3.16") in [(i.engine, i.version) for i in from_environment(PACKAGES)]
    pasted = from_paste("Package          Version\n---------------- -------\nllama_cpp_python 0.3.9\n", "pip", PACKAGES)
    assert [(i.engine, i.version, i.line) for i in pasted] == [("llama-cpp", "0.3.9", 3)]


def test_engine_option_takes_a_release_or_a_build():
    assert [(i.engine, i.version, i.commit) for i in from_specs(
        ["llama-cpp==0.3.16", "llama-cpp-python==0.3.9", "llama-cpp==b4763", "llama_cpp==b4763-F777A73E"],
        PACKAGES)] == [("llama-cpp", "0.3.16", None), ("llama-cpp", "0.3.9", None), ("llama-cpp", "b4763", None),
                       ("llama-cpp", "b4763", "f777a73e")]
    with pytest.raises(DeploymentError, match="llama-cpp==b4763"):
        from_specs(["llama-cpp==latest"], PACKAGES)


# --- builds -------------------------------------------------------------------------------------------------------

def test_a_build_whose_commit_a_release_vendors_is_that_release_exactly():
    release, note = release_for(VENDORED, RELEASES, "b5000", "4227c9be")
    assert release == "0.3.16" and "is the commit llama-cpp-python 0.3.16 vendors" in note and "exactly" in note
    assert "not the one recorded" not in note  # 0.3.16 has no recorded number to contradict
    # a shallow clone prints build 1: the commit still names the code
    assert release_for(VENDORED, RELEASES, "b1", "4227c9b")[0] == "0.3.16"
    release, note = release_for(VENDORED, RELEASES, "b4000", "7841fc72")
    assert release == "0.3.8" and "the build number printed, 4000, is not the one recorded for it (4875)" in note


def test_a_recorded_build_number_is_its_release():
    release, note = release_for(VENDORED, RELEASES, "b4875", None)
    assert release == "0.3.8" and "is the build of the commit llama-cpp-python 0.3.8 vendors" in note


def test_another_build_is_the_nearest_recorded_release_before_it_and_says_which_may_be_nearer():
    release, note = release_for(VENDORED, RELEASES, "b4900", "abcdef12")
    assert release == "0.3.8"
    assert "its commit is no tracked release's" in note and "the nearest by recorded build numbers" in note
    assert "0.3.16-0.3.17 have no recorded build number, so one of them may be nearer" in note
    # between two recorded releases with none unrecorded between them: no caveat
    assert release_for(VENDORED, RELEASES, "b3900", None) == (
        "0.3.0", "build 3900: not the build of a tracked release: audited as 0.3.0 (build 3826), the newest tracked "
                 "release at or before build 3900, the nearest by recorded build numbers")


def test_a_build_newer_than_every_tracked_release_is_the_newest():
    data = {**VENDORED, "builds": {**VENDORED["builds"], "0.3.16": {"build": 6150}, "0.3.17": {"build": 8450}}}
    release, note = release_for(data, RELEASES, "b9000", None)
    assert release == "0.3.17" and "newer than every tracked release (the newest, 0.3.17, is build 8450)" in note


def test_a_build_that_cannot_be_placed_is_not_audited_with_the_reason():
    assert release_for(VENDORED, RELEASES, "b3000", None) == (
        None, "build 3000: older than 0.3.0 (build 3826), the oldest tracked release with a recorded build; "
              "not audited")
    release, note = release_for(VENDORED, RELEASES, "b0", None)
    assert release is None and "build without git (0)" in note
    release, note = release_for(VENDORED, RELEASES, "unknown", None)
    assert release is None and "no build number and no commit" in note
    release, note = release_for(None, RELEASES, "b4875", None)
    assert release is None and "no table of llama.cpp's builds" in note


@pytest.mark.parametrize("text,version,commit", [
    ("0.00.000.584 I build: 3848 (c919d5db) with cc (Ubuntu 11.4.0) 11.4.0 for x86_64-linux-gnu", "b3848", "c919d5db"),
    ("common_params_print_info: build 11312 (0c1e57098) with GNU 13.3.0 for x86_64", "b11312", "0c1e57098"),
    ("main: build = 4291 (ce8784bd)", "b4291", "ce8784bd"),
    ("version: 5763 (8846aace)\nbuilt with cc (Ubuntu 13.3.0) for x86_64-linux-gnu", "b5763", "8846aace"),
    ("version: 0.3.0-dev (build 10621, commit c1d0e7a00)", "b10621", "c1d0e7a00"),
    ('{"choices": [], "system_fingerprint": "b8942-f53577432", "object": "chat.completion"}', "b8942", "f53577432"),
    ('INFO [main] build info | tid="1" timestamp=1 build=3579 commit="fc4ca27b"', "b3579", "fc4ca27b"),
    ("build: 0 (unknown) with cc 13 for x86_64-linux-gnu", "b0", None),
])
def test_every_form_of_llama_cpp_s_build_line_is_read(text, version, commit):
    settings = parse_log_text("llama_model_loader: loaded meta data\n" + text + "\n", "server.log")
    assert (settings.engine, settings.version, settings.commit, settings.origin) == (
        "llama-cpp", version, commit, "server.log:2")
    assert not settings.flags


def test_a_log_with_an_unreadable_build_line_or_none_says_so():
    cut = parse_log_text("0.00.000.584 I build: 4763 (f77?a73e) with clang for arm64\n", "a.log")
    assert cut.version is None and any("build line that cannot be read" in n for n in cut.notes)
    quiet = parse_log_text("llama_model_loader: loaded meta data with 25 key-value pairs\n"
                           "llama_context: n_ctx         = 8192\nllama_context: n_seq_max     = 4\n", "b.log")
    assert quiet.engine == "llama-cpp" and quiet.version is None
    assert any("no build line" in n and "-lv 4" in n for n in quiet.notes)
    assert any("n_ctx = 8192, n_seq_max = 4" in n and "no condition is decided by it" in n for n in quiet.notes)


def test_the_last_start_up_of_a_log_is_read():
    settings = parse_log_text("build: 4291 (ce8784bd) with cc for x86_64\nbuild: 4875 (7841fc72) with cc for x86_64\n",
                              "s.log")
    assert (settings.version, settings.origin) == ("b4875", "s.log:2")


# --- the builds file ----------------------------------------------------------------------------------------------

def builds_file(root: Path, body: str) -> Path:
    (root / "gotchas").mkdir(parents=True, exist_ok=True)
    path = root / "gotchas" / "llama-cpp-builds.yaml"
    path.write_text("releases:\n" + textwrap.indent(textwrap.dedent(body), "  "))
    return path


GOOD = """\
    "0.3.0": {build: 3826, commit: ea9c32be, source: "https://example.org/1", evidence: "version: 3826 (ea9c32be)"}
    "0.3.8": {build: 4875, commit: 7841fc72, source: "https://example.org/2", evidence: "build: 4875 (7841fc72)"}
"""


def test_the_builds_file_is_read_and_checked_against_the_ledger(tmp_path):
    builds_file(tmp_path, GOOD)
    found = load_builds(tmp_path, COMMITS)
    assert {r: (b["build"], b["commit"], b["line"]) for r, b in found.items()} == {
        "0.3.0": (3826, "ea9c32be", 2), "0.3.8": (4875, "7841fc72", 3)}
    assert load_builds(tmp_path / "none", COMMITS) == {}  # no file: no recorded numbers


@pytest.mark.parametrize("body,message", [
    ('"0.3.1": {build: 3848, commit: c919d5db, source: "https://e.org", evidence: "x"}\n',
     ":2: 0.3.1 is not a tracked release"),
    ('"0.3.0": {build: 3826, commit: deadbeef, source: "https://e.org", evidence: "x"}\n',
     ":2: 0.3.0: commit deadbeef is not the commit 0.3.0 vendors (ea9c32be71b9"),
    ('"0.3.0": {build: 1, commit: ea9c32be, source: "https://e.org", evidence: "x"}\n',
     ":2: 0.3.0: build 1 is not a master build number"),
    ('"0.3.0": {build: 3826, commit: ea9c32be, source: "http://e.org", evidence: "x"}\n',
     ":2: 0.3.0: source 'http://e.org' is not an https URL"),
    ('"0.3.0": {build: 3826, commit: ea9c32be, source: "https://e.org"}\n', ":2: 0.3.0: missing ['evidence']"),
    ('"0.3.0": {build: 3826, commit: ea9c32be, source: "https://e.org", evidence: "x"}\n'
     '"0.3.8": {build: 3000, commit: 7841fc72, source: "https://e.org", evidence: "x"}\n',
     ":3: 0.3.8 has build 3000, 0.3.0 has 3826: a later release vendors a later commit"),
])
def test_a_wrong_builds_file_is_refused_with_its_line(tmp_path, body, message):
    builds_file(tmp_path, body)
    with pytest.raises(BuildsError, match=re.escape("gotchas/llama-cpp-builds.yaml" + message)):
        load_builds(tmp_path, COMMITS)


def test_the_recorded_builds_agree_with_the_committed_ledger():
    """Every recorded number names the commit its release vendors, and the numbers grow with the releases."""
    from verifier.ledger import Ledger, version_key

    ledger = Ledger(REPO / "ledger").load("llama-cpp")
    releases = sorted(ledger.releases, key=version_key)
    data = kb_data(REPO, releases)
    assert data["builds"] and set(data["builds"]) <= set(releases)
    for release, found in data["builds"].items():
        assert data["commits"][release].startswith(found["commit"])


# --- end to end: a KB with llama-cpp entries whose conditions are on -c and --parallel ---------------------------

ENTRY = """\
---
id: config-llama-fixture-{name}
title: A llama-server fixture gotcha about {name}
scheme: config
severity: {severity}
concepts: [kv-cache]
engines: [llama-cpp]
references:
  - https://github.com/ggml-org/llama.cpp/issues/1
history:
  - {{date: 2026-12-03, note: "Written."}}
when:
{when}
checks:
  - id: c
    claim: The field exists.
    path: common/common.h
    contains: int32_t n_ctx = 4096;
---

## Symptom

Something.

## Root cause

Something else.

## Workaround

Change {name}.
"""
CONDITIONS = {
    # bites when the slots split a context that is set: --parallel is not 1 and --ctx-size is not 0
    "slots": ("outage", "  - flag: [-np, --parallel]\n    is-not: [1]\n  - flag: [-c, --ctx-size]\n    is-not: [0]"),
    # bites only with the model's own context size
    "train-ctx": ("performance", "  - flag: [-c, --ctx-size]\n    is: [0]"),
}


def fixture_kb(tmp_path: Path) -> Path:
    root = make_kb(tmp_path / "kb")
    for name, (severity, when) in CONDITIONS.items():
        (root / "gotchas" / f"config-llama-fixture-{name}.md").write_text(
            ENTRY.format(name=name, severity=severity, when=when))
    releases = {}
    for release, commit in COMMITS.items():
        checks = {"c": {"check": "0000000000000000", "form": 0, "lines": [1, 1], "path": "common/common.h",
                        "sha256": "0000000000000000", "verdict": "holds"}}
        releases[release] = {"date": "2026-01-01", "identity": f"sha256:{release}", "source": "pypi",
                             "verified_at": "2026-12-03T00:00:00Z", "verifier": "0.5.0", "commit": commit,
                             "entries": {f"config-llama-fixture-{n}": {"status": "holds", "checks": checks}
                                         for n in CONDITIONS}}
    (root / "ledger").mkdir()
    (root / "ledger" / "llama-cpp.json").write_text(json.dumps({"engine": "llama-cpp", "format": 3,
                                                                "releases": releases}))
    builds_file(root, GOOD)
    return root


def test_the_readme_command_lists_what_applies_with_the_conditions_decided(tmp_path, capsys):
    root = fixture_kb(tmp_path)
    code, out, err = run_cli(capsys, "audit", "--kb", str(root), "--format", "json", "--serve",
                             "llama-server -m model.gguf -c 8192 --parallel 4", "--engine", "llama-cpp==0.3.16")
    assert code == 1, err
    data = json.loads(out)
    (target,) = data["targets"]
    assert (target["engine"], target["release"]) == ("llama-cpp", "0.3.16")
    assert [(g["id"], g["status"]) for g in target["gotchas"]] == [("config-llama-fixture-slots", "bites")]
    assert [(d["id"], d["reason"]) for d in data["dropped"]] == [
        ("config-llama-fixture-train-ctx", "-c is 8192 (--serve)")]
    # one slot: the slots gotcha is spared too
    code, out, _ = run_cli(capsys, "audit", "--kb", str(root), "--format", "json", "--serve",
                           "llama-server -m model.gguf --ctx-size 0 -np 1", "--engine", "llama-cpp==0.3.16")
    data = json.loads(out)
    assert [(g["id"], g["status"]) for g in data["targets"][0]["gotchas"]] == [
        ("config-llama-fixture-train-ctx", "bites")]


def test_a_start_up_log_s_build_decides_the_release_audited(tmp_path, capsys):
    root = fixture_kb(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("main: loading model\nbuild: 4900 (abcdef12) with cc for x86_64-linux-gnu\n")
    code, out, err = run_cli(capsys, "audit", "--kb", str(root), "--serve-log", str(log))
    assert code == 1, err
    assert out.startswith("llama.cpp b4900 (audited as 0.3.8)")
    assert "0.3.16-0.3.17 have no recorded build number, so one of them may be nearer" in out
    # the log logs no flags: it decides no condition, which stays "bites only if", as with no settings
    assert "bites only if (2):" in out and "only if -np is not 1" in out and "does not set it" not in out
    log.write_text("build: 6000 (4227c9be) with cc for x86_64-linux-gnu\n")
    _, out, _ = run_cli(capsys, "audit", "--kb", str(root), "--serve-log", str(log))
    assert out.startswith("llama.cpp b6000 (audited as 0.3.16)") and "exactly" in out


def test_a_folder_s_log_and_compose_file_are_audited_together(tmp_path, capsys):
    root = fixture_kb(tmp_path)
    deploy = tmp_path / "deploy"
    deploy.mkdir()
    (deploy / "docker-compose.yml").write_text(textwrap.dedent("""\
        services:
          llm:
            image: ghcr.io/ggml-org/llama.cpp:server-b4875
            command: ["-m", "/models/m.gguf", "-c", "8192", "-np", "4"]
        """))
    code, out, err = run_cli(capsys, "audit", "--kb", str(root), "--format", "json", str(deploy))
    data = json.loads(out)
    (target,) = data["targets"]
    assert (target["version"], target["release"]) == ("b4875", "0.3.8")
    assert [g["id"] for g in target["gotchas"]] == ["config-llama-fixture-slots"]


def test_an_installation_without_a_checkout_maps_builds_too(tmp_path, capsys, monkeypatch):
    """The compiled KB a wheel ships carries the vendored commits, build numbers and flag declarations: audit
    without --kb places a build as the checkout's audit does."""
    from verifier import compiled

    root = fixture_kb(tmp_path)
    packed = tmp_path / "kb.json"
    packed.write_text(json.dumps(compiled.compile_kb(root)))
    monkeypatch.setattr(compiled, "load_packaged", lambda: compiled.read(packed))
    monkeypatch.chdir(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("build: 6000 (4227c9be) with cc for x86_64-linux-gnu\n")
    code, out, err = run_cli(capsys, "audit", "--serve-log", str(log))
    assert out.startswith("llama.cpp b6000 (audited as 0.3.16)") and "exactly" in out, out + err


def test_a_folder_s_llama_server_log_gives_the_build(tmp_path, capsys):
    root = fixture_kb(tmp_path)
    deploy = tmp_path / "logs"
    deploy.mkdir()
    (deploy / "server.log").write_text("0.00.000.584 I build: 4875 (7841fc72) with cc 11.4.0 for x86_64-linux-gnu\n"
                                       "0.00.004.467 I llama_model_loader: loaded meta data\n")
    data = audit_json(capsys, root, str(deploy))
    assert [(t["version"], t["release"]) for t in data["targets"]] == [("b4875", "0.3.8")]


def test_a_malformed_builds_file_stops_the_audit_with_its_line(tmp_path, capsys):
    root = fixture_kb(tmp_path)
    builds_file(root, '"0.3.0": {build: two, commit: ea9c32be, source: "https://e.org", evidence: "x"}\n')
    code, _, err = run_cli(capsys, "audit", "--kb", str(root), "--engine", "llama-cpp==b4875")
    assert code == 3 and "gotchas/llama-cpp-builds.yaml:2: 0.3.0: build 'two'" in err


def test_audit_of_a_llama_cpp_version_with_a_plain_kb_dict():
    """The compiled KB alone (no vendored data): versions audit, builds are not mapped, and say why."""
    kb = {"format": 3, "compiled_by": "test", "severities": [], "surface": {},
          "engines": {"llama-cpp": {"name": "llama.cpp", "package": "llama-cpp-python", "releases": RELEASES}},
          "entries": [], "skipped": []}
    result = audit.audit(kb, [Installed("llama-cpp", "0.3.16", "--engine"), Installed("llama-cpp", "b4875", "x")], {})
    assert [t.release for t in result.targets] == ["0.3.16", None]
    assert any("no table of llama.cpp's builds" in n for n in result.notes)


def with_surface(root: Path) -> Path:
    """The fixture KB with a release surface for 0.3.16 and 0.3.17 (items as the C++ extractor writes them):
    -c/--ctx-size and -np/--parallel take a value, --parallel defaults to 1 (0.3.17: -1, the server's override),
    -fa is a switch in 0.3.16 and takes on|off|auto in 0.3.17; LLAMA_ARG_N_PARALLEL sets --parallel."""
    from verifier.ledger import Ledger
    from verifier.surface.model import ENV, FLAG, Item
    from verifier.surface.store import EngineSurfaces, ReleaseSurface

    def release(version: str, parallel: int, fa: str) -> ReleaseSurface:
        items = [Item(FLAG, "--ctx-size", "4096", 4096, ("-c",), (), "size of the prompt context", "value: N", False,
                      "common/arg.cpp", 10, "common/common.h", 20),
                 Item(FLAG, "--parallel", str(parallel), parallel, ("-np",), (), "number of server slots",
                      "value: N", False, "common/arg.cpp", 30, "common/common.h", 21),
                 Item(FLAG, "--model", None, aliases=("-m",), detail="value: FNAME", path="common/arg.cpp", line=40),
                 Item(FLAG, "--flash-attn", "false", False, ("-fa",), (), "flash attention", fa, False,
                      "common/arg.cpp", 50, "common/common.h", 22),
                 Item(ENV, "LLAMA_ARG_N_PARALLEL", str(parallel), parallel, detail="sets --parallel",
                      path="common/arg.cpp", line=31)]
        return ReleaseSurface(version, f"sha256:{version}", "2026-12-03T00:00:00Z", "0.5.0",
                              {"common/arg.cpp": "0" * 64, "common/common.h": "1" * 64}, items, 1, (2, "x"))

    surfaces = EngineSurfaces("llama-cpp", {"0.3.16": release("0.3.16", 1, ""),
                                            "0.3.17": release("0.3.17", -1, "value: [on|off|auto]")})
    Ledger(root / "ledger").save_surfaces(surfaces)
    return root


def audit_json(capsys, root: Path, *argv) -> dict:
    code, out, err = run_cli(capsys, "audit", "--kb", str(root), "--format", "json", *argv)
    assert code in (0, 1), err
    return json.loads(out)


def test_with_a_release_surface_a_variable_sets_a_flag_and_a_flag_left_out_takes_the_code_s_default(tmp_path, capsys):
    root = with_surface(fixture_kb(tmp_path))
    data = audit_json(capsys, root, "--serve", "LLAMA_ARG_N_PARALLEL=4 llama-server -m m.gguf -c 8192",
                      "--engine", "llama-cpp==0.3.16")
    assert [g["id"] for g in data["targets"][0]["gotchas"]] == ["config-llama-fixture-slots"]
    assert any("read LLAMA_ARG_N_PARALLEL=4 as --parallel" in n for n in data["notes"])
    data = audit_json(capsys, root, "--serve", "llama-server -m m.gguf -c 8192", "--engine", "llama-cpp==0.3.16")
    assert data["targets"][0]["gotchas"] == []
    assert {d["id"]: d["reason"] for d in data["dropped"]}["config-llama-fixture-slots"] == (
        "-np is not set: default 1 in 0.3.16, common/arg.cpp:30")
    assert not any("no release surface" in n for n in data["notes"])


def test_with_a_release_surface_each_release_reads_the_line_by_its_own_declarations(tmp_path, capsys):
    root = with_surface(fixture_kb(tmp_path))
    line = "llama-server -fa -c 8192 -np 4 -m m.gguf"
    old = audit_json(capsys, root, "--serve", line, "--engine", "llama-cpp==0.3.16")
    assert [g["id"] for g in old["targets"][0]["gotchas"]] == ["config-llama-fixture-slots"]
    new = audit_json(capsys, root, "--serve", line, "--engine", "llama-cpp==0.3.17")
    # 0.3.17's -fa takes `-c` as its value; 8192 is a stray word, and --ctx-size is left at its default (4096)
    assert [g["id"] for g in new["targets"][0]["gotchas"]] == ["config-llama-fixture-slots"]
    assert any("-fa takes a value in llama-server 0.3.17, and here takes -c, a flag of its own" in n
               for n in new["notes"])
    assert any("8192: not an argument of llama-server 0.3.17" in n for n in new["notes"])


def test_a_log_gives_the_build_and_a_serve_line_the_flags(tmp_path, capsys):
    root = fixture_kb(tmp_path)
    log = tmp_path / "server.log"
    log.write_text("build: 4875 (7841fc72) with cc for x86_64-linux-gnu\n")
    data = audit_json(capsys, root, "--serve-log", str(log), "--serve", "llama-server -m m.gguf -c 8192 -np 1")
    (target,) = data["targets"]
    assert (target["version"], target["release"]) == ("b4875", "0.3.8")
    assert target["gotchas"] == [] and {d["id"] for d in data["dropped"]} == {
        "config-llama-fixture-slots", "config-llama-fixture-train-ctx"}
