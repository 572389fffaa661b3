"""Where deployments declare the engine (issue #26): pyproject.toml, setup.cfg/setup.py, constraint files,
Dockerfiles, compose files, Kubernetes/KServe manifests and Helm values, shell scripts, `docker run` lines, and a
folder holding them; real deployments (tests/data/deployments, each with its SOURCE.md) and made-up ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from verifier import deployment

DATA = Path(__file__).parent / "data" / "deployments"
PACKAGES = {"vllm": "vllm", "sglang": "sglang"}
NEWEST = {"vllm": "0.33.0", "sglang": "0.5.23"}


def read(path) -> tuple[deployment.Found, list[str]]:
    notes: list[str] = []
    return deployment.read_path(path, PACKAGES, notes, NEWEST), notes


def versions(found: deployment.Found) -> list[tuple[str, str, str | None]]:
    return [(i.engine, i.version, i.specifier) for i in found.installed]


# --- Python packaging files ----------------------------------------------------------------------------------

def test_pyproject_pep_621_extras_groups_and_uv(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\ndependencies = [\n  "numpy>=1",\n  "vllm==0.9.1",\n]\n'
                    '[project.optional-dependencies]\nsrt = ["sglang[srt]>=0.4.6,<0.5"]\n'
                    '[dependency-groups]\ndev = ["vllm>=0.10"]\n'
                    '[tool.uv]\noverride-dependencies = ["vllm==0.10.1.1"]\n'
                    '[tool.uv.sources]\nvllm = { git = "https://example.org/vllm.git" }\n')
    found, notes = read(path)
    assert versions(found) == [("vllm", "0.9.1", None), ("sglang", "<0.5,>=0.4.6", "<0.5,>=0.4.6"),
                               ("vllm", ">=0.10", ">=0.10"), ("vllm", "0.10.1.1", None)]
    assert found.installed[0].line == 5 and found.installed[0].origin == f"{path}:5"
    assert any("git source" in n and ":14:" in n for n in notes)


def test_a_single_quoted_requirement_is_found_at_its_line(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text("[project]\nname = 'vllm-deploy'\ndependencies = [\n  'vllm==0.9.1',\n]\n")
    found, _ = read(path)
    assert [(i.version, i.line) for i in found.installed] == [("0.9.1", 4)]  # not the name's line


def test_poetry_constraints_become_pep_440_ranges(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.poetry.dependencies]\npython = "^3.10"\nvllm = {version = "^0.6.0", optional = true}\n'
                    '[tool.poetry.group.serve.dependencies]\nsglang = "0.4.6.post1"\n')
    found, _ = read(path)
    assert versions(found) == [("vllm", ">=0.6.0,<0.7", ">=0.6.0,<0.7"), ("sglang", "0.4.6.post1", None)]
    assert [i.line for i in found.installed] == [3, 5]
    assert deployment._packaging.poetry_specifier("~1.2.3") == ">=1.2.3,<1.3"
    assert deployment._packaging.poetry_specifier("^0.0.3") == ">=0.0.3,<0.0.4"
    assert deployment._packaging.poetry_specifier(">=0.8,<0.9") == ">=0.8,<0.9"
    assert deployment._packaging.poetry_specifier("0.8.1 || 0.9.0") is None


def test_setup_py_is_read_without_running_it(tmp_path):
    (tmp_path / "setup.py").write_text(
        'import os\nos.system("touch ran")\nVLLM = ["vllm==0.10.0"]\nBASE = ["numpy"]\n'
        'setup(name="x", install_requires=BASE + ["pyyaml"],\n      extras_require={"vllm": VLLM, "sglang": '
        '["sglang[srt]==0.5.6"], "gpu": computed()})\n')
    found, notes = read(tmp_path / "setup.py")
    assert versions(found) == [("vllm", "0.10.0", None), ("sglang", "0.5.6", None)]
    assert [i.line for i in found.installed] == [3, 6]
    assert not (tmp_path / "ran").exists() and not Path("ran").exists()
    assert any("computed" in n and ":6:" in n for n in notes)


def test_setup_cfg_install_requires_and_extras(tmp_path):
    path = tmp_path / "setup.cfg"
    path.write_text("[metadata]\nname = x\n[options]\ninstall_requires =\n    numpy\n    vllm==0.11.0\n"
                    "[options.extras_require]\nsglang =\n    sglang>=0.5\n")
    found, _ = read(path)
    assert versions(found) == [("vllm", "0.11.0", None), ("sglang", ">=0.5", ">=0.5")]
    assert found.installed[0].line == 6


def test_requirements_read_constraints_glued_includes_and_quoted_lines(tmp_path):
    (tmp_path / "constraints.txt").write_text("vllm==0.9.2\n")
    (tmp_path / "more.txt").write_text('"sglang==0.5.2",\n')
    (tmp_path / "requirements.txt").write_text("-c constraints.txt\n-rmore.txt\nvllm>=0.9,<0.11\n")
    found, _ = read(tmp_path / "requirements.txt")
    assert versions(found) == [("vllm", "0.9.2", None), ("sglang", "0.5.2", None),
                               ("vllm", "<0.11,>=0.9", "<0.11,>=0.9")]


# --- containers ----------------------------------------------------------------------------------------------

def test_dockerfile_arg_from_run_and_cmd(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("ARG VLLM_VERSION=v0.14.0\nFROM vllm/vllm-openai:${VLLM_VERSION} AS base\n"
                    "ENV VLLM_HTTP_TIMEOUT_KEEP_ALIVE=65\nFROM base\nRUN pip install --no-cache-dir \\\n"
                    "    'sglang[srt]==0.5.2' && echo done\n"
                    'CMD ["--model", "Qwen/Qwen3-8B", "--scheduling-policy", "priority", "--api-key", "$KEY"]\n')
    found, _ = read(path)
    assert [(i.engine, i.version) for i in found.installed] == [("sglang", "0.5.2"), ("vllm", "0.14.0")]
    vllm = found.installed[1]
    assert vllm.line == 2 and vllm.settings.flags["scheduling_policy"] == "priority"
    assert vllm.settings.flags["api_key"] is deployment.UNKNOWN  # the exec form does not expand $KEY
    assert found.installed[0].line == 5


def test_image_tags_latest_digests_and_other_registries(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text("FROM registry.example.org:5000/lmsysorg/sglang:v0.4.6.post1-cu124\n")
    found, _ = read(path)
    assert versions(found) == [("sglang", "0.4.6.post1", None)]
    path.write_text("FROM vllm/vllm-openai@sha256:" + "a" * 64 + "\n")
    found, notes = read(path)
    assert found.installed == [] or found.installed[0].version == "0.33.0"
    path.write_text("FROM vllm/vllm-openai:nightly\n")
    found, notes = read(path)
    assert found.installed == [] and "names no release version" in notes[0]
    path.write_text("FROM vllm/vllm-openai:latest\n")
    found, notes = read(path)
    assert versions(found) == [("vllm", "0.33.0", None)] and "newest tracked release" in notes[0]


def test_compose_command_environment_and_anchors(tmp_path):
    path = tmp_path / "docker-compose.yml"
    path.write_text("x-env: &env\n  VLLM_USE_V1: '1'\nservices:\n  llm:\n    image: vllm/vllm-openai:v0.10.0\n"
                    "    environment:\n      <<: *env\n      HF_TOKEN: t\n"
                    "    command: >\n      --model m --enable-auto-tool-choice\n      --tool-call-parser hermes\n"
                    "  web:\n    image: nginx:1\n")
    found, _ = read(path)
    (item,) = found.installed
    assert (item.engine, item.version, item.line) == ("vllm", "0.10.0", 5)
    assert item.settings.flags["tool_call_parser"] == "hermes" and item.settings.env["VLLM_USE_V1"] == "1"


def test_kubernetes_and_kserve_containers(tmp_path):
    path = tmp_path / "deploy.yaml"
    path.write_text("apiVersion: v1\nkind: Service\n---\napiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n"
                    "    spec:\n      containers:\n        - name: sglang\n          image: lmsysorg/sglang:v0.5.10\n"
                    "          command: [python3, -m, sglang.launch_server]\n          args:\n"
                    "            - --model-path=m\n            - --schedule-policy\n            - fcfs\n"
                    "          env:\n            - name: SGLANG_X\n              value: '1'\n"
                    "            - name: SECRET\n              valueFrom: {secretKeyRef: {name: s, key: k}}\n"
                    "---\napiVersion: serving.kserve.io/v1beta1\nkind: InferenceService\nspec:\n  predictor:\n"
                    "    containers:\n      - image: vllm/vllm-openai:v0.11.0\n"
                    "        command: [sh, -c, 'vllm serve m --max-loras 2 --enable-lora']\n")
    found, _ = read(path)
    sglang, vllm = found.installed
    assert (sglang.engine, sglang.version, sglang.line) == ("sglang", "0.5.10", 11)
    assert sglang.settings.flags == {"model_path": "m", "schedule_policy": "fcfs"}
    assert sglang.settings.env == {"SGLANG_X": "1"}
    assert (vllm.version, vllm.settings.flags["max_loras"]) == ("0.11.0", "2")


def test_a_helm_template_says_what_to_give(tmp_path):
    path = tmp_path / "deployment.yaml"
    path.write_text("spec:\n  image: {{ .Values.image }}\n  x: [\n")
    with pytest.raises(deployment.DeploymentError, match=r"deployment.yaml:\d+: not YAML.*rendered manifest"):
        read(path)


def test_scripts_and_docker_run_lines(tmp_path):
    path = tmp_path / "serve.sh"
    path.write_text("#!/bin/bash\nMODEL=Qwen/Qwen3-8B\nPORT=8000\n"
                    "docker run --gpus all -e VLLM_API_KEY=k -p ${PORT}:8000 --ipc=host \\\n"
                    "  vllm/vllm-openai:v0.12.0 --model $MODEL \\\n  --tensor-parallel-size 2 > log 2>&1 &\n"
                    "CUDA_VISIBLE_DEVICES=0 python -m sglang.launch_server --model-path $MODEL --tp $UNSET\n")
    found, _ = read(path)
    (vllm,) = found.installed
    assert (vllm.version, vllm.line) == ("0.12.0", 4)
    assert vllm.settings.flags == {"model": "Qwen/Qwen3-8B", "tensor_parallel_size": "2"}
    assert vllm.settings.env == {"VLLM_API_KEY": "k"}
    (sglang,) = found.settings
    assert sglang.engine == "sglang" and sglang.flags["tp"] is deployment.UNKNOWN
    assert sglang.env["CUDA_VISIBLE_DEVICES"] == "0" and sglang.origin == f"{path}:7"


# --- real deployments ------------------------------------------------------------------------------------------

def test_every_collected_deployment_has_its_source():
    folders = [p for p in DATA.iterdir() if p.is_dir()]
    assert len(folders) >= 10
    for folder in folders:
        source = (folder / "SOURCE.md").read_text()
        assert "https://github.com/" in source and "## What it declares" in source, folder


@pytest.mark.parametrize("slug,expected", [
    ("gh-dealexmachina-nemotron-3-inference", [("vllm", "0.12.0", None)]),
    ("gh-inclusionai-areal", [("sglang", "0.5.7", None), ("vllm", "0.14.0", None)]),
    ("gh-volcengine-verl", [("vllm", "<=0.12.0,>=0.8.5", "<=0.12.0,>=0.8.5"), ("sglang", "0.5.6", None)]),
    ("gh-alan-turing-institute-t0-1", [("vllm", ">=0.8.3", ">=0.8.3")]),
    ("gh-vectorinstitute-vector-inference", [("vllm", ">=0.6.0,<0.7", ">=0.6.0,<0.7")]),
    ("gh-substratusai-vllm-docker", [("vllm", "0.6.2", None)]),
    ("vllm-pr-35720", [("vllm", "0.16.0", None), ("vllm", "0.16.0", None)]),
    ("sglang-issue-25673", [("sglang", "0.5.11", None)]),
])
def test_real_deployments_give_their_versions(slug, expected):
    found, _ = read(DATA / slug)
    assert versions(found) == expected


def test_a_real_script_keeps_a_json_valued_argument_whole():
    found, notes = read(DATA / "gh-alan-turing-institute-t0-1")
    first = found.settings[0]  # scripts/serve_qwen_with_tools.sh: continuation lines, a JSON value in quotes
    assert json.loads(first.flags["rope_scaling"]) == {"factor": 4, "original_max_position_embeddings": 32768,
                                                       "rope_type": "yarn"}
    assert first.flags["tool_call_parser"] == "hermes" and first.env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    assert len(found.settings) == 2 and found.settings[1].flags["tool_call_parser"] == "openai"  # the second script


def test_a_real_compose_file_and_a_real_helm_chart_give_their_settings():
    found, _ = read(DATA / "gh-perpetue237-agentsculptor")
    (settings,) = found.settings  # the image tag `gptoss` is no version
    assert settings.flags["enable_prefix_caching"] is False and settings.flags["tensor_parallel_size"] == "2"
    found, notes = read(DATA / "gh-vllm-project-production-stack")
    (item,) = found.installed
    assert item.settings.flags["gpu_memory_utilization"] == "0.8" and item.settings.flags["max_model_len"] == "4096"
    assert item.settings.flags["enable_lora"] is None  # the model's enableLoRA: the chart passes --enable-lora
    assert any("the tag latest" in n for n in notes)


# --- the command ---------------------------------------------------------------------------------------------

def test_a_folder_with_a_pyproject_and_a_dockerfile_is_audited_and_ranked(audit_cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["vllm==0.10.0"]\n')
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile").write_text(
        "FROM vllm/vllm-openai:v0.10.0\nCMD [\"--model\", \"m\", \"--scheduling-policy\", \"priority\"]\n")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "requirements.txt").write_text("vllm==0.8.0\n")  # never read: a virtual environment
    code, out, _ = audit_cli(str(tmp_path), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["audited"] is True
    (target,) = data["targets"]  # one version, read twice: audited once, with the Dockerfile's settings
    assert target["release"] == "0.10.0" and target["origin"].endswith("Dockerfile:1")
    assert "config-request-priority-ignored-under-fcfs" in {d["id"] for d in data["dropped"]}
    ranks = [g["severity"] for g in target["gotchas"] if g["status"] == "bites"]
    from verifier import kb as kb_module
    vocabulary = list(kb_module.load(Path(__file__).parents[1]).severities)
    assert ranks == sorted(ranks, key=vocabulary.index)  # the worst first
    from verifier.ledger import Ledger, version_key

    newest = max(Ledger(Path(__file__).parents[1] / "ledger").load("vllm").versions(), key=version_key)
    assert target["upgrade"]["to"] == newest and all("fixed_in" in g for g in target["gotchas"])


def test_nothing_found_exits_4_with_the_reason(audit_cli, tmp_path):
    (tmp_path / "README.md").write_text("We serve with vllm.\n")
    (tmp_path / "Dockerfile").write_text("FROM python:3.12\nRUN pip install numpy\n")
    code, out, _ = audit_cli(str(tmp_path))
    assert code == 4 and "nothing audited" in out
    code, out, err = audit_cli(str(tmp_path / "missing"))
    assert code == 2 and "no such file or folder" in err


def test_a_range_is_audited_at_each_tracked_release_in_it(audit_cli, tmp_path):
    (tmp_path / "requirements.txt").write_text("vllm>=0.11,<0.12\n")
    code, out, _ = audit_cli(str(tmp_path / "requirements.txt"), "--format", "json")
    (target,) = json.loads(out)["targets"]
    assert target["range"] == "<0.12,>=0.11" and target["releases"][0] == "0.11.0"
    assert all(r.startswith("0.11.") for r in target["releases"]) and len(target["releases"]) >= 2
    hermes = [g for g in target["gotchas"] if g["id"] == "api-hermes-tool-calls-lost-to-skip-special-tokens"]
    assert hermes == []  # fixed in 0.11.0: no release of the range has it
    best_of = [g for g in target["gotchas"] if g["id"] == "api-best-of-silently-ignored-from-0-12"]
    assert best_of == []  # only from 0.12.0
    assert "audited at each of its" in " ".join(json.loads(out)["notes"])


# --- spellings: argparse abbreviations and the code's aliases ----------------------------------------------------

def test_abbreviations_are_written_out_per_release(real_kb):
    from verifier.audit import unabbreviated

    given = deployment.parse_serve("python -m sglang.launch_server --model-path m --speculative-algo EAGLE "
                                   "--mem-frac 0.8 --enable-m 1")
    full = unabbreviated(real_kb, "sglang", "0.5.11", given)
    assert full.flags["speculative_algorithm"] == "EAGLE" and "speculative_algo" not in full.flags
    assert full.flags["mem_fraction_static"] == "0.8"
    assert "enable_m" in full.flags  # the start of several flags: argparse refuses it, and so it stays unknown
    assert unabbreviated(real_kb, "sglang", "0.5.11", None) is None


def test_a_condition_meets_the_aliases_the_code_gives_its_flag(real_kb):
    """A condition written on SGLang's --tp-size also reads `--tp` where the code has that alias (0.5.x)."""
    from verifier.audit import MET, NOT_MET, evaluate
    from verifier.compiled import condition_to_json
    from verifier.model import Condition

    data = {**condition_to_json(Condition("sglang", ("--tp-size",), values=("1",), negated=True)),
            "confirmed": [], "defaults": {}, "spellings": ["--tensor-parallel-size", "--tp"]}
    two = deployment.parse_serve("python -m sglang.launch_server --model-path m --tensor-parallel-size 2")
    assert evaluate(data, "0.5.10", two)[0] == MET
    one = deployment.parse_serve("python -m sglang.launch_server --model-path m --tp 1")
    assert evaluate(data, "0.5.10", one)[0] == NOT_MET
    given = {**condition_to_json(Condition("sglang", ("--tp-size",), given=True)), "confirmed": [], "defaults": {},
             "spellings": ["--tensor-parallel-size", "--tp"]}
    assert evaluate(given, "0.5.10", one)[0] == MET  # `set: true` reads the aliases too
    assert evaluate(given, "0.5.10", deployment.parse_serve("python -m sglang.launch_server --model-path m"))[0] \
        == NOT_MET
    members = [m for e in real_kb["entries"] for c in e["conditions"] for m in [c, *c["any"]] if m["flags"]]
    tp = next(m for m in members if "--tp-size" in m["flags"] + m.get("spellings", []))
    assert "--tensor-parallel-size" in tp["flags"] + tp["spellings"]  # the code's alias, read from the surface


def test_a_docker_run_serve_line_gives_the_version_and_the_settings(audit_cli):
    code, out, _ = audit_cli("--serve", "docker run --gpus all -e VLLM_API_KEY=k -p 8000:8000 "
                             "vllm/vllm-openai:v0.11.0 --model m --enforce-eager", "--format", "json")
    data = json.loads(out)
    (target,) = data["targets"]
    assert (target["engine"], target["version"], target["origin"]) == ("vllm", "0.11.0", "--serve")
    dropped = {d["id"]: d["reason"] for d in data["dropped"]}
    assert dropped["memory-cuda-graphs-outside-gpu-memory-utilization-budget"] == "--enforce-eager is true (--serve)"
    code, out, err = audit_cli("--serve", "docker run nginx:1")
    assert code == 2 and "runs no image" in err


def test_a_range_with_settings_says_what_they_spare(audit_cli, tmp_path):
    (tmp_path / "requirements.txt").write_text("vllm>=0.11,<0.12\n")
    code, out, _ = audit_cli(str(tmp_path / "requirements.txt"), "--serve", "vllm serve m --enforce-eager",
                             "--format", "json")
    data = json.loads(out)
    (target,) = data["targets"]
    dropped = {d["id"]: d for d in data["dropped"]}
    assert dropped["memory-cuda-graphs-outside-gpu-memory-utilization-budget"]["release"] == target["releases"][-1]
    assert "memory-cuda-graphs-outside-gpu-memory-utilization-budget" not in {g["id"] for g in target["gotchas"]}


def test_two_launch_scripts_of_one_version_are_two_deployments(audit_cli):
    code, out, _ = audit_cli(str(DATA / "gh-marieai-marie-ai"), "--format", "json")
    data = json.loads(out)
    origins = sorted(t["origin"].rsplit("/", 1)[1] for t in data["targets"])
    assert origins == ["sglang-qwenvl_2_5_vl_adapter.sh:1", "sglang-qwq-x8.sh:1"]
    listed = {t["origin"].rsplit("/", 1)[1]: {g["id"] for g in t["gotchas"]} for t in data["targets"]}
    # the adapter script runs LoRA on one GPU; the QwQ one runs --tp 2 and no LoRA: each gets its own answer
    assert "perf-sglang-lora-turns-off-prefill-cuda-graph" in listed["sglang-qwenvl_2_5_vl_adapter.sh:1"]
    assert "perf-sglang-lora-turns-off-prefill-cuda-graph" not in listed["sglang-qwq-x8.sh:1"]
    assert "memory-tp-free-memory-imbalance-fails-startup" in listed["sglang-qwq-x8.sh:1"]
    assert "memory-tp-free-memory-imbalance-fails-startup" not in listed["sglang-qwenvl_2_5_vl_adapter.sh:1"]


def test_a_pasted_flag_list_is_the_folders_engines(tmp_path):
    found, _ = read(DATA / "sglang-issue-25673")  # serve.txt: flags only, one per line; check_env names SGLang
    (settings,) = [s for s in found.settings if s.flags]
    assert settings.engine == "sglang" and settings.flags["tp"] == "8" and settings.flags["speculative_algo"] == "EAGLE"
    (tmp_path / "flags.txt").write_text("--tp 2\n--enable-metrics\n")
    found, notes = read(tmp_path)
    assert found.settings == [] and "declares no engine" in notes[0]


def test_fail_on_bites_ignores_what_depends_on_clients(audit_cli):
    # an SGLang line that makes nothing bite for sure, but leaves 'bites only if' entries
    serve = ("python -m sglang.launch_server --model-path m --enable-metrics --enable-cache-report "
             "--watchdog-timeout 900 --schedule-policy fcfs --cuda-graph-max-bs 64 --disaggregation-mode prefill")
    code, out, _ = audit_cli("--engine", "sglang==0.5.23", "--serve", serve, "--format", "json")
    (target,) = json.loads(out)["targets"]
    assert code == 1 and {g["status"] for g in target["gotchas"]} == {"bites only if"}
    assert audit_cli("--engine", "sglang==0.5.23", "--serve", serve, "--fail-on", "bites")[0] == 0
    code, _, _ = audit_cli("--engine", "sglang==0.5.23", "--serve", serve.replace(" --cuda-graph-max-bs 64", ""),
                           "--fail-on", "bites")
    assert code == 1  # the decode CUDA graphs sized by GPU memory bite when the flag is left alone


def test_a_value_the_release_refuses_is_noted_with_its_choices(audit_cli):
    code, out, _ = audit_cli(str(DATA / "gh-marieai-marie-ai"))
    assert ("--lora-backend flashinfer is not one of its choices in SGLang 0.5.23 (triton, csgmv, ascend, "
            "torch_native, triton_v2): the engine refuses to start") in out
    code, out, _ = audit_cli("--engine", "vllm==0.10.0", "--serve", "vllm serve m --dtype bfloat16 --kv-cache-dtype fp8")
    assert "choices" not in out
    code, out, _ = audit_cli("--engine", "vllm==0.10.0", "--serve", "vllm serve m --kv-cache-dtype nvfp4")
    assert "--kv-cache-dtype nvfp4 is not one of its choices in vLLM 0.10.0" in out


def test_two_serve_scripts_of_a_pinned_version_are_two_deployments(audit_cli, tmp_path):
    (tmp_path / "requirements.txt").write_text("vllm==0.10.0\n")
    (tmp_path / "a.sh").write_text("vllm serve m --enforce-eager\n")
    (tmp_path / "b.sh").write_text("vllm serve m --max-loras 4 --enable-lora\n")
    code, out, _ = audit_cli(str(tmp_path), "--format", "json")
    data = json.loads(out)
    assert [(t["version"], t["settings"].rsplit("/", 1)[1]) for t in data["targets"]] == [
        ("0.10.0", "a.sh:1"), ("0.10.0", "b.sh:1")]
    by = {t["settings"].rsplit("/", 1)[1]: {g["id"] for g in t["gotchas"]} for t in data["targets"]}
    assert "memory-cuda-graphs-outside-gpu-memory-utilization-budget" in by["b.sh:1"] - by["a.sh:1"]
    code, out, _ = audit_cli(str(tmp_path), "--serve", "vllm serve m", "--format", "json")
    data = json.loads(out)  # a serve line given on the command line wins over the files'
    (target,) = data["targets"]
    assert "memory-cuda-graphs-outside-gpu-memory-utilization-budget" in {g["id"] for g in target["gotchas"]}
    assert any("not used (audited with --serve)" in n for n in data["notes"])


def test_a_fifo_or_a_folder_given_as_a_file_is_refused_at_once(tmp_path):
    import os
    import threading

    fifo = tmp_path / "requirements.txt"
    os.mkfifo(fifo)
    done = []
    worker = threading.Thread(target=lambda: done.append(_refusal(fifo)), daemon=True)
    worker.start()
    worker.join(10)
    assert done and "not a regular file" in done[0]  # it never waits for a writer
    assert "not a regular file" in _refusal(tmp_path / "requirements.txt", kind="-r")
    assert "not a regular file" in _refusal(tmp_path, kind="-r")  # a folder given to -r


def _refusal(path, kind="PATH"):
    notes: list[str] = []
    try:
        if kind == "-r":
            deployment.from_file(path, PACKAGES, notes)
        else:
            deployment.read_path(path, PACKAGES, notes, NEWEST)
    except deployment.DeploymentError as exc:
        return str(exc)
    return ""
