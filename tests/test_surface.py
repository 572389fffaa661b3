"""The release surface: what the extractor reads from engine code (a table per kind, each row the code and the
item it must give), the surface file (round trip, refusals), the diff, and `verify`/`surface`/`diff` end to end
against a package index served on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from verifier.surface.diff import diff
from verifier.surface.extract import extract
from verifier.surface.model import ENV, FLAG, METRIC, NO_VALUE, REQUEST, Item, Surface
from verifier.surface.read import SurfaceSpec, matches
from verifier.surface.store import EngineSurfaces, ReleaseSurface, SurfaceError, decode, encode

from .conftest import SCHED_PY, VALID_ENTRY, run_cli, serve_index
from .index_server import make_sdist


def items(kind: str, files: dict[str, str], primary=()) -> dict[str, Item]:
    found = extract({kind: {p: t.encode() for p, t in files.items()}}, primary)
    return {i.name: i for i in found if i.kind == kind}


# --- flags ------------------------------------------------------------------------------------------------------

V08_ARGS = '''
from dataclasses import dataclass

@dataclass
class EngineArgs:
    gpu_memory_utilization: float = 0.90
    tensor_parallel_size: int = 1
    scheduling_policy: str = "fcfs"
    seed: int = SEED_DEFAULT

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument('--gpu-memory-utilization', type=float,
                            default=EngineArgs.gpu_memory_utilization, help='The fraction of GPU memory.')
        parser.add_argument('--tensor-parallel-size', '-tp', type=int, default=EngineArgs.tensor_parallel_size)
        parser.add_argument('--enforce-eager', action='store_true', help='Always use eager mode.')
        parser.add_argument('--no-log-stats', action='store_false', dest='log_stats')
        parser.add_argument('--scheduling-policy', choices=['fcfs', 'priority'],
                            default=EngineArgs.scheduling_policy)
        parser.add_argument('--seed', type=int, default=EngineArgs.seed)
        parser.add_argument('--max-model-len', type=int, default=compute_len())
        parser.add_argument('model_tag', help='positional: not a flag')

SEED_DEFAULT = 0
'''

CONFIG = '''
from typing import Literal
from pydantic import Field

@config
class CacheConfig:
    gpu_memory_utilization: float = Field(default=0.92, gt=0, le=1)
    """The fraction of GPU memory to be used for the model executor."""
    enable_prefix_caching: bool = True
    """Whether to enable prefix caching."""
    cache_dtype: Literal["auto", "fp8", "fp8_e5m2"] = "auto"
    """Data type for kv cache storage."""
    sizes: list[int] = Field(default_factory=list)
    hash_algo: str = field(default_factory=lambda: "sha256")
    policy: SchedulerPolicy = "fcfs"
    limits: dict[str, int] = field(default_factory=dict)
    impl: str = ModelImpl.AUTO.value

SchedulerPolicy = Literal["fcfs", "priority"]

class ModelImpl(str, enum.Enum):
    AUTO = "auto"
    VLLM = "vllm"
'''

V09_ARGS = '''
from vllm.config import CacheConfig

@dataclass
class EngineArgs:
    gpu_memory_utilization: float = CacheConfig.gpu_memory_utilization

    @staticmethod
    def add_cli_args(parser):
        cache_kwargs = get_kwargs(CacheConfig)
        cache_group = parser.add_argument_group(title="CacheConfig")
        cache_group.add_argument("--gpu-memory-utilization", "--device-memory-utilization",
                                 dest="gpu_memory_utilization", **cache_kwargs["gpu_memory_utilization"])
        cache_group.add_argument("--enable-prefix-caching",
                                 **{**cache_kwargs["enable_prefix_caching"], "default": None})
        cache_group.add_argument("--kv-cache-dtype", **cache_kwargs["cache_dtype"])
        cache_group.add_argument("--sizes", **cache_kwargs["sizes"])
        cache_group.add_argument("--hash-algo", **cache_kwargs["hash_algo"])
        cache_group.add_argument("--scheduling-policy", **cache_kwargs["policy"])
        cache_group.add_argument("--limits", default=cast(dict, get_field(CacheConfig, "limits")))
        cache_group.add_argument("--impl", default=ModelImpl.AUTO.value)
        cache_group.add_argument("--token", default=cache_kwargs["hash_algo"]["default"])
'''

FRONTEND = '''
class BaseFrontendArgs:
    host: str | None = None
    """Host name."""

    @classmethod
    def add_cli_args(cls, parser):
        frontend_kwargs = get_kwargs(cls)
        frontend_kwargs["middleware"]["default"] = []
        for key, value in frontend_kwargs.items():
            parser.add_argument(f"--{key.replace('_', '-')}", **value)


class FrontendArgs(BaseFrontendArgs):
    port: int = 8000
    """Port number."""
    middleware: list[str] = field(default_factory=lambda: ["x"])
    log_config_file: str | None = envs.VLLM_LOGGING_CONFIG_PATH


def make_arg_parser(parser):
    parser = FrontendArgs.add_cli_args(parser)
'''

SGLANG_FIELDS = '''
class Schedule(msgspec.Struct):
    schedule_policy: A[str, Arg(help="The scheduling policy of the requests.",
                                choices=["lpm", "random", "fcfs"])] = "fcfs"
    mem_fraction_static: A[Optional[float], "The fraction of the memory used for static allocation."] = None
    enable_metrics: A[bool, "Enable log prometheus metrics."] = False
    tp_size: A[int, Arg(help="The tensor parallelism size.", aliases=["--tensor-parallel-size"])] = 1
    internal: A[int, Arg(help="Not on the command line.", no_cli=True)] = 3
    plain: int = 4
'''

SGLANG_SERVER = '''
class ServerArgs:
    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--sampling-backend", type=str, default=_declared_default("sampling_backend"))

_INPUT_NAMESPACES = [Schedule, Serving]
_annotations, _defaults, _namespaces = collect_input_fields(_INPUT_NAMESPACES)
'''

SGLANG_SERVING = '''
class Serving(msgspec.Struct):
    port: A[int, "The port of the HTTP server."] = 30000
    sampling_backend: A[str, Arg(help="Sampling kernels.", no_cli=True)] = "flashinfer"
'''


@pytest.mark.parametrize("name, default, value, aliases, choices", [
    ("--gpu-memory-utilization", "0.90", 0.9, (), ()),  # EngineArgs field, through default=EngineArgs.x
    ("--tensor-parallel-size", "1", 1, ("-tp",), ()),
    ("--enforce-eager", "False", False, (), ()),  # store_true
    ("--no-log-stats", "True", True, (), ()),  # store_false
    ("--scheduling-policy", '"fcfs"', "fcfs", (), ("fcfs", "priority")),
    ("--seed", "0", 0, (), ()),  # a module constant
    ("--max-model-len", "compute_len()", NO_VALUE, (), ()),  # computed: shown as the expression, never guessed
])
def test_plain_add_argument_flags(name, default, value, aliases, choices):
    found = items(FLAG, {"vllm/engine/arg_utils.py": V08_ARGS})
    item = found[name]
    assert (item.default, item.value, item.aliases, item.choices) == (default, value, aliases, choices)
    assert item.path == "vllm/engine/arg_utils.py" and item.line > 0
    assert "model_tag" not in found and "--model-tag" not in found
    assert found["--max-model-len"].computed and not found["--seed"].computed


@pytest.mark.parametrize("name, default, value, aliases, choices", [
    # EngineArgs.x = CacheConfig.x, and **cache_kwargs["x"]: the config class's Field(default=...)
    ("--gpu-memory-utilization", "0.92", 0.92, ("--device-memory-utilization",), ()),
    # **{**kwargs["x"], "default": None}: the override wins; a bool field also takes --no-x
    ("--enable-prefix-caching", "None", None, ("--no-enable-prefix-caching",), ()),
    ("--kv-cache-dtype", '"auto"', "auto", (), ("auto", "fp8", "fp8_e5m2")),  # Literal choices
    ("--sizes", "[]", [], (), ()),  # default_factory=list
    ("--hash-algo", '"sha256"', "sha256", (), ()),  # default_factory=lambda: literal
    ("--scheduling-policy", '"fcfs"', "fcfs", (), ("fcfs", "priority")),  # choices through a Literal alias
    ("--limits", "{}", {}, (), ()),  # cast(T, get_field(Cls, "field"))
    ("--impl", '"auto"', "auto", (), ()),  # an enum member's value
    ("--token", '"sha256"', "sha256", (), ()),  # kwargs["field"]["default"]
])
def test_flags_from_config_classes(name, default, value, aliases, choices):
    found = items(FLAG, {"vllm/engine/arg_utils.py": V09_ARGS, "vllm/config/cache.py": CONFIG})
    item = found[name]
    assert (item.default, item.value, item.aliases, item.choices) == (default, value, aliases, choices)
    assert found["--gpu-memory-utilization"].detail == "CacheConfig.gpu_memory_utilization"


def test_a_loop_over_a_classmethods_kwargs_makes_a_flag_of_every_field_of_the_class_called():
    found = items(FLAG, {"vllm/entrypoints/common/cli_args.py": FRONTEND})
    assert set(found) == {"--host", "--port", "--middleware", "--log-config-file"}
    assert (found["--port"].default, found["--port"].line) == ("8000", FRONTEND[:FRONTEND.index("port:")].count("\n") + 1)
    assert found["--port"].help == "Port number."
    assert found["--middleware"].value == []  # frontend_kwargs["middleware"]["default"] = []
    assert found["--log-config-file"].computed and found["--log-config-file"].default == "envs.VLLM_LOGGING_CONFIG_PATH"


def test_sglang_annotated_fields_and_their_namespaces():
    found = items(FLAG, {"python/sglang/srt/server_args.py": SGLANG_SERVER,
                         "python/sglang/srt/arg_groups/fields/schedule.py": SGLANG_FIELDS,
                         "python/sglang/srt/arg_groups/fields/serving.py": SGLANG_SERVING})
    assert found["--schedule-policy"].choices == ("lpm", "random", "fcfs")
    assert found["--schedule-policy"].value == "fcfs"
    assert found["--mem-fraction-static"].value is None and found["--mem-fraction-static"].help.startswith("The fraction")
    assert found["--enable-metrics"].value is False
    assert found["--tp-size"].aliases == ("--tensor-parallel-size",)
    assert found["--port"].value == 30000 and found["--port"].path.endswith("serving.py")
    assert "--internal" not in found and "--plain" not in found  # no_cli, and a field without A[...]
    # a manual add_argument whose default names a field's declared default
    assert found["--sampling-backend"].value == "flashinfer"


def test_flag_lookup_takes_every_spelling():
    found = extract({FLAG: {"a.py": V08_ARGS.encode()}})
    surface = Surface("vllm", "1", {i.key: i for i in found})
    assert surface.flag("-tp").name == "--tensor-parallel-size"
    assert surface.flag("--tensor_parallel_size").name == "--tensor-parallel-size"
    assert surface.flag("--not-a-flag") is None


# --- environment variables ----------------------------------------------------------------------------------------

VLLM_ENVS = '''
import os

environment_variables: dict[str, Callable[[], Any]] = {
    # Target device of vLLM,
    # supporting [cuda (by default), rocm, cpu]
    "VLLM_TARGET_DEVICE": lambda: os.getenv("VLLM_TARGET_DEVICE", "cuda").lower(),
    "VLLM_USE_V1": lambda: bool(int(os.getenv("VLLM_USE_V1", "1"))),
    "VLLM_HOST_IP": lambda: os.getenv("VLLM_HOST_IP", ""),
    "VLLM_PORT": get_vllm_port,
    "VLLM_NO_DEPRECATION_WARNING": lambda: "VLLM_NO_DEPRECATION_WARNING" in os.environ,
    "VLLM_CACHE_ROOT": lambda: os.path.expanduser(os.getenv("VLLM_CACHE_ROOT", os.path.join(root(), "vllm"))),
    "VLLM_ATTENTION_BACKEND": env_with_choices("VLLM_ATTENTION_BACKEND", None, ["FLASH_ATTN"]),
    "VLLM_NCCL_SO_PATH": lambda: os.environ.get("VLLM_NCCL_SO_PATH", None),
}
'''

SGLANG_ENVIRON = '''
class Envs:
    SGLANG_ENABLE_TORCH_COMPILE = EnvBool(False)
    SGLANG_PORT = EnvInt(30000)
    not_a_variable = EnvBool(True)
'''

SGLANG_SCATTERED = '''
import os
def f():
    if get_bool_env_var("SGLANG_ENABLE_TORCH_COMPILE", "true"):
        pass
    x = get_int_env_var("SGLANG_CHUNK", 8192)
    y = os.environ["CUDA_VISIBLE_DEVICES"]
    os.environ["SGLANG_SET_FOR_CHILDREN"] = "1"
    z = self.getenv("NOT_READ_FROM_THE_ENVIRONMENT", "x")
'''


@pytest.mark.parametrize("name, default, value", [
    ("VLLM_TARGET_DEVICE", '"cuda"', "cuda"),
    ("VLLM_USE_V1", '"1"', "1"),
    ("VLLM_HOST_IP", '""', ""),
    ("VLLM_NO_DEPRECATION_WARNING", "unset", False),
    ("VLLM_ATTENTION_BACKEND", "None", None),
    ("VLLM_NCCL_SO_PATH", "None", None),
])
def test_vllm_environment_table(name, default, value):
    found = items(ENV, {"vllm/envs.py": VLLM_ENVS}, ["vllm/envs.py"])
    assert (found[name].default, found[name].value) == (default, value)
    assert found["VLLM_TARGET_DEVICE"].help == "Target device of vLLM, supporting [cuda (by default), rocm, cpu]"
    assert found["VLLM_CACHE_ROOT"].computed  # its default is a path computed at run time
    assert found["VLLM_PORT"].computed and found["VLLM_PORT"].default == "get_vllm_port"


def test_sglang_environment_class_wins_over_scattered_reads():
    found = items(ENV, {"python/sglang/srt/environ.py": SGLANG_ENVIRON, "python/sglang/srt/a.py": SGLANG_SCATTERED},
                  ["python/sglang/srt/environ.py"])
    assert found["SGLANG_ENABLE_TORCH_COMPILE"].value is False  # Envs, not the scattered read's "true"
    assert found["SGLANG_ENABLE_TORCH_COMPILE"].path.endswith("environ.py")
    assert found["SGLANG_PORT"].value == 30000
    assert found["SGLANG_CHUNK"].value == 8192
    assert found["CUDA_VISIBLE_DEVICES"].default is None
    assert "not_a_variable" not in found
    assert "SGLANG_SET_FOR_CHILDREN" not in found  # set for child processes, not read
    assert "NOT_READ_FROM_THE_ENVIRONMENT" not in found


# --- metrics and request fields -----------------------------------------------------------------------------------

METRICS = '''
class PrometheusStatLogger:
    def __init__(self):
        self.counter_num_preempted_reqs = self._counter_cls(
            name="vllm:num_preemptions",
            documentation="Cumulative number of preemption from the engine.",
            labelnames=labelnames)
        self.gauge = prometheus_client.Gauge(name="vllm:num_requests_running", documentation="Running.",
                                             labelnames=["model_name"])
        self.hist = Histogram("vllm:e2e_request_latency_seconds", "End to end latency.")
        logger.info("not a metric: %s", name)
'''

PROTOCOL = '''
class ChatCompletionRequest(OpenAIBaseModel):
    model: str | None = None
    max_tokens: int | None = Field(default=None, deprecated="max_tokens is deprecated")
    n: int = 1
    logprobs: bool | None = False
    cache_salt: str | None = Field(default=None, description="Salt for the prefix cache.")
    messages: list[dict]

class NotARequestModel(OpenAIBaseModel):
    field_: int = 2
'''


def test_metrics():
    found = items(METRIC, {"vllm/v1/metrics/loggers.py": METRICS})
    assert set(found) == {"vllm:num_preemptions", "vllm:num_requests_running", "vllm:e2e_request_latency_seconds"}
    assert found["vllm:num_preemptions"].detail == "counter"
    assert found["vllm:num_requests_running"].detail == "gauge (model_name)"
    assert found["vllm:e2e_request_latency_seconds"].help == "End to end latency."


def test_request_fields():
    found = items(REQUEST, {"vllm/entrypoints/openai/protocol.py": PROTOCOL})
    assert found["ChatCompletionRequest.n"].value == 1
    assert found["ChatCompletionRequest.logprobs"].value is False
    assert found["ChatCompletionRequest.max_tokens"].deprecated
    assert found["ChatCompletionRequest.cache_salt"].help == "Salt for the prefix cache."
    assert found["ChatCompletionRequest.messages"].default is None  # required
    assert not any(name.startswith("NotARequestModel") for name in found)


def test_broken_code_gives_what_it_can_and_never_raises():
    found = extract({FLAG: {"a.py": b"parser.add_argument('--x', default=1)\ndef broken(:\n  \x00\xff"},
                     ENV: {"b.py": b"os.getenv(\"X_Y\", "}})
    assert [i.name for i in found if i.kind == FLAG] == ["--x"]


# --- patterns, the file, the diff ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, path, expected", [
    ("vllm/config/*.py", "vllm/config/cache.py", True),
    ("vllm/config/*.py", "vllm/config/sub/cache.py", False),
    ("vllm/**/protocol.py", "vllm/protocol.py", True),
    ("vllm/**/protocol.py", "vllm/a/b/protocol.py", True),
    ("vllm/envs.py", "vllm/envsXpy", False),
])
def test_path_patterns(pattern, path, expected):
    assert matches(pattern, path) is expected


def _record(version: str, found: list[Item]) -> ReleaseSurface:
    return ReleaseSurface(version, f"sha256:{version}", "2026-01-01T00:00:00Z", "0", {"a.py": "0" * 64}, found,
                          extractor=1)


def test_the_file_round_trips_and_shares_bodies():
    found = extract({FLAG: {"a.py": V08_ARGS.encode()}})
    found = [Item(**{**i.__dict__, "path": "a.py"}) for i in found]
    surfaces = EngineSurfaces("vllm", {"0.1.0": _record("0.1.0", found), "0.2.0": _record("0.2.0", found)})
    text = encode(surfaces)
    back = decode(json.loads(text), "vllm", "f.json")
    assert back.surface("0.2.0").items == surfaces.surface("0.2.0").items
    assert encode(back) == text  # deterministic
    assert text.count('"--seed"') == 1  # one body for both releases


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format=99), "format"),
    (lambda d: d.update(engine="sglang"), "engine"),
    (lambda d: d["releases"]["0.1.0"]["rows"].append(["ffffffffffff", 0, 1]), "rows[7]"),
    (lambda d: d["releases"]["0.1.0"]["rows"].append([d["releases"]["0.1.0"]["rows"][0][0], 5, 1]), "rows[7]"),
    (lambda d: d["items"].update({"0123456789ab": {"kind": "flag", "name": "--x", "value": {"a": object}}}), "value"),
    (lambda d: d["items"].update({"zz": {}}), "not an item id"),
])
def test_a_bad_file_is_refused_with_its_place(mutate, message):
    found = [Item(**{**i.__dict__, "path": "a.py"}) for i in extract({FLAG: {"a.py": V08_ARGS.encode()}})]
    data = json.loads(encode(EngineSurfaces("vllm", {"0.1.0": _record("0.1.0", found)})))
    try:
        mutate(data)
    except TypeError:
        pass
    with pytest.raises(SurfaceError, match=message.replace("[", r"\[").replace("]", r"\]")):
        decode(data, "vllm", "f.json")


def _surface(version: str, *found: Item) -> Surface:
    return Surface("vllm", version, {i.key: i for i in found})


def test_diff_pairs_renames_and_compares_defaults_by_value():
    older = _surface("1", Item(FLAG, "--tensor-parallel-size", "1", 1, ("--tp-size",)),
                     Item(FLAG, "--gpu-memory-utilization", "0.90", 0.9),
                     Item(FLAG, "--max-num-seqs", "256", 256),
                     Item(FLAG, "--old", "None", None, help="Gone for good, with nothing like it."),
                     Item(ENV, "VLLM_X", '"1"', "1", help="A variable documented at some length."))
    newer = _surface("2", Item(FLAG, "--tp-size", "1", 1, ("--tensor-parallel-size",)),
                     Item(FLAG, "--gpu-memory-utilization", "0.9", 0.9),
                     Item(FLAG, "--max-num-seqs", "None", None),
                     Item(FLAG, "--new", "False", False),
                     Item(ENV, "VLLM_Y", '"1"', "1", help="A variable documented at some length."))
    result = diff(older, newer)
    assert {(c.what, c.name) for c in result.changes} == {
        ("renamed", "--tp-size"), ("changed", "--max-num-seqs"), ("removed", "--old"), ("added", "--new"),
        ("renamed", "VLLM_Y")}
    assert result.of("changed")[0].fields == ("default",)


# --- end to end ---------------------------------------------------------------------------------------------------

ARG_UTILS_1 = V08_ARGS
ARG_UTILS_2 = V08_ARGS.replace("gpu_memory_utilization: float = 0.90", "gpu_memory_utilization: float = 0.92") \
    .replace("'--tensor-parallel-size', '-tp'", "'--tensor-parallel-size', '-tp', '--tp'") \
    .replace('scheduling_policy: str = "fcfs"', 'scheduling_policy: str = "priority"')
ENVS_1 = 'import os\nenvironment_variables = {\n    "VLLM_USE_V1": lambda: os.getenv("VLLM_USE_V1", "1"),\n}\n'


def _sdist(version: str, arg_utils: str) -> bytes:
    return make_sdist({"vllm/engine/arg_utils.py": arg_utils.encode(), "vllm/envs.py": ENVS_1.encode(),
                       "pkg/sched.py": SCHED_PY.encode(), "pkg/metrics.py": b'NAME = "vllm:num_preemptions"\n', "setup.py": b""},
                      top=f"vllm-{version}")


@pytest.fixture
def index(monkeypatch, tmp_path):
    with serve_index(monkeypatch, tmp_path, {"0.1.0": _sdist("0.1.0", ARG_UTILS_1),
                                             "0.2.0": _sdist("0.2.0", ARG_UTILS_2)}) as server:
        yield server


def test_verify_records_each_releases_surface_and_diff_shows_the_change(kb, index, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    code, out, err = run_cli(capsys, "verify", "--engine", "vllm")
    assert code in (0, 1), err
    stored = json.loads((kb / "ledger" / "surface" / "vllm.json").read_text())
    assert sorted(stored["releases"]) == ["0.1.0", "0.2.0"]
    assert stored["releases"]["0.1.0"]["identity"].startswith("sha256:")

    code, out, err = run_cli(capsys, "surface", "vllm", "0.1.0", "--kind", "flags")
    assert code == 0, err
    field_line = ARG_UTILS_1.split("\n").index("    gpu_memory_utilization: float = 0.90") + 1
    flag_line = next(n for n, t in enumerate(ARG_UTILS_1.split("\n"), 1) if "'--gpu-memory-utilization'" in t)
    # the default's own line (the EngineArgs field), then where the flag is registered
    assert (f"--gpu-memory-utilization  default 0.90 (vllm/engine/arg_utils.py:{field_line})  "
            f"vllm/engine/arg_utils.py:{flag_line}") in out

    code, out, err = run_cli(capsys, "surface", "vllm", "0.2.0", "--kind", "env", "--format", "json")
    data = json.loads(out)
    assert [(i["name"], i["value"]) for i in data["items"]] == [("VLLM_USE_V1", "1")]

    code, out, err = run_cli(capsys, "diff", "vllm", "0.1.0", "0.2.0")
    assert code == 0, err
    assert (f"* --gpu-memory-utilization: default 0.90 (vllm/engine/arg_utils.py:{field_line}) -> 0.92 "
            f"(vllm/engine/arg_utils.py:{field_line})") in out
    assert "spellings --tensor-parallel-size, -tp -> --tensor-parallel-size, -tp, --tp" in out

    code, out, err = run_cli(capsys, "diff", "vllm", "0.1.0", "0.2.0", "--format", "json")
    changes = json.loads(out)["changes"]
    assert {c["name"] for c in changes} == {"--gpu-memory-utilization", "--tensor-parallel-size",
                                            "--scheduling-policy"}

    # a second run reads nothing again: the surfaces are current
    before = (kb / "ledger" / "surface" / "vllm.json").read_text()
    code, out, err = run_cli(capsys, "verify", "--engine", "vllm", "--new")
    assert (kb / "ledger" / "surface" / "vllm.json").read_text() == before


def test_surface_of_a_release_not_recorded_is_read_from_the_index(kb, index, capsys):
    code, out, err = run_cli(capsys, "surface", "vllm", "0.2.0", "--kind", "flags", "--format", "markdown")
    assert code == 0, err
    assert "| `--gpu-memory-utilization` | `0.92` |" in out
    assert "not in the ledger's surface file" in err
    assert not (kb / "ledger" / "surface").exists()  # nothing is recorded by `surface`


def test_surface_usage_errors(kb, capsys):
    assert run_cli(capsys, "surface", "vllm", "0.1.0", "--kind", "colours")[0] == 2
    (kb / "ledger" / "surface").mkdir(parents=True)
    (kb / "ledger" / "surface" / "vllm.json").write_text("{not json")
    code, out, err = run_cli(capsys, "surface", "vllm", "0.1.0")
    assert code == 2 and "vllm.json:1: not valid JSON" in err


def test_registry_spec_selects_files_by_kind(kb_root):
    from verifier import kb as kb_module

    spec = SurfaceSpec.of(kb_module.load(kb_root).engines["vllm"])
    chosen = spec.select(["vllm/envs.py", "vllm/config/cache.py", "vllm/engine/arg_utils.py", "README.md"])
    assert chosen["env"] == ["vllm/envs.py"]
    assert chosen["flag"] == ["vllm/config/cache.py", "vllm/engine/arg_utils.py"]
    assert "vllm/engine/arg_utils.py" in spec.literal_paths()


def test_the_report_of_a_run_lists_the_new_releases_surface_changes(kb, index, capsys, tmp_path):
    run_cli(capsys, "verify", "--engine", "vllm", "--release", "0.1.0")
    report = tmp_path / "report.md"
    code, out, err = run_cli(capsys, "verify", "--engine", "vllm", "--new", "--report", str(report))
    text = report.read_text()
    assert "## Release surface: vLLM 0.1.0 → 0.2.0" in text
    assert "| changed (default) | flag | `--gpu-memory-utilization` | 0.90 (vllm/engine/arg_utils.py:" in text


G501_ENTRY = VALID_ENTRY.replace("title: An example gotcha that is well-formed",
                                 "title: An example gotcha that --tp and VLLM_USE_V1 do not fix") \
    .replace("Add capacity.", "Add capacity, or set --gpu-memory-utilization lower, or --no-such-flag.")


def test_lint_names_a_flag_that_a_release_where_the_entry_holds_does_not_have(kb, index, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    run_cli(capsys, "verify", "--engine", "vllm")
    (kb / "gotchas" / "ops-example.md").write_text(G501_ENTRY)
    code, out, err = run_cli(capsys, "check", "--engine", "vllm", "--format", "json")
    problems = [r for r in json.loads(out) if r.get("code") == "G501"]
    lines = G501_ENTRY.split("\n")
    assert {(p["line"], p["message"].split(" does ")[0].split(" exists ")[0]) for p in problems} == {
        (lines.index("title: An example gotcha that --tp and VLLM_USE_V1 do not fix") + 1, "flag --tp"),
        (next(i for i, t in enumerate(lines) if "--no-such-flag" in t) + 1, "flag --no-such-flag")}
    tp = next(p for p in problems if "--tp " in p["message"])
    assert "does not exist in vllm 0.1.0, where the entry holds" in tp["message"]
    assert code == 1
    # offline lint does not read the ledger
    assert run_cli(capsys, "check", "--offline")[0] == 0


CONDITIONED = VALID_ENTRY.replace("checks:\n", "when:\n  - flag: --scheduling-policy\n    is: [fcfs]\nchecks:\n", 1)


def test_a_condition_without_a_default_takes_the_codes_default_at_each_release(kb, index, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(CONDITIONED)
    run_cli(capsys, "verify", "--engine", "vllm")
    code, out, err = run_cli(capsys, "audit", "--kb", str(kb), "--engine", "vllm==0.1.0", "--serve", "vllm serve m",
                             "--format", "json")
    (target,) = json.loads(out)["targets"]
    (found,) = [g for g in target["gotchas"] if g["id"] == "ops-example"]
    assert found["status"] == "bites"  # 0.1.0's code defaults to fcfs
    code, out, err = run_cli(capsys, "audit", "--kb", str(kb), "--engine", "vllm==0.2.0", "--serve", "vllm serve m")
    assert "ops-example" in out and "--scheduling-policy is not set: default priority in 0.2.0, " \
                                    "vllm/engine/arg_utils.py:" in out  # spared, with the line that says why
    code, out, err = run_cli(capsys, "audit", "--kb", str(kb), "--engine", "vllm==0.2.0")
    assert "only if --scheduling-policy is fcfs (default priority in 0.2.0, vllm/engine/arg_utils.py:" in out


def test_a_written_default_the_code_contradicts_is_G502(kb, index, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(CONDITIONED)
    run_cli(capsys, "verify", "--engine", "vllm")
    written = CONDITIONED.replace("    is: [fcfs]\n", "    is: [fcfs]\n    default: fcfs\n    witness: zero\n")
    (kb / "gotchas" / "ops-example.md").write_text(written)
    code, out, err = run_cli(capsys, "check", "--engine", "vllm", "--format", "json")
    (problem,) = [r for r in json.loads(out) if r.get("code") == "G502"]
    assert problem["line"] == written.split("\n").index("  - flag: --scheduling-policy") + 1
    assert "default 'fcfs', but the code of vllm 0.2.0 gives 'priority' (vllm/engine/arg_utils.py:" in problem["message"]
    # a default without its witness is G202
    (kb / "gotchas" / "ops-example.md").write_text(written.replace("    witness: zero\n", ""))
    code, out, err = run_cli(capsys, "check", "--offline", "--format", "json")
    assert [r["code"] for r in json.loads(out) if r.get("code", "").startswith("G")] == ["G202"]


def test_a_condition_on_a_flag_a_release_does_not_have_is_G503(kb, index, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(CONDITIONED)
    run_cli(capsys, "verify", "--engine", "vllm")
    missing = CONDITIONED.replace("    is: [fcfs]\n", "    is: [fcfs]\n  - any:\n      - flag: --not-a-flag\n"
                                  "        set: true\n      - env: VLLM_NOT_READ\n        is: ['1']\n"
                                  "      - env: HOME\n        set: true\n")
    (kb / "gotchas" / "ops-example.md").write_text(missing)
    code, out, err = run_cli(capsys, "check", "--engine", "vllm", "--format", "json")
    problems = [r for r in json.loads(out) if r.get("code") == "G503"]
    lines = missing.split("\n")
    assert [p["line"] for p in problems] == [lines.index("      - flag: --not-a-flag") + 1,
                                             lines.index("      - env: VLLM_NOT_READ") + 1]  # HOME is not vLLM's
    assert "the flag --not-a-flag: vllm 0.1.0-0.2.0 does not have it" in problems[0]["message"]
    bounded = missing.replace("  - any:\n", "  - since: 9.0.0\n    any:\n")
    (kb / "gotchas" / "ops-example.md").write_text(bounded)
    code, out, err = run_cli(capsys, "check", "--engine", "vllm", "--format", "json")
    assert not [r for r in json.loads(out) if r.get("code") == "G503"]  # bounded to where it exists (none here)


def test_audit_says_which_settings_the_release_does_not_have(kb, index, capsys):
    (kb / "gotchas" / "ops-example.md").write_text(VALID_ENTRY)
    run_cli(capsys, "verify", "--engine", "vllm")
    serve = "VLLM_USE_V1=1 VLLM_NOT_READ=1 HOME=/x vllm serve m --seed 1 --not-a-flag --enforce-eager"
    code, out, err = run_cli(capsys, "audit", "--kb", str(kb), "--engine", "vllm==0.1.0", "--serve", serve)
    notes = [line for line in out.splitlines() if line.startswith("note: --serve")]
    assert notes == ["note: --serve: --not-a-flag is not a flag of vLLM 0.1.0 (nor any tracked release)",
                     "note: --serve: vLLM 0.1.0 does not read VLLM_NOT_READ (nor any tracked release)"]


def test_diff_names_an_unchanged_item_at_both_releases_with_the_entries_that_name_it(kb, index, capsys):
    entry = VALID_ENTRY.replace("Add capacity.", "Add capacity, or lower --enforce-eager.")
    (kb / "gotchas" / "ops-example.md").write_text(entry)
    run_cli(capsys, "verify", "--engine", "vllm")
    code, out, err = run_cli(capsys, "diff", "vllm", "0.1.0", "0.2.0", "--name", "enforce-eager", "--name", "nope")
    flag_line = next(n for n, t in enumerate(ARG_UTILS_1.split("\n"), 1) if "'--enforce-eager'" in t)
    assert (f"  --enforce-eager: unchanged; 0.1.0: False (vllm/engine/arg_utils.py:{flag_line}); "
            f"0.2.0: False (vllm/engine/arg_utils.py:{flag_line})") in out
    assert "    in ops-example: holds in 0.1.0, holds in 0.2.0" in out
    assert "  nope: in neither release" in out
