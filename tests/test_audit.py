"""`gotchas audit`: the engine versions and settings of a deployment, read from every kind of input, against a
compiled KB; what bites, what bites only if, exit codes and formats."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from verifier import audit, compiled, deployment
from verifier.deployment import Installed, parse_log, parse_serve

from .conftest import REPO

PACKAGES = {"vllm": "vllm", "sglang": "sglang"}


def condition(flag, values, default, witness="w", negated=False, since=None, until=None, confirmed=None,
              engine="vllm", env=None):
    return {"engine": engine, "flags": [flag] if flag else [], "env": env, "values": values, "negated": negated,
            "default": default, "witness": witness, "since": since, "until": until,
            "confirmed": confirmed if confirmed is not None else ["0.9.0", "0.10.0", "0.10.1", "0.11.0"]}


def entry(id, statuses, conditions=(), engines=("vllm",)):
    return {"id": id, "title": f"title of {id}", "engines": list(engines), "workaround": f"fix {id}",
            "withdrawn": None, "conditions": list(conditions), "statuses": statuses}


TRACKED = ["0.9.0", "0.10.0", "0.10.1", "0.11.0"]
KB = {
    "format": 1, "compiled_by": "test",
    "engines": {"vllm": {"name": "vLLM", "package": "vllm", "releases": TRACKED},
                "sglang": {"name": "SGLang", "package": "sglang", "releases": ["0.5.10", "0.5.22"]}},
    "entries": [
        entry("plain", {"vllm": {"0.9.0": "not-affected", "0.10.0": "holds", "0.10.1": "holds", "0.11.0": "holds"}}),
        entry("fixed-in-0-10-1", {"vllm": {"0.9.0": "holds", "0.10.0": "holds", "0.10.1": "not-affected",
                                           "0.11.0": "not-affected"}}),
        entry("unsure", {"vllm": {"0.10.0": "unverified", "0.10.1": "changed", "0.11.0": "holds"}}),
        entry("policy", {"vllm": {v: "holds" for v in TRACKED}},
              [condition("--scheduling-policy", ["fcfs"], "fcfs", confirmed=["0.10.0", "0.11.0"])]),
        entry("flag-off", {"vllm": {v: "holds" for v in TRACKED}},
              [condition("--enable-thing", [False], False), condition(None, ["1"], "0", env="VLLM_X")]),
        entry("computed", {"vllm": {v: "holds" for v in TRACKED}},
              [condition("--max-num-seqs", ["256"], "computed", until="0.10.0")]),
        entry("report", {"sglang": {"0.5.10": "holds", "0.5.22": "holds"}},
              [condition("--enable-cache-report", [False], False, engine="sglang", since="0.5.22",
                         confirmed=["0.5.10", "0.5.22"])], engines=("sglang",)),
    ],
    "skipped": [],
}


def run(versions, settings=(), ignore=()):
    installed = [Installed(*spec.split("=="), "--engine") for spec in versions]
    given = {s.engine: s for s in settings}
    return audit.audit(KB, installed, given, set(ignore))


def groups(result):
    return {f.id: f.group for f in result.findings}


# --- versions -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version,release,note", [
    ("0.10.0", "0.10.0", None),
    ("0.10.1+cu126", "0.10.1", "local build of 0.10.1: audited as 0.10.1"),
    ("0.11.0rc2", "0.11.0", "pre-release of 0.11.0: audited as 0.11.0"),
    ("0.10.2.dev45+g1234abc", "0.10.1", "development build: audited as 0.10.1"),
    ("0.10.0.post3", "0.10.0", "not a tracked release: audited as 0.10.0"),
    ("0.12.0", "0.11.0", "newer than the newest tracked release: audited as 0.11.0"),
    ("0.8.5", None, "older than the oldest tracked release (0.9.0)"),
    ("banana", None, "not a PEP 440 version"),
])
def test_a_version_maps_to_the_nearest_tracked_release_with_a_note(version, release, note):
    found, said = audit.nearest_release(version, TRACKED)
    assert found == release
    assert (said is None) if note is None else (note in said), said


def test_statuses_decide_what_is_listed_and_in_which_group():
    assert groups(run(["vllm==0.10.0"])) == {"plain": "bites", "fixed-in-0-10-1": "bites", "unsure": "unverified",
                                             "policy": "bites only if", "flag-off": "bites only if",
                                             "computed": "bites only if"}
    result = run(["vllm==0.10.1"])
    assert "fixed-in-0-10-1" not in groups(result) and "unsure" not in groups(result)  # not-affected; changed
    assert any("`changed`" in n and "unsure" in n for n in result.notes)
    assert "computed" not in [d.id for d in result.dropped] and groups(result)["computed"] == "bites"  # until 0.10.0


def test_a_local_build_gets_the_statuses_of_its_public_release():
    result = run(["vllm==0.10.1+cu126"])
    assert "fixed-in-0-10-1" not in groups(result)
    assert result.targets[0].release == "0.10.1" and "local build" in result.notes[0]


# --- conditions ---------------------------------------------------------------------------------------------

def test_without_settings_a_condition_makes_bites_only_if_with_its_default():
    found = {f.id: f for f in run(["vllm==0.10.0"]).findings}
    assert found["policy"].conditions == ("--scheduling-policy is fcfs (default fcfs)",)
    assert found["flag-off"].conditions == ("--enable-thing is not set (default false)", "VLLM_X is 1 (default 0)")


def test_a_serve_line_that_sets_the_flag_drops_the_entry():
    result = run(["vllm==0.10.0"], [parse_serve("vllm serve m --scheduling-policy priority --enable-thing")])
    assert "policy" not in groups(result) and "flag-off" not in groups(result)
    assert {d.id: d.reason for d in result.dropped}["policy"] == "--scheduling-policy is priority (--serve)"


def test_a_flag_the_serve_line_leaves_out_takes_the_default_where_the_witness_holds():
    settings = parse_serve("vllm serve m --max-num-seqs 256")
    result = run(["vllm==0.10.0"], [settings])
    assert groups(result)["policy"] == "bites"  # default fcfs, witnessed in 0.10.0
    assert "flag-off" not in groups(result)  # VLLM_X is not set: its default 0 does not meet `is: [1]`
    assert {d.id: d.reason for d in result.dropped}["flag-off"] == "VLLM_X is not set: default 0"
    assert groups(result)["computed"] == "bites"  # the computed default is set explicitly to a value that bites
    # In 0.10.1 the witness of the default does not hold: the default is not sure.
    found = {f.id: f for f in run(["vllm==0.10.1"], [settings]).findings}
    assert found["policy"].group == "bites only if"
    assert "not verified in this release" in found["policy"].conditions[0]


def test_an_environment_variable_in_the_serve_line_decides_an_env_condition():
    assert "flag-off" in groups(run(["vllm==0.10.0"], [parse_serve("VLLM_X=1 vllm serve m")]))
    result = run(["vllm==0.10.0"], [parse_serve("VLLM_X=2 vllm serve m")])
    assert "flag-off" not in groups(result) and "VLLM_X is 2" in {d.id: d.reason for d in result.dropped}["flag-off"]


def test_every_condition_must_be_met():
    result = run(["vllm==0.10.0"], [parse_serve("vllm serve m --no-enable-thing")])
    # --enable-thing is false (met); VLLM_X not set, default 0 (not met): dropped.
    assert "flag-off" not in groups(result)


def test_a_computed_default_stays_undecided_until_the_flag_is_set():
    assert groups(run(["vllm==0.10.0"], [parse_serve("vllm serve m")]))["computed"] == "bites only if"
    assert "computed" not in groups(run(["vllm==0.10.0"], [parse_serve("vllm serve m --max-num-seqs=128")]))
    assert groups(run(["vllm==0.10.0"], [parse_serve("vllm serve m --max_num_seqs 256.0")]))["computed"] == "bites"


def test_a_condition_applies_only_within_its_bounds():
    on = parse_serve("python -m sglang.launch_server --model-path m --enable-cache-report")
    assert groups(run(["sglang==0.5.10"], [on]))["report"] == "bites"  # no condition before 0.5.22
    assert "report" not in groups(run(["sglang==0.5.22"], [on]))


def test_ignore_and_fail_on():
    result = run(["vllm==0.10.0"], ignore=["plain"])
    assert "plain" not in groups(result) and result.ignored == ["plain"]
    only_unverified = run(["vllm==0.10.0"], [parse_serve("vllm serve m --scheduling-policy priority "
                                                         "--enable-thing --max-num-seqs 1")],
                          ignore=["plain", "fixed-in-0-10-1"])
    assert groups(only_unverified) == {"unsure": "unverified"}
    assert not audit.failing(only_unverified, "holds") and audit.failing(only_unverified, "unverified")


# --- serve lines and logs -------------------------------------------------------------------------------------

@pytest.mark.parametrize("line,engine,flags", [
    ("vllm serve Qwen/Qwen3-8B --scheduling-policy priority -tp 2",
     "vllm", {"model": "Qwen/Qwen3-8B", "scheduling_policy": "priority", "tp": "2"}),
    ("/opt/venv/bin/vllm serve m --scheduling_policy=priority --enable-prefix-caching",
     "vllm", {"scheduling_policy": "priority", "enable_prefix_caching": None}),
    ("python3 -m vllm.entrypoints.openai.api_server --model m --no-enable-log-requests --seed -1",
     "vllm", {"model": "m", "enable_log_requests": False, "seed": "-1"}),
    ("python -m sglang.launch_server --model-path m --enable-metrics --port 30000",
     "sglang", {"model_path": "m", "enable_metrics": None, "port": "30000"}),
])
def test_serve_lines_of_both_engines(line, engine, flags):
    settings = parse_serve(line)
    assert settings.engine == engine
    assert {k: settings.flags[k] for k in flags} == flags


def test_a_serve_line_of_no_known_engine_is_a_usage_error():
    with pytest.raises(deployment.DeploymentError, match="cannot tell the engine"):
        parse_serve("docker run image --model m")
    assert parse_serve("serve --x 1", default_engine="vllm").engine == "vllm"


VLLM_LOG = """\
INFO 08-05 10:12:11 [__init__.py:235] Automatically detected platform cuda.
INFO 08-05 10:12:13 [api_server.py:1755] vLLM API server version 0.10.0
INFO 08-05 10:12:13 [cli_args.py:261] non-default args: {'model': 'Qwen/Qwen3-8B', 'scheduling_policy': 'priority', \
'enable_prompt_tokens_details': True, 'max_num_seqs': 64, 'kv_transfer_config': KVTransferConfig(kv_connector='X'), \
'served_model_name': ['a, b'], 'override_generation_config': {'temperature': 0.7}}
INFO 08-05 10:12:20 [config.py:1604] Using max model len 40960
"""

SGLANG_LOG = """\
[2025-10-01 12:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tokenizer_path='Qwen/Qwen3-8B', \
tokenizer_mode='auto', host='127.0.0.1', port=30000, mem_fraction_static=0.871, enable_metrics=False, \
enable_cache_report=True, json_model_override_args='{}', lora_paths=None, schedule_policy='fcfs', \
sampling_defaults='model', weird=<Enum.X: 'x'>)
[2025-10-01 12:00:05] Load weight begin. avail mem=78.5 GB
"""


def test_vllm_start_up_log(tmp_path):
    path = tmp_path / "vllm.log"
    path.write_text(VLLM_LOG)
    settings = parse_log(path)
    assert settings.engine == "vllm" and settings.version == "0.10.0" and settings.origin == f"{path}:3"
    assert settings.flags["scheduling_policy"] == "priority" and settings.flags["enable_prompt_tokens_details"] is True
    assert settings.flags["max_num_seqs"] == 64 and settings.flags["served_model_name"] == ["a, b"]
    assert settings.flags["kv_transfer_config"] is deployment.UNKNOWN
    assert settings.flags["override_generation_config"] == {"temperature": 0.7}


def test_sglang_start_up_log(tmp_path):
    path = tmp_path / "sglang.log"
    path.write_text(SGLANG_LOG)
    settings = parse_log(path)
    assert settings.engine == "sglang" and settings.flags["enable_cache_report"] is True
    assert settings.flags["enable_metrics"] is False and settings.flags["port"] == 30000
    assert settings.flags["weird"] is deployment.UNKNOWN and settings.flags["lora_paths"] is None
    result = run(["sglang==0.5.22"], [settings])
    assert "report" not in groups(result)


def test_a_log_without_start_up_arguments_is_a_usage_error(tmp_path):
    path = tmp_path / "other.log"
    path.write_text("INFO nothing here\n")
    with pytest.raises(deployment.DeploymentError, match="no start-up arguments"):
        parse_log(path)


# --- files and environments -----------------------------------------------------------------------------------

def test_requirements_and_pip_freeze(tmp_path):
    (tmp_path / "base.txt").write_text("sglang[all]==0.5.10 ; python_version >= '3.10'\n")
    path = tmp_path / "requirements.txt"
    path.write_text("# pinned\n-r base.txt\n--index-url https://example.invalid/simple\nnumpy==2.0.0\n"
                    "vllm==0.10.1+cu126 \\\n    --hash=sha256:abcd\ntorch>=2\n")
    notes = []
    found = deployment.from_file(path, PACKAGES, notes)
    assert [(i.engine, i.version, i.line) for i in found] == [("sglang", "0.5.10", 1), ("vllm", "0.10.1+cu126", 5)]
    assert found[1].origin == f"{path}:5"
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("aiohttp==3.9.5\nsglang @ file:///wheels/sglang-0.5.10-py3-none-any.whl\nvllm>=0.10\n"
                      "-e git+https://example.invalid/vllm.git@abc#egg=vllm\n")
    notes = []
    (ranged,) = deployment.from_file(freeze, PACKAGES, notes)  # a range: every tracked release in it
    assert (ranged.engine, ranged.specifier, ranged.line) == ("vllm", ">=0.10", 3)
    assert len(notes) == 2 and all("not audited" in n for n in notes)


LOCKS = {
    "uv.lock": 'version = 1\nrequires-python = ">=3.10"\n\n[[package]]\nname = "numpy"\nversion = "2.0.0"\n\n'
               '[[package]]\nname = "vllm"\nversion = "0.10.0"\nsource = { registry = "https://example.invalid/simple" }\n',
    "poetry.lock": '[[package]]\nname = "sglang"\nversion = "0.5.22"\ndescription = ""\noptional = false\n'
                   'python-versions = ">=3.10"\nfiles = []\n\n[metadata]\nlock-version = "2.0"\n',
    "pylock.toml": 'lock-version = "1.0"\ncreated-by = "hand"\n\n[[packages]]\nname = "vllm"\nversion = "0.11.0"\n\n'
                   '[[packages]]\nname = "SGLang"\n',
}


@pytest.mark.parametrize("name,expected", [("uv.lock", [("vllm", "0.10.0", 9)]),
                                           ("poetry.lock", [("sglang", "0.5.22", 2)]),
                                           ("pylock.toml", [("vllm", "0.11.0", 5)])])
def test_lock_files(tmp_path, name, expected):
    path = tmp_path / name
    path.write_text(LOCKS[name])
    notes = []
    found = deployment.from_file(path, PACKAGES, notes)
    assert [(i.engine, i.version, i.line) for i in found] == expected
    if name == "pylock.toml":
        assert notes and "SGLang has no version" in notes[0]


def test_engine_specs():
    assert deployment.from_specs(["vllm==0.10.0", "SGLang==0.5.10"], PACKAGES) == [
        Installed("vllm", "0.10.0", "--engine"), Installed("sglang", "0.5.10", "--engine")]
    for bad in ("vllm", "vllm>=0.10", "tgi==1.0", "vllm==0.1,==0.2"):
        with pytest.raises(deployment.DeploymentError):
            deployment.from_specs([bad], PACKAGES)


def fake_distributions(folder: Path, **versions) -> Path:
    """A folder of `.dist-info` metadata only, as an installer leaves it (no code)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, version in versions.items():
        info = folder / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return folder


def test_the_running_environment(tmp_path, monkeypatch):
    site = fake_distributions(tmp_path / "site", vllm="0.10.1+cu126", numpy="2.0.0")
    monkeypatch.syspath_prepend(str(site))
    assert ("vllm", "0.10.1+cu126") in [(i.engine, i.version) for i in deployment.from_environment(PACKAGES)]


def test_another_environment_by_its_interpreter(tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    fake_distributions(Path(purelib), sglang="0.5.10", vllm="0.10.0")
    found = deployment.from_python(str(python), PACKAGES)
    assert sorted((i.engine, i.version) for i in found) == [("sglang", "0.5.10"), ("vllm", "0.10.0")]
    with pytest.raises(deployment.DeploymentError):
        deployment.from_python(str(tmp_path / "nope"), PACKAGES)
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\nexit 7\n")
    broken.chmod(0o755)
    with pytest.raises(deployment.EnvironmentFailed, match="exited with 7"):
        deployment.from_python(str(broken), PACKAGES)


# --- the command, on the real KB ----------------------------------------------------------------------------

@pytest.fixture
def cli(audit_cli):
    return audit_cli  # conftest's: `gotchas audit` on the compiled real KB


PRIORITY = "config-request-priority-ignored-under-fcfs"


def _policy_default_at(version: str) -> str:
    """How audit words the --scheduling-policy default of a release: read from the release surface the ledger
    keeps (the code of that release), not from the entry."""
    from verifier.ledger import Ledger

    item = Ledger(REPO / "ledger").load_surfaces("vllm").surface(version).flag("--scheduling-policy")
    assert item is not None and item.value == "fcfs"
    return f"--scheduling-policy is fcfs (default fcfs in {version}, {item.path}:{item.line})"


def test_done_when_vllm_0_10_0_lists_the_priority_gotcha_and_a_serve_line_drops_it(cli):
    code, out, _ = cli("--engine", "vllm==0.10.0", "--site-url", "https://gotchas.example/")
    assert code == 1
    assert f"    [performance] {PRIORITY}: Request priority is accepted and silently ignored" in out
    assert f"only if {_policy_default_at('0.10.0')}" in out
    assert "workaround: Start the server with `--scheduling-policy priority`" in out
    assert f"https://gotchas.example/entries/{PRIORITY}/" in out
    code, out, _ = cli("--engine", "vllm==0.10.0", "--serve", "vllm serve Qwen/Qwen3-8B --scheduling-policy priority")
    assert f"] {PRIORITY}:" not in out
    assert f"  {PRIORITY} (vllm 0.10.0): --scheduling-policy is priority (--serve)" in out
    code, out, _ = cli("--engine", "vllm==0.10.0", "--serve", "vllm serve Qwen/Qwen3-8B")
    only_if = out.split("  bites only if (")[1]
    # the default fcfs, from the surface of 0.10.0, meets the policy condition: only what clients send is left
    assert f"] {PRIORITY}:" in only_if
    assert "\n      only if requests send priority\n" in only_if.split(f"] {PRIORITY}:")[1].split("\n    [")[0]


def test_the_real_sglang_entries_read_a_real_start_up_log(cli, tmp_path):
    log = tmp_path / "sglang.log"
    log.write_text(SGLANG_LOG)
    code, out, _ = cli("--engine", "sglang==0.5.22", "--serve-log", str(log))
    assert "observability-sglang-metrics-endpoint-off-by-default:" in out  # enable_metrics=False
    assert "api-sglang-cached-tokens-need-enable-cache-report:" not in out.split("not listed")[0]
    code, out, _ = cli("--engine", "sglang==0.5.10", "--serve-log", str(log))
    assert "api-sglang-cached-tokens-need-enable-cache-report:" in out  # a zero hit is still null there


def test_a_vllm_log_alone_gives_the_version_and_the_settings(cli, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(VLLM_LOG)
    code, out, _ = cli("--serve-log", str(log), "--format", "json")
    data = json.loads(out)
    assert [(t["engine"], t["version"], t["release"]) for t in data["targets"]] == [("vllm", "0.10.0", "0.10.0")]
    dropped = {d["id"] for d in data["dropped"]}
    assert {PRIORITY, "api-cached-tokens-hidden-unless-prompt-tokens-details"} <= dropped


def test_exit_codes(cli, tmp_path):
    assert cli("--engine", "vllm==0.8.0", "--ignore", "x")[0] == 2  # no such entry
    assert cli("--engine", "vllm")[0] == 2
    assert cli("-r", str(tmp_path / "missing.txt"))[0] == 2
    assert cli("--serve", "docker run x", "--engine", "vllm==0.10.0", "--engine", "sglang==0.5.10")[0] == 2
    assert cli("--python", str(tmp_path / "nope"))[0] == 2
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\nexit 7\n")
    broken.chmod(0o755)
    assert cli("--python", str(broken))[0] == 3
    code, out, _ = cli("--engine", "vllm==0.5.0")  # older than anything tracked: nothing was audited
    assert code == 4 and "older than the oldest tracked release" in out and "nothing audited" in out
    empty = tmp_path / "requirements.txt"
    empty.write_text("numpy==2.0.0\n")
    code, out, _ = cli("-r", str(empty))
    assert code == 4 and "nothing audited" in out
    code, out, _ = cli("-r", str(empty), "--format", "json")
    assert code == 4 and json.loads(out)["audited"] is False


def test_fail_on_unverified_and_ignore_everything(cli, real_kb):
    found = audit.audit(real_kb, [Installed("vllm", "0.10.0", "--engine")], {})
    ids = sorted({f.id for f in found.findings})
    ignore = [a for i in ids for a in ("--ignore", i)]
    assert cli("--engine", "vllm==0.10.0", *ignore)[0] == 0
    assert cli("--engine", "vllm==0.10.0", "--fail-on", "unverified", *ignore)[0] == 0


def test_the_kb_of_a_checkout(cli, tmp_path):
    code, out, _ = cli("--kb", str(REPO), "--engine", "vllm==0.10.0")
    assert code == 1 and PRIORITY in out
    assert cli("--kb", str(tmp_path), "--engine", "vllm==0.10.0")[0] == 2


# --- formats ------------------------------------------------------------------------------------------------

#: The parts of the SARIF 2.1.0 schema (OASIS, sarif-schema-2.1.0.json) that a code-scanning upload relies on:
#: required properties, their types and the enumerations, as the full schema states them.
SARIF_MINIMAL = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object", "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"enum": ["2.1.0"]},
        "runs": {"type": "array", "items": {
            "type": "object", "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {"driver": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "version": {"type": "string"},
                                   "rules": {"type": "array", "uniqueItems": True, "items": {
                                       "type": "object", "required": ["id"],
                                       "properties": {"id": {"type": "string"},
                                                      "shortDescription": {"$ref": "#/definitions/message"},
                                                      "help": {"$ref": "#/definitions/message"},
                                                      "helpUri": {"type": "string", "format": "uri"}}}}}}}},
                "results": {"type": "array", "items": {
                    "type": "object", "required": ["message"],
                    "properties": {
                        "ruleId": {"type": "string"}, "ruleIndex": {"type": "integer", "minimum": -1},
                        "level": {"enum": ["none", "note", "warning", "error"]},
                        "message": {"$ref": "#/definitions/message"},
                        "locations": {"type": "array", "items": {"type": "object", "properties": {
                            "physicalLocation": {"type": "object", "properties": {
                                "artifactLocation": {"type": "object", "properties": {"uri": {"type": "string"}}},
                                "region": {"type": "object", "properties": {
                                    "startLine": {"type": "integer", "minimum": 1}}}}}}}}}}},
            }}},
    },
    "definitions": {"message": {"type": "object", "anyOf": [{"required": ["text"]}, {"required": ["id"]}],
                                "properties": {"text": {"type": "string"}}}},
}


def test_sarif_is_valid_and_points_at_the_pinning_line(cli, tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text("numpy==2.0.0\nvllm==0.10.0\n")
    code, out, _ = cli("-r", str(path), "--serve", "vllm serve m", "--format", "sarif", "--site-url", "https://gotchas.example")
    log = json.loads(out)
    jsonschema.validate(log, SARIF_MINIMAL, format_checker=jsonschema.FormatChecker())
    run_ = log["runs"][0]
    rules = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    result = next(r for r in run_["results"] if r["ruleId"] == PRIORITY)
    # bites only if, and a performance gotcha: one level below the group's warning
    assert rules[result["ruleIndex"]] == PRIORITY and result["level"] == "note"
    outage = next(r for r in run_["results"] if r["properties"]["severity"] == "outage")
    assert outage["level"] in ("error", "warning") and outage["properties"]["status"] != "unverified"
    assert outage["level"] == {"bites": "error", "bites only if": "warning"}[outage["properties"]["status"]]
    assert result["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    # without a serve line the outage entries are "bites only if" (their conditions), so a warning, not an error
    assert {r["level"] for r in run_["results"]} <= {"error", "warning", "note"} and "warning" in {r["level"] for r in run_["results"]}
    assert code == 1


def test_json_and_markdown(cli):
    code, out, _ = cli("--engine", "vllm==0.10.0", "--format", "json")
    data = json.loads(out)
    (target,) = data["targets"]
    priority = next(g for g in target["gotchas"] if g["id"] == PRIORITY)
    assert priority["status"] == "bites only if"
    assert priority["only_if"] == [_policy_default_at("0.10.0"), "requests send priority"]
    assert priority["workaround"].startswith("Start the server with")
    code, out, _ = cli("--engine", "vllm==0.10.0", "--format", "markdown")
    assert out.startswith("# Gotchas that apply to this deployment\n\n## vLLM 0.10.0\n")
    assert f"| bites only if: {_policy_default_at('0.10.0')}: requests send priority | performance | `{PRIORITY}`:" in out


# --- the compiled KB and the installed wheel ----------------------------------------------------------------

def test_the_compiled_kb_holds_conditions_with_the_releases_that_confirm_their_default(real_kb):
    entries = {e["id"]: e for e in real_kb["entries"]}
    policy, sent = entries[PRIORITY]["conditions"]
    # the default is the code's, from the release surface of each release (no `default`/`witness` written)
    assert policy["flags"] == ["--scheduling-policy"] and policy["default"] is None
    assert policy["defaults"]["0.10.0"][0] == "fcfs" and entries[PRIORITY]["statuses"]["vllm"]["0.8.0"] == "not-affected"
    assert sent["kind"] == "any" and [m["request"] for m in sent["any"]] == ["priority", None]
    assert real_kb["skipped"] == []
    assert compiled.first_step("Do this:\n\n- first\n  step\n- second") == "Do this: first step"


def test_the_wheel_carries_the_kb_and_audits_without_a_checkout(tmp_path):
    """Build the wheel from a copy of the checkout, install it with no dependencies and no index into a fresh
    venv (the dependencies come from this one, through a .pth file), and audit from a folder with no KB."""
    tree = tmp_path / "tree"
    files = subprocess.run(["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"], check=True,
                           capture_output=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = REPO / name
        if source.is_file() and not name.startswith(("ledger/evidence/", "bench/")):
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_bytes(source.read_bytes())
    wheels = tmp_path / "wheels"
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    # No build isolation and no index: the build takes setuptools and the loader's dependencies from this venv
    # (the test extras), so the suite stays offline.
    pip = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-index", "--no-build-isolation", "-q", "-w",
           str(wheels), str(tree)]
    built = subprocess.run(pip, env=env, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = wheels.glob("gotchas-*.whl")
    venv = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                  capture_output=True, text=True, check=True).stdout.strip())
    import yaml  # the dependencies of this venv, for the fresh one (only a path: no .pth of theirs runs)
    (purelib / "deps.pth").write_text(str(Path(yaml.__file__).resolve().parent.parent) + "\n")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
                                "--no-index", "-q", str(wheel)], env=env, capture_output=True, text=True, timeout=300)
    if installed.returncode != 0 and "no such option: --python" in installed.stderr:
        installed = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                                    "--prefix", str(venv), str(wheel)], env=env, capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    elsewhere = tmp_path / "deployment"
    elsewhere.mkdir()
    clean = {k: v for k, v in env.items() if k != "PYTHONPATH"}
    where = subprocess.run([str(python), "-c", "import verifier.compiled as c; print(c.packaged_path())"],
                           cwd=elsewhere, env=clean, capture_output=True, text=True)
    assert Path(where.stdout.strip()).is_relative_to(purelib), where.stdout + where.stderr
    done = subprocess.run([str(venv / "bin" / "gotchas"), "audit", "--engine", "vllm==0.10.0"], cwd=elsewhere,
                          env=clean, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert f"] {PRIORITY}: Request priority" in done.stdout
    assert "workaround: Start the server with `--scheduling-policy priority`" in done.stdout
    done = subprocess.run([str(venv / "bin" / "gotchas"), "audit", "--engine", "vllm==0.10.0", "--serve",
                           "vllm serve m --scheduling-policy priority"], cwd=elsewhere, env=clean,
                          capture_output=True, text=True, timeout=120)
    assert f"] {PRIORITY}:" not in done.stdout and f"  {PRIORITY} (vllm 0.10.0)" in done.stdout
