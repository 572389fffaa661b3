"""Which engine versions a pasted environment report states: vLLM's `python -m vllm.collect_env` (`vllm
collect-env`), SGLang's `python -m sglang.check_env`, `sglang version`, `pip list` / `uv pip list` / `conda list`,
`pip freeze` and `pip show`. Read line by line, never executed.

What the reports print (their source, read release by release):

| report | releases | the engine's version | environment variables |
| --- | --- | --- | --- |
| vLLM collect_env | 0.8.0-0.8.5.post1 | `vLLM Version: X` | `NAME=value` lines after `GPU Topology:` |
| vLLM collect_env | 0.9.0-0.34.0 | `vLLM Version       : X` (padded) | `NAME=value` under `Environment Variables` |
| SGLang check_env | 0.4.0-0.5.23 | `sglang: X` (and `vllm: X`, or `Module Not Found`) | none |
| SGLang CLI | 0.5.11-0.5.23 | `sglang version: X` | none |

collect_env also lists `pip list --format=freeze` lines tagged `[pip3] name==X` and `conda list` lines tagged
`[conda] name X build channel`; its patterns (torch, numpy, nvidia...) leave the engines out, but a line that names
one is read. A dev build's version reads `0.10.1.dev12+gabc (git sha: abc)`: the first word is taken."""

from __future__ import annotations

import re

from packaging.utils import canonicalize_name

from ._versions import Installed, _by_package

_VERSION = re.compile(r"[0-9][0-9A-Za-z.+!_-]*")
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_NAME_WORD = re.compile(_NAME)
_TAG = re.compile(r"\[(?:pip3?|conda|uv)\] ")
_COLLECT_ENV_VERSION = re.compile(r"vLLM Version\s*:\s*(\S+)")
_CHECK_ENV = re.compile(rf"({_NAME}): (.+)")
_SGLANG_CLI = re.compile(r"sglang version: (\S+)")
_FREEZE = re.compile(rf"({_NAME})(?:\[[^\]]*\])?===?(\S+)")
_PIP_LIST_HEADER = re.compile(r"Package\s+Version(\s|$)")
_PIP_LIST_RULE = re.compile(r"-+( +-+)+ *")
_ENV_LINE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)")


def from_paste(text: str, name: str, packages: dict[str, str]) -> list[Installed] | None:
    """The engine versions a pasted environment report states (`Installed(engine, version, "name:LINE", name,
    LINE)`, each engine version once, in the order found); None when the text is none of these reports."""
    wanted = _by_package(packages)
    vllm_key = wanted.get("vllm")
    lines = [line.rstrip("\r") for line in text.split("\n")]
    recognised = False
    found: list[tuple[str, str, int]] = []
    show_name: str | None = None
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if len(line) > 4096:  # no report line is this long
            continue
        tagged = _TAG.match(line)
        if tagged:
            line = line[tagged.end():].strip()
            recognised = True
        if (m := _COLLECT_ENV_VERSION.match(line)) is not None:  # `vLLM Version: 0.10.1.dev12+gabc (git sha: abc`
            recognised = True
            if vllm_key is not None and _VERSION.fullmatch(m.group(1)):
                found.append((vllm_key, m.group(1), number))
            continue
        if line.startswith(("Collecting environment information", "PyTorch version", "PyTorch: ", "Python: ")):
            recognised = True
            continue
        if (m := _SGLANG_CLI.fullmatch(line)) is not None:
            recognised = True
            if "sglang" in wanted and _VERSION.fullmatch(m.group(1)):
                found.append((wanted["sglang"], m.group(1), number))
            continue
        if _PIP_LIST_HEADER.match(line):
            recognised = True
            continue
        if _PIP_LIST_RULE.fullmatch(line):
            continue
        if line.startswith("Name: "):
            show_name = canonicalize_name(line[6:].strip())
            continue
        if line.startswith("Version: ") and show_name is not None:
            recognised = True
            version = line[9:].strip()
            if show_name in wanted and _VERSION.fullmatch(version):
                found.append((wanted[show_name], version, number))
            show_name = None
            continue
        if (m := _FREEZE.fullmatch(line)) is not None:
            recognised = True
            engine = wanted.get(canonicalize_name(m.group(1)))
            if engine is not None and _VERSION.fullmatch(m.group(2)):
                found.append((engine, m.group(2), number))
            continue
        if (m := _CHECK_ENV.fullmatch(line)) is not None:  # `sglang: 0.4.6`, `vllm: Module Not Found`
            engine = wanted.get(canonicalize_name(m.group(1)))
            if engine is not None:
                recognised = True
                if _VERSION.fullmatch(m.group(2).strip()):
                    found.append((engine, m.group(2).strip(), number))
            continue
        words = line.split()
        if 2 <= len(words) <= 4 and _NAME_WORD.fullmatch(words[0]):  # pip list, uv pip list, conda list rows
            engine = wanted.get(canonicalize_name(words[0]))
            if engine is not None and _VERSION.fullmatch(words[1]):
                recognised = True
                found.append((engine, words[1], number))
    if not recognised:
        return None
    seen, result = set(), []
    for engine, version, number in found:
        if (engine, version) not in seen:
            seen.add((engine, version))
            result.append(Installed(engine, version, f"{name}:{number}", name, number))
    return result


def env_from_paste(text: str) -> dict[str, str]:
    """The environment variables a vLLM collect_env output lists (its `NAME=value` lines: vLLM's own variables and
    the TORCH/NCCL/CUDA... ones it reports; it leaves out names with secret, token, api, access or password);
    empty when the text lists none."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    start = None
    for index, line in enumerate(lines):
        stripped = line.strip()
        if stripped == "Environment Variables":  # 0.9.0 on: its own section
            start = index + 1
            break
        if start is None and stripped.startswith("vLLM Version"):  # 0.8.x: after the vLLM lines, at the end
            start = index + 1
    if start is None:
        return {}
    env: dict[str, str] = {}
    for line in lines[start:]:
        if line.startswith("=====") and env:
            break
        if len(line) <= 65536 and (m := _ENV_LINE.fullmatch(line)) is not None:
            env[m.group(1)] = m.group(2)
    return env
