"""What `gotchas audit` reads of an engine's start-up log (`--serve-log`) and of a pasted environment report, against
fixtures built from the format strings of the real releases (tests/data/logs/, one per format, named by engine and
release range)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from verifier import deployment
from verifier.deployment import (
    UNKNOWN,
    DeploymentError,
    _logs,
    env_from_paste,
    from_paste,
    looks_like_log,
    parse_log,
    parse_log_text,
)

DATA = Path(__file__).parent / "data" / "logs"
PACKAGES = {"vllm": "vllm", "sglang": "sglang"}
LOGS = sorted(p.name for p in DATA.glob("*.log"))
PASTES = sorted(p.name for p in DATA.glob("*.txt"))


# --- start-up logs, one per format --------------------------------------------------------------------------------

# file: (engine, version, line of the arguments (or of the version), some flags)
EXPECTED = {
    "vllm-0.8.0-0.8.5.log": ("vllm", "0.8.5", 11, {
        "max_num_seqs": 64, "scheduling_policy": "priority", "tensor_parallel_size": 2,
        "model": "Qwen/Qwen2.5-7B-Instruct",
        "enable_prompt_tokens_details": False, "served_model_name": ["qwen"], "config_format": UNKNOWN,
        "dispatch_function": UNKNOWN, "override_generation_config": {"temperature": 0.7}, "host": None}),
    "vllm-0.9.0-0.10.0.log": ("vllm", "0.10.0", 3, {
        "max_num_seqs": 128, "scheduling_policy": "priority", "gpu_memory_utilization": 0.92,
        "enable_prefix_caching": False, "kv_transfer_config": UNKNOWN, "tool_call_parser": "llama3_json"}),
    "vllm-0.10.1-0.14.1.log": ("vllm", "0.10.1.1", 3, {
        "max_num_seqs": 32, "async_scheduling": True, "enable_prompt_tokens_details": True,
        "served_model_name": ["gpt-oss"], "override_generation_config": {"temperature": 1.0, "top_p": 1.0}}),
    "vllm-0.10.1-0.14.1-version-only.log": ("vllm", "0.14.0", 1, {}),
    "vllm-0.15.0-0.34.0-banner.log": ("vllm", "0.15.1", 8, {
        "max_num_seqs": 64, "reasoning_parser": "qwen3", "enable_chunked_prefill": False,
        "limit_mm_per_prompt": {"image": 0}, "compilation_config": UNKNOWN}),
    "vllm-0.15.0-0.34.0-banner-color.log": ("vllm", "0.34.0", 7, {
        "tensor_parallel_size": 8, "enable_expert_parallel": True, "scheduling_policy": "priority", "api_key": "***"}),
    "vllm-0.15.0-0.34.0-no-logo.log": ("vllm", "0.30.0", 2, {
        "max_num_seqs": 48, "enable_log_requests": True, "hf_token": "***"}),
    "sglang-0.4.0-0.5.18.log": ("sglang", None, 1, {
        "enable_metrics": True, "enable_cache_report": False, "tp_size": 2, "schedule_policy": "fcfs",
        "mem_fraction_static": 0.88, "lora_paths": None, "json_model_override_args": "{}",
        "tool_call_parser": "qwen25"}),
    "sglang-0.5.19-0.5.23.log": ("sglang", None, 1, {
        "enable_metrics": False, "enable_cache_report": True, "schedule_policy": "lpm",
        "enable_priority_scheduling": True, "max_running_requests": 256,
        "speculative": {"algorithm": None, "num_steps": None, "eagle_topk": None}}),
}


def test_every_log_fixture_is_expected():
    assert sorted(EXPECTED) == LOGS


@pytest.mark.parametrize("name", LOGS)
def test_a_start_up_log_gives_its_engine_version_and_flags(name):
    engine, version, line, flags = EXPECTED[name]
    path = DATA / name
    settings = parse_log(path)
    assert (settings.engine, settings.version, settings.origin) == (engine, version, f"{path}:{line}")
    assert settings.logged is True
    for key, value in flags.items():
        assert settings.flags[key] is value if value is UNKNOWN else settings.flags[key] == value, key
    assert looks_like_log(path.read_text(encoding="utf-8"))


def test_args_namespace_gives_every_argument_like_server_args():
    settings = parse_log(DATA / "vllm-0.8.0-0.8.5.log")
    assert len(settings.flags) > 100 and settings.notes == []
    assert settings.flags["model_tag"] == "Qwen/Qwen2.5-7B-Instruct" and settings.flags["subparser"] == "serve"
    assert settings.flags["allowed_origins"] == ["*"] and settings.flags["model_loader_extra_config"] == {}
    assert len(parse_log(DATA / "sglang-0.4.0-0.5.18.log").flags) == 68


def test_the_last_start_up_in_the_file_counts():
    # the first start-up (max_num_seqs 256, fcfs) died of OOM; the second is what runs
    text = (DATA / "vllm-0.8.0-0.8.5.log").read_text(encoding="utf-8")
    assert "max_num_seqs=256" in text and "max_num_seqs=64" in text
    settings = parse_log_text(text, "pod.log")
    assert settings.origin == "pod.log:11" and settings.flags["max_num_seqs"] == 64
    # an upgrade in the same file: the later version and its arguments, not the earlier ones
    upgraded = ("INFO 07-24 14:02:15 [api_server.py:1755] vLLM API server version 0.10.0\n"
                "INFO 07-24 14:02:15 [cli_args.py:261] non-default args: {'max_num_seqs': 8}\n"
                "(APIServer pid=9) INFO 08-20 09:14:03 [api_server.py:1805] vLLM API server version 0.10.1\n"
                "(APIServer pid=9) INFO 08-20 09:14:03 [utils.py:326] non-default args: {'max_num_seqs': 16}\n")
    settings = parse_log_text(upgraded, "x.log")
    assert (settings.version, settings.origin, settings.flags) == ("0.10.1", "x.log:4", {"max_num_seqs": 16})
    # an SGLang start-up after a vLLM one: SGLang's, and no vLLM version carried over
    sglang = (DATA / "sglang-0.5.19-0.5.23.log").read_text(encoding="utf-8")
    settings = parse_log_text(upgraded + sglang, "x.log")
    assert (settings.engine, settings.version, settings.origin) == ("sglang", None, "x.log:5")
    # a restart that logged its version but died before its arguments: that version, no flags
    settings = parse_log_text(upgraded + "INFO 08-21 [api_server.py:1805] vLLM API server version 0.10.1.1\n", "x.log")
    assert (settings.version, settings.flags, settings.origin) == ("0.10.1.1", {}, "x.log:5")


def test_a_version_line_without_arguments_gives_the_version_and_a_note():
    path = DATA / "vllm-0.10.1-0.14.1-version-only.log"
    settings = parse_log(path)
    assert settings.flags == {} and settings.version == "0.14.0"
    assert len(settings.notes) == 1 and f"{path}:1" in settings.notes[0]
    assert "arguments were not found" in settings.notes[0]


def test_a_log_with_neither_names_the_file_and_what_was_looked_for(tmp_path):
    path = tmp_path / "nginx.log"
    path.write_text("GET / 200\nINFO 05-12 10:00:00 [api_server.py:1] Starting vLLM API server on :8000\n")
    with pytest.raises(DeploymentError) as info:
        parse_log(path)
    message = str(info.value)
    assert message.startswith(f"{path}: no start-up arguments or version found")
    assert "non-default args: {...}" in message and "args: Namespace(...)" in message
    assert "server_args=ServerArgs(...)" in message and "vLLM server version X" in message


@pytest.mark.parametrize("line, why", [
    ("INFO 05-12 10:00:04 [cli_args.py:261] non-default args: {'max_num_seqs': 64, 'model': 'q", "does not end"),
    ("INFO 05-12 10:00:04 [cli_args.py:261] non-default args: {'a': [1, 2}", "cannot read the logged arguments"),
    ("INFO 05-12 10:00:04 [cli_args.py:261] non-default args: {'a': 1)}", "unmatched ')'"),
    ("INFO 05-12 10:00:04 [api_server.py:1044] args: Namespace(port=8000, host='0.0.0.0'", "does not end"),
    ("[2025-05-06 09:12:44] server_args=ServerArgs(model_path='m', tp_size=(2)))", "unmatched ')'"),
])
def test_a_malformed_arguments_line_names_the_file_and_line(tmp_path, line, why):
    path = tmp_path / "cut.log"
    path.write_text(f"INFO 05-12 10:00:04 [api_server.py:1043] vLLM API server version 0.8.5\n{line}\nnext\n")
    with pytest.raises(DeploymentError, match=re.escape(why)) as info:
        parse_log(path)
    assert str(info.value).startswith(f"{path}:2: ")


def test_a_huge_arguments_line_is_refused_clearly(tmp_path):
    path = tmp_path / "huge.log"
    path.write_text("INFO [utils.py:326] non-default args: {'served_model_name': ['" + "x" * (_logs.MAX_LINE + 10)
                    + "']}\n")
    with pytest.raises(DeploymentError, match=r":1: the logged arguments line has \d+ characters, more than the 1 MiB"):
        parse_log(path)
    # a huge line that is no arguments line is passed over, as any other line
    settings = parse_log_text("x" * (_logs.MAX_LINE + 10) + "\n" + "vLLM API server version 0.9.2\n", "n")
    assert settings.version == "0.9.2"


def test_a_long_arguments_line_under_the_limit_is_read_in_linear_time():
    items = ", ".join(f"'key_{i}': [{i}, 'v, ({i}']" for i in range(20000))
    line = "INFO [utils.py:326] non-default args: {" + items + "}"
    assert len(line) < _logs.MAX_LINE
    start = time.monotonic()
    settings = parse_log_text(line, "n")
    assert time.monotonic() - start < 20
    assert len(settings.flags) == 20000 and settings.flags["key_19999"] == [19999, "v, (19999"]
    # a line of markers and brackets that never closes: refused, not a long backtrack
    start = time.monotonic()
    with pytest.raises(DeploymentError):
        parse_log_text("non-default args: {" + "{'a': " * 50000, "n")
    assert time.monotonic() - start < 20
    # nesting deeper than any parser takes: the value is UNKNOWN, the other arguments are read
    deep = "non-default args: {'a': " + "[" * 100000 + "]" * 100000 + ", 'b': 2}"
    assert parse_log_text(deep, "n").flags == {"a": UNKNOWN, "b": 2}


def test_prefixes_colours_and_carriage_returns_do_not_hide_a_line():
    text = ("Loading safetensors checkpoint shards: 100% 4/4\r\x1b[1;36m(APIServer pid=3)\x1b[0;0m "
            "\x1b[32mINFO\x1b[0m \x1b[90m09-30 07:05:12\x1b[0m [utils.py:326] non-default args: "
            "{'max_num_seqs': 4}\r\n"
            "2025-10-01T12:00:00.123456789Z stdout F INFO 10-01 [api_server.py:1] vLLM API server version 0.11.0\n")
    settings = parse_log_text(text, "k8s.log")
    # the version line comes after the arguments here: a new start-up that logged no arguments
    assert settings.version == "0.11.0" and settings.flags == {}
    settings = parse_log_text(text.split("\n")[0], "k8s.log")
    assert settings.flags == {"max_num_seqs": 4} and settings.origin == "k8s.log:1"


def test_namespace_names_that_are_not_identifiers_and_non_literal_values():
    line = ("INFO [api_server.py:1044] args: Namespace(model='m', ssl_cert_reqs=0, middleware=[], "
            "config_format=<ConfigFormat.AUTO: 'auto'>, dispatch_function=<function cmd at 0x7f>, "
            "**{'odd-name': 3, 'other.name': 'x'})")
    settings = parse_log_text(line, "n")
    assert settings.flags["model"] == "m" and settings.flags["middleware"] == []
    assert settings.flags["ssl_cert_reqs"] == 0
    assert settings.flags["config_format"] is UNKNOWN and settings.flags["dispatch_function"] is UNKNOWN
    assert settings.flags["odd_name"] == 3 and settings.flags["other.name"] == "x"


def test_nothing_in_a_log_is_executed(tmp_path):
    marker = tmp_path / "ran"
    line = (f"INFO [utils.py:326] non-default args: {{'model': __import__('pathlib').Path({str(marker)!r}).touch(), "
            "'x': (lambda: 1)()}")
    settings = parse_log_text(line, "n")
    assert settings.flags == {"model": UNKNOWN, "x": UNKNOWN} and not marker.exists()


def test_looks_like_log_is_a_cheap_sniff():
    for name in LOGS:
        assert looks_like_log((DATA / name).read_text(encoding="utf-8")), name
    for name in PASTES:
        assert not looks_like_log((DATA / name).read_text(encoding="utf-8")), name
    assert looks_like_log("[2026-03-02 16:40:05] server_args={'tp_size': 1}")
    assert looks_like_log(" ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.20.0")
    assert not looks_like_log("Starting vLLM API server on http://0.0.0.0:8000\n")


# --- pasted environment reports -----------------------------------------------------------------------------------

# file: [(engine, version, line)]
PASTED = {
    "vllm-collect-env-0.8.0-0.8.5.txt": [("vllm", "0.8.5", 24)],
    "vllm-collect-env-0.9.0-0.34.0.txt": [("vllm", "0.10.0", 33)],
    "sglang-check-env-0.4.0-0.5.23.txt": [("sglang", "0.4.6.post1", 9)],
    "sglang-cli-version-0.5.8-0.5.23.txt": [("sglang", "0.5.21", 1)],
    "pip-list.txt": [("vllm", "0.10.0", 6)],
    "pip-freeze.txt": [("sglang", "0.5.3.post1", 2), ("vllm", "0.10.2", 5)],
}


def test_every_paste_fixture_is_expected():
    assert sorted(PASTED) == PASTES


@pytest.mark.parametrize("name", PASTES)
def test_a_paste_gives_the_engine_versions_it_states(name):
    found = from_paste((DATA / name).read_text(encoding="utf-8"), name, PACKAGES)
    assert found == [deployment.Installed(engine, version, f"{name}:{line}", name, line)
                     for engine, version, line in PASTED[name]]


def test_text_that_is_no_report_gives_none():
    assert from_paste("hello\nworld\n", "x", PACKAGES) is None
    assert from_paste((DATA / "vllm-0.9.0-0.10.0.log").read_text(encoding="utf-8"), "x", PACKAGES) is None
    assert from_paste("", "x", PACKAGES) is None


def test_a_report_that_names_no_engine_gives_an_empty_list():
    assert from_paste("Package Version\n------- -------\ntorch   2.7.1\n", "x", PACKAGES) == []
    assert from_paste("numpy==2.2.6\ntorch==2.7.1\n", "x", PACKAGES) == []


def test_report_variants():
    check_env = "Python: 3.12.3\nPyTorch: 2.8.0+cu128\nsglang: 0.5.3\nvllm: 0.10.1.1\nxgrammar: 0.1.24\n"
    assert [(i.engine, i.version, i.line) for i in from_paste(check_env, "x", PACKAGES)] == [
        ("sglang", "0.5.3", 3), ("vllm", "0.10.1.1", 4)]
    dev = "Collecting environment information...\nvLLM Version: 0.8.5.dev162+g7ea6cb28b (git sha: 7ea6cb28b\n"
    assert [(i.version, i.line) for i in from_paste(dev, "x", PACKAGES)] == [("0.8.5.dev162+g7ea6cb28b", 2)]
    assert from_paste("vLLM Version                 : N/A (dev)\n", "x", PACKAGES) == []
    tagged = "[pip3] vllm==0.9.2\n[conda] vllm                      0.9.2            py312h4f2b1c3_0    conda-forge\n"
    assert [(i.version, i.line) for i in from_paste(tagged, "x", PACKAGES)] == [("0.9.2", 1)]
    show = "Name: vllm\nVersion: 0.11.0\nSummary: A high-throughput and memory-efficient inference engine\n"
    assert [(i.engine, i.version, i.line) for i in from_paste(show, "x", PACKAGES)] == [("vllm", "0.11.0", 2)]
    uv = "Package Version\n------- -------\nSGLang  0.5.6.post2\n"
    assert [(i.engine, i.version) for i in from_paste(uv, "x", PACKAGES)] == [("sglang", "0.5.6.post2")]
    # only the engines asked for
    freeze = (DATA / "pip-freeze.txt").read_text(encoding="utf-8")
    assert [i.engine for i in from_paste(freeze, "x", {"vllm": "vllm"})] == ["vllm"]


def test_the_environment_variables_a_collect_env_lists():
    old = env_from_paste((DATA / "vllm-collect-env-0.8.0-0.8.5.txt").read_text(encoding="utf-8"))
    assert old == {"VLLM_USE_V1": "0", "VLLM_WORKER_MULTIPROC_METHOD": "spawn", "NCCL_CUMEM_ENABLE": "0",
                   "TORCHINDUCTOR_COMPILE_THREADS": "1", "CUDA_MODULE_LOADING": "LAZY"}
    new = env_from_paste((DATA / "vllm-collect-env-0.9.0-0.34.0.txt").read_text(encoding="utf-8"))
    assert new["VLLM_ATTENTION_BACKEND"] == "FLASHINFER" and new["VLLM_USE_V1"] == "1" and len(new) == 7
    assert env_from_paste((DATA / "sglang-check-env-0.4.0-0.5.23.txt").read_text(encoding="utf-8")) == {}
    assert env_from_paste("VLLM_USE_V1=1\n") == {}  # not a collect_env output


# --- through the command -----------------------------------------------------------------------------------------

@pytest.fixture
def cli(audit_cli):
    return audit_cli  # conftest's: `gotchas audit` on the compiled real KB


@pytest.mark.parametrize("name, release", [("vllm-0.8.0-0.8.5.log", "0.8.5"),
                                           ("vllm-0.15.0-0.34.0-no-logo.log", "0.30.0")])
def test_audit_reads_the_version_of_an_old_and_a_modern_vllm_log(cli, name, release):
    code, out, err = cli("--serve-log", str(DATA / name), "--format", "json")
    assert code in (0, 1), err
    data = json.loads(out)
    assert [(t["engine"], t["version"], t["release"]) for t in data["targets"]] == [("vllm", release, release)]
