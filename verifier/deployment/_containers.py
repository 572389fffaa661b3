"""Engine versions and settings where containers declare them: Dockerfiles, docker-compose files, Kubernetes
and KServe manifests and Helm values, shell scripts and `docker run` command lines.

An engine's official image (`vllm/vllm-openai:v0.14.0`, `lmsysorg/sglang:v0.4.6.post1-cu124`) gives the version
by its tag, llama.cpp's (`ghcr.io/ggml-org/llama.cpp:server-cuda-b4763`) its build; `pip install vllm==X` in a
Dockerfile's RUN gives it too. The serve command (a Dockerfile's ENTRYPOINT and CMD, a service's `command`, a
container's `command` and `args`, a script's `vllm serve` or `llama-server` line, what follows the image in
`docker run`) gives the flags; the environment (`ENV`, `environment:`, `env:`, `-e`, and a llama.cpp server
image's own `LLAMA_ARG_HOST`) gives the variables. Nothing is run: variables are expanded only from the file's
own ARG, ENV and assignments, and a value still holding `$` is a setting audit cannot compare (UNKNOWN).

The images are named here, not in the engine registry, because only audit reads them; each engine's image runs
its serve entrypoint, so arguments after a vLLM image are vLLM flags; a llama.cpp image's entrypoint is its tag's
kind's (server: llama-server; full: tools.sh, which runs llama-server for `--server`; light: llama-cli)."""

from __future__ import annotations

import json
import re
import shlex
from collections import ChainMap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import yaml

from ._read import DeploymentError, _read_text
from ._settings import UNKNOWN, Settings, parse_tokens, program_of
from ._versions import Installed, _by_package, requirement_found

#: engine key -> its official images (repository paths, without a registry host).
IMAGES = {"vllm": ("vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu"), "sglang": ("lmsysorg/sglang",),
          "llama-cpp": ("ggml-org/llama.cpp", "ggerganov/llama.cpp")}
#: llama.cpp's images are tagged KIND[-VARIANT][-bBUILD] (.github/workflows/docker.yml: `server`, `server-cuda`,
#: `server-cuda-b4763`, `full-vulkan`); each kind's entrypoint (.devops/*.Dockerfile), and the variable the server
#: and full images set (`ENV LLAMA_ARG_HOST=0.0.0.0`, in every sampled release from 0.3.0 to 0.3.36).
_LLAMA_TAG = re.compile(r"(?P<kind>server|full|light)(?P<rest>(?:-[A-Za-z0-9._]+)*)")
_LLAMA_ENTRYPOINTS = {"server": ["/app/llama-server"], "full": ["/app/tools.sh"], "light": ["/app/llama-cli"]}
_LLAMA_IMAGE_ENV = {"LLAMA_ARG_HOST": "0.0.0.0"}
_TAG_VERSION = re.compile(r"v?(\d+\.\d+(?:\.\d+)*(?:\.post\d+|(?:a|b|rc)\d+)?)(?:[-_+].*)?")


@dataclass
class Found:
    """What one file declares: engine versions (each with the settings of its container, when it has some) and
    settings with no version of their own."""

    installed: list[Installed] = field(default_factory=list)
    settings: list[Settings] = field(default_factory=list)
    #: The files of a folder that may declare an engine and could not be read (each a message naming the file):
    #: the audit is then incomplete, and says so in its exit code.
    unread: list[str] = field(default_factory=list)


def image_engine(reference: str) -> tuple[str | None, str | None, str | None]:
    """(engine, tag, digest) of an image reference; engine None for an image that is not an engine's."""
    reference = reference.strip()
    digest = None
    if "@" in reference:
        reference, digest = reference.split("@", 1)
    name, tag = reference, None
    last = reference.rsplit("/", 1)[-1]
    if ":" in last:
        name, tag = reference.rsplit(":", 1)
    parts = name.split("/")
    if len(parts) > 1 and ("." in parts[0] or ":" in parts[0] or parts[0] == "localhost"):
        parts = parts[1:]  # a registry host: the image is the same whichever registry serves it
    if parts and parts[0] == "library":
        parts = parts[1:]
    path = "/".join(parts).lower()
    for engine, images in IMAGES.items():
        if path in images:
            return engine, tag, digest
    return None, tag, digest


def llama_tag(tag: str | None) -> tuple[str | None, str | None]:
    """(kind, build) of a llama.cpp image tag: `server-cuda-b4763` is ("server", "b4763"); `server` is ("server",
    None); a tag of no kind is (None, None)."""
    match = _LLAMA_TAG.fullmatch(tag or "")
    if match is None:
        return None, None
    parts = [p for p in match.group("rest").split("-") if p]
    build = parts[-1] if parts and re.fullmatch(r"b\d+", parts[-1]) else None
    return match.group("kind"), build


def _llama_image_version(tag: str | None, digest: str | None, where: str, path: Path | None, line: int | None,
                         notes: list[str], newest: dict[str, str]) -> Installed | None:
    """The llama.cpp build an image tag names (`server-b4763`: build 4763, which audit maps to a release); a tag of
    a kind but no build is whatever was newest when pulled (the newest tracked release, with a note)."""
    kind, build = llama_tag(tag)
    if kind is None:
        notes.append(f"{where}: the llama.cpp image tag {tag!r} is none of ggml-org's (server, full or light, then "
                     "the backend and the build: server-cuda-b4763)" + (" (pinned by digest only)" if digest else "")
                     + "; not audited")
        return None
    if kind == "light":
        notes.append(f"{where}: the light image runs llama-cli, not llama-server; not audited")
        return None
    if build is not None:
        return Installed("llama-cpp", build, where, str(path) if path else None, line)
    if "llama-cpp" not in newest:
        return None
    notes.append(f"{where}: the tag {tag} names no build: the image is whatever was newest when it was pulled; "
                 f"audited as the newest tracked release, {newest['llama-cpp']}; pin a build tag ({tag}-bNNNN) to "
                 "audit what runs")
    return Installed("llama-cpp", newest["llama-cpp"], where, str(path) if path else None, line)


def image_entry(engine: str | None, tag: str | None) -> list[str] | None:
    """The entrypoint of an engine image that is not its flags alone (llama.cpp's, by the tag's kind); None for the
    others (what follows a vLLM or SGLang image is its serve program's flags)."""
    if engine != "llama-cpp":
        return None
    kind, _ = llama_tag(tag)
    return list(_LLAMA_ENTRYPOINTS.get(kind or "", [])) or None


def image_env(engine: str | None, tag: str | None, env: dict[str, str], where: str,
              notes: list[str] | None) -> dict[str, str]:
    """The environment a container of the image runs with: the image's own variables (llama.cpp's server and full
    images set LLAMA_ARG_HOST=0.0.0.0), then the container's."""
    if engine != "llama-cpp" or llama_tag(tag)[0] not in ("server", "full"):
        return env
    if "LLAMA_ARG_HOST" not in env and notes is not None:
        notes.append(f"{where}: the image sets LLAMA_ARG_HOST=0.0.0.0 (.devops/*.Dockerfile): llama-server listens on "
                     "every interface unless --host says otherwise")
    return {**_LLAMA_IMAGE_ENV, **env}


def image_version(engine: str, tag: str | None, digest: str | None, where: str, path: Path | None,
                  line: int | None, notes: list[str], newest: dict[str, str]) -> Installed | None:
    """The engine version an image tag names: `v0.14.0`, `v0.4.6.post1-cu124`; `latest` (or no tag) is the newest
    tracked release, with a note; a digest alone or another tag is a note. A llama.cpp image names a build
    (`server-cuda-b4763`)."""
    if engine == "llama-cpp":
        return _llama_image_version(tag, digest, where, path, line, notes, newest)
    if tag is None or tag == "latest":
        shown = "no tag" if tag is None else "the tag latest"
        if engine in newest:
            notes.append(f"{where}: {shown}: the image is whatever was newest when it was pulled; audited as the "
                         f"newest tracked release, {newest[engine]}; pin a version tag to audit what runs")
            return Installed(engine, newest[engine], where, str(path) if path else None, line)
        return None
    match = _TAG_VERSION.fullmatch(tag)
    if match is None:
        notes.append(f"{where}: the image tag {tag!r} names no release version"
                     + (" (pinned by digest only)" if digest else "") + "; not audited")
        return None
    return Installed(engine, match.group(1), where, str(path) if path else None, line)


# --- variables ---------------------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class Budget:
    """How much text the expansion of one file's variables may make in all: 8 times the file's size and 1 MiB.
    A file whose variables double themselves (`ENV A=$A$A`, 64 times) would otherwise make 2^64 bytes; a real
    one expands to little more than itself. Shared by the `sh -c` scripts the file's commands hold."""

    def __init__(self, size: int) -> None:
        self.left = 8 * size + (1 << 20)

    def spend(self, size: int, where: str) -> None:
        self.left -= size
        if self.left < 0:
            raise DeploymentError(f"{where}: its variables expand to more than 8 times the file's size (one "
                                  "doubles itself?); not read")


def expand(text: str, known: Mapping[str, str], budget: Budget | None = None, where: str = "") -> str:
    """`$X`, `${X}` and `${X:-default}` from the variables the file itself sets; others stay as written. With a
    `budget`, each value put in is spent from it (DeploymentError at `where` when none is left)."""
    def one(match: re.Match) -> str:
        name = match.group(1) or match.group(3)
        if name in known:
            value = known[name]
        elif match.group(2) is not None:
            value = match.group(2)
        else:
            return match.group(0)
        if budget is not None:
            budget.spend(len(value), where)
        return value
    return _VARIABLE.sub(one, text)


def _unknown_values(settings: Settings) -> Settings:
    """A value that still names a variable cannot be compared: it is UNKNOWN."""
    settings.unread_variables = True
    for key, value in list(settings.flags.items()):
        if isinstance(value, str) and "$" in value:
            settings.flags[key] = UNKNOWN
    return settings


# --- command lines -----------------------------------------------------------------------------------------

def _split(text: str, where: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError as exc:
        raise DeploymentError(f"{where}: cannot split the command line: {exc}") from None


def command_settings(tokens: list[str], where: str, image_engine_key: str | None, env: dict[str, str],
                     budget: Budget | None = None) -> Settings | None:
    """The settings of a container's command: the serve program anywhere in it (also inside `sh -c "..."`, whose
    variables spend the file's `budget`); else, for an engine's image, the tokens are that engine's flags (its
    entrypoint serves)."""
    for i, token in enumerate(tokens[:-1]):
        if Path(token).name in ("sh", "bash", "ash", "dash") and "-c" in tokens[i + 1:i + 3]:
            script = tokens.index("-c", i + 1) + 1
            found = script_settings(tokens[script], where, env, budget=budget) if script < len(tokens) else []
            if found:
                return found[0]
    engine, start = program_of(tokens)
    if engine is None and image_engine_key is not None and tokens and (tokens[0].startswith("-") or
                                                                       image_engine_key == "vllm"):
        engine, start = image_engine_key, 0
    if engine is None:
        return None
    settings = parse_tokens(tokens[start:], engine, where, env=dict(env))
    return _unknown_values(settings)


def _image_command(engine: str | None, tag: str | None, tokens: list[str], image_serves: bool, where: str,
                   env: dict[str, str], notes: list[str] | None) -> Settings | None:
    """The settings of a container of an engine image: its command after the image's entrypoint (when the
    container keeps it), read as `command_settings` reads a command, in the image's environment and the
    container's; a llama.cpp server image with no command still runs llama-server."""
    entry = image_entry(engine, tag) if image_serves else None
    env = image_env(engine, tag, env, where, notes)  # the image's ENV, whatever command the container runs
    if entry is not None:
        return command_settings(entry + tokens, where, None, env)
    if tokens:
        return command_settings(tokens, where, engine if image_serves else None, env)
    return Settings(engine, where, env=env) if env and engine else None


_SERVE_HINT = re.compile(r"vllm(\s+serve\b|\.entrypoints)|sglang(\.launch_server|\s+serve\b)|docker\s+run\b|"
                         r"llama-server\b")
_DOCKER_FLAGS = {"-d", "--detach", "-i", "--interactive", "-t", "--tty", "--rm", "--privileged", "--init", "-P",
                 "--publish-all", "--read-only", "--no-healthcheck", "--oom-kill-disable", "--sig-proxy",
                 "-it", "-ti", "-dit", "-itd", "-td", "-dt", "-id", "-di"}


def logical_lines(text: str):
    """(first line number, text) of a shell script: continuations joined, comment lines dropped."""
    start, pieces = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if start is None:
            if line.lstrip().startswith("#"):
                continue
            start = number
        stripped = line.rstrip()
        if stripped.endswith("\\"):
            pieces.append(stripped[:-1])
            continue
        pieces.append(line)
        yield start, " ".join(pieces)
        start, pieces = None, []
    if pieces:
        yield start, " ".join(pieces)


def script_settings(text: str, where: str, env: dict[str, str], found_images: list | None = None,
                    newest: dict[str, str] | None = None, notes: list[str] | None = None,
                    path: Path | None = None, budget: Budget | None = None) -> list[Settings]:
    """The serve lines of a shell script (or of one `sh -c` string): `vllm serve ...`, `python -m
    sglang.launch_server ...`, `docker run ... IMAGE ARGS`; simple assignments (`MODEL=x`, `export X=y`) expand
    later lines, within `budget` (by default, one of the script's own)."""
    budget = budget if budget is not None else Budget(len(text))
    known: dict[str, str] = {}
    found = []
    base_line = int(where.rsplit(":", 1)[1]) if re.search(r":\d+$", where) else None
    shown = where.rsplit(":", 1)[0] if base_line is not None else where
    for number, line in logical_lines(text):
        here = f"{shown}:{(base_line or 1) + number - 1 if base_line else number}"
        assignment = re.fullmatch(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(\S*)\s*", line)
        if assignment:
            try:
                value = shlex.split(assignment.group(2))
            except ValueError:
                value = []
            known[assignment.group(1)] = expand(value[0] if value else "", known, budget, here)
            continue
        if not _SERVE_HINT.search(line):
            continue
        line = re.sub(r"^\s*(?:\S*[$#]|>)\s+(?=\S)", "", line)  # a pasted shell prompt: `user@host:~$ `
        for segment in re.split(r"\s(?:&&|\|\||;|\|)\s", line):
            if not _SERVE_HINT.search(segment):
                continue
            tokens = _split(expand(segment, known, budget, here), here)
            tokens = [t for t in tokens if t not in ("&",)]
            while tokens and tokens[0] in ("sudo", "exec", "nohup", "time", "env", "srun", "command"):
                tokens.pop(0)
            local_env = dict(env)
            while tokens and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tokens[0]):
                name, _, setting = tokens.pop(0).partition("=")
                local_env[name] = setting
            tokens = _strip_redirections(tokens)
            if "docker" in tokens[:2] and "run" in tokens[:3]:
                settings = docker_run(tokens[tokens.index("run") + 1:], here, local_env, found_images, newest,
                                      notes, path, int(here.rsplit(":", 1)[1]))
            else:
                settings = command_settings(tokens, here, None, local_env, budget)
            if settings is not None:
                found.append(settings)
    return found


def _strip_redirections(tokens: list[str]) -> list[str]:
    out = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if re.fullmatch(r"\d*(>>?|<)(&\d+)?", token):
            skip = not token.endswith(tuple("0123456789")) or "&" not in token
            continue
        if re.fullmatch(r"\d*>>?\S+|\d*>&\d+|&>\S*", token):
            continue
        out.append(token)
    return out


def docker_run(tokens: list[str], where: str, env: dict[str, str], found_images: list | None,
               newest: dict[str, str] | None, notes: list[str] | None, path: Path | None,
               line: int | None) -> Settings | None:
    """`docker run [OPTIONS] IMAGE [ARGS]`: the options before the image (`-e VAR=value` is the engine's
    environment, `--entrypoint` replaces the image's), the engine flags after it."""
    local_env = dict(env)
    entrypoint: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i].startswith("-") and tokens[i] != "--":
        option, eq, value = tokens[i].partition("=")
        if option in _DOCKER_FLAGS:
            i += 1
            continue
        if not eq:
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
            i += 1
        i += 1
        if option in ("-e", "--env"):
            name, has, text = value.partition("=")
            if has:
                local_env[name] = text
            elif name in env:
                local_env[name] = env[name]
        elif option == "--entrypoint":
            entrypoint = _split(value, where)
    if i < len(tokens) and tokens[i] == "--":
        i += 1
    if i >= len(tokens):
        return None
    image, args = tokens[i], tokens[i + 1:]
    engine, tag, digest = image_engine(image)
    if engine is not None and found_images is not None and notes is not None:
        item = image_version(engine, tag, digest, where, path, line, notes, newest or {})
        if item is not None:
            found_images.append(item)
    if entrypoint:
        settings = command_settings(entrypoint + args, where, None, local_env)
    else:
        settings = _image_command(engine, tag, args, True, where, local_env, notes)
    if settings is not None and found_images and found_images[-1].origin == where:
        found_images[-1] = _with_settings(found_images[-1], settings)
    return settings


def _with_settings(item: Installed, settings: Settings) -> Installed:
    from dataclasses import replace
    return replace(item, settings=settings)


# --- Dockerfile --------------------------------------------------------------------------------------------

def _instructions(text: str):
    """(line, INSTRUCTION, arguments) of a Dockerfile: continuations joined, comments dropped."""
    start, pieces = None, []
    for number, line in enumerate(text.splitlines(), 1):
        if start is None:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            start = number
        elif line.lstrip().startswith("#"):
            continue
        if line.rstrip().endswith("\\"):
            pieces.append(line.rstrip()[:-1])
            continue
        pieces.append(line)
        joined = " ".join(pieces).strip()
        word, _, rest = joined.partition(" ")
        yield start, word.upper(), rest.strip()
        start, pieces = None, []
    if pieces:
        joined = " ".join(pieces).strip()
        word, _, rest = joined.partition(" ")
        yield start, word.upper(), rest.strip()


def _exec_or_shell(arguments: str, where: str) -> tuple[list[str], bool]:
    """A CMD or ENTRYPOINT: (tokens, exec form). The exec form is a JSON array; the shell form is split as the
    shell would, and wrapped in `sh -c` by Docker (which is the same for finding a serve line)."""
    if arguments.startswith("["):
        try:
            value = json.loads(arguments)
        except ValueError:
            value = None
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return value, True
    return _split(arguments, where), False


def from_dockerfile(path: Path, packages: dict[str, str], notes: list[str], newest: dict[str, str]) -> Found:
    text = _read_text(path)
    wanted = _by_package(packages)
    budget = Budget(len(text))
    known: dict[str, str] = {}
    env: dict[str, str] = {}
    stages: dict[str, tuple[str | None, Installed | None, str | None]] = {}
    engine_of_stage: str | None = None
    stage_item: Installed | None = None
    stage_tag: str | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    cmd_line = 0
    found = Found()
    for line, word, rest in _instructions(text):
        where = f"{path}:{line}"
        if word == "ARG":
            for item in _split(rest, where):
                name, eq, value = item.partition("=")
                if name not in known or eq:
                    known[name] = value if eq else known.get(name, "")
        elif word == "ENV":
            parts = _split(rest, where)
            if parts and "=" not in parts[0] and len(parts) >= 2:
                env[parts[0]] = expand(" ".join(parts[1:]), ChainMap(env, known), budget, where)
            else:
                for item in parts:
                    name, eq, value = item.partition("=")
                    if eq:
                        env[name] = expand(value, ChainMap(env, known), budget, where)
        elif word == "FROM":
            parts = [p for p in _split(expand(rest, known, budget, where), where) if not p.startswith("--platform")]
            reference = parts[0] if parts else ""
            alias = parts[2].lower() if len(parts) >= 3 and parts[1].lower() == "as" else None
            if reference.lower() in stages:  # FROM an earlier stage: its image
                engine_of_stage, stage_item, stage_tag = stages[reference.lower()]
            else:
                engine, tag, digest = image_engine(reference)
                engine_of_stage, stage_tag = engine, tag
                stage_item = image_version(engine, tag, digest, where, path, line, notes, newest) if engine else None
                if "$" in reference and engine is None:
                    notes.append(f"{where}: the base image {reference!r} names a build argument with no default; "
                                 "not read")
            if alias:
                stages[alias] = (engine_of_stage, stage_item, stage_tag)
            env, entrypoint, cmd = {}, None, None  # a stage starts from its image
        elif word == "RUN":
            expanded = expand(rest, ChainMap(env, known), budget, where)
            for segment in re.split(r"&&|\|\||;", expanded):
                match = re.search(r"(?:^|\s)(?:uv\s+)?pip3?\s+install\s+(.*)$|python3?\s+-m\s+pip\s+install\s+(.*)$",
                                  segment.strip())
                if not match:
                    continue
                for token in _pip_arguments(_split(match.group(1) or match.group(2) or "", where)):
                    if token.startswith(("git+", "http://", "https://", "./", "/")) and re.search(
                            r"\b(vllm|sglang|llama[-_.]cpp[-_.]python)\b", token, re.IGNORECASE):
                        notes.append(f"{where}: an engine installed from {token!r} has no release version; "
                                     "not audited")
                        continue
                    installed = requirement_found(token, where, path, line, wanted, notes)
                    if installed is not None:
                        found.installed.append(installed)
        elif word in ("CMD", "ENTRYPOINT"):
            tokens, exec_form = _exec_or_shell(rest, where)
            if not exec_form:
                tokens = [expand(t, ChainMap(env, known), budget, where) for t in tokens]
            if word == "CMD":
                cmd, cmd_line = tokens, line
            else:
                entrypoint, cmd, cmd_line = tokens, None, line
    command = (entrypoint or []) + (cmd or [])
    settings = None
    where = f"{path}:{cmd_line or 1}"
    if entrypoint is None and image_entry(engine_of_stage, stage_tag) is not None:  # the image's entrypoint runs
        settings = _image_command(engine_of_stage, stage_tag, cmd or [], True, where, dict(env), notes)
    elif command:
        settings = command_settings(command, f"{path}:{cmd_line}", engine_of_stage if entrypoint is None else None,
                                    image_env(engine_of_stage, stage_tag, env, where, notes), budget)
    elif env and engine_of_stage:
        settings = Settings(engine_of_stage, where, env=dict(env))
    if stage_item is not None and settings is not None and settings.engine == stage_item.engine:
        found.installed.append(_with_settings(stage_item, settings))  # the image's version runs this command
    else:
        found.installed.extend([stage_item] if stage_item is not None else [])
        found.settings.extend([settings] if settings is not None else [])
    return found


def _pip_arguments(tokens: list[str]) -> list[str]:
    """The requirement arguments of `pip install` (its options and their values left out)."""
    out = []
    takes_value = {"-r", "--requirement", "-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-f",
                   "--find-links", "--target", "-t", "--prefix", "--root", "--python", "--cache-dir", "--src",
                   "-e", "--editable", "--platform", "--python-version", "--implementation", "--abi",
                   "--trusted-host", "--progress-bar", "--index-strategy", "--torch-backend"}
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token in takes_value:
            skip = True
            continue
        if token.startswith("-"):
            continue
        out.append(token)
    return out


# --- YAML: compose, Kubernetes, KServe, Helm values ------------------------------------------------------

_MAX_NODES = 200_000


@dataclass
class _Y:
    value: object  # str | list[_Y] | dict[str, _Y] | other scalar
    line: int


def _plain(node, budget: list[int], depth: int = 0) -> _Y:
    """A composed YAML node as plain values with lines; merge keys followed; bounded in nodes and depth (an
    alias is a shared node, so a graph of aliases is walked within the same budget)."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 100:
        raise DeploymentError("too many nodes (or too deep) to read as a deployment")
    line = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[str, _Y] = {}
        for key, value in node.value:
            if key.tag == "tag:yaml.org,2002:merge":
                merged = _plain(value, budget, depth + 1)
                for one in merged.value if isinstance(merged.value, list) else [merged]:
                    if isinstance(one.value, dict):
                        for k, v in one.value.items():
                            out.setdefault(k, v)
                continue
            out[str(key.value)] = _plain(value, budget, depth + 1)
        return _Y(out, line)
    if isinstance(node, yaml.SequenceNode):
        return _Y([_plain(v, budget, depth + 1) for v in node.value], line)
    return _Y(node.value, line)


def from_yaml(path: Path, packages: dict[str, str], notes: list[str], newest: dict[str, str]) -> Found:
    """Every container in a YAML file: a mapping with `image` (compose services, Kubernetes and KServe
    containers, Helm values' `image: {repository, tag}`), with its command and environment."""
    text = _read_text(path)
    try:
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else 1
        raise DeploymentError(f"{path}:{line}: not YAML: {getattr(exc, 'problem', None) or exc}"
                              + (" (a template? give the rendered manifest)" if "{{" in text else "")) from None
    found = Found()
    budget = [_MAX_NODES]
    for document in documents:
        if document is None:
            continue
        try:
            root = _plain(document, budget)
        except DeploymentError as exc:
            raise DeploymentError(f"{path}: {exc}") from None
        for mapping in _mappings(root):
            _container(mapping, path, packages, notes, newest, found)
    return found


def _mappings(node: _Y):
    stack = [node]
    while stack:
        here = stack.pop()
        if isinstance(here.value, dict):
            yield here
            stack.extend(reversed(list(here.value.values())))
        elif isinstance(here.value, list):
            stack.extend(reversed(here.value))


def _text_list(node: _Y | None, where: str) -> list[str] | None:
    if node is None:
        return None
    if isinstance(node.value, str):
        return _split(node.value, where)
    if isinstance(node.value, list):
        return [str(item.value) for item in node.value if not isinstance(item.value, (dict, list))]
    return None


def _camel_flag(name: str) -> str:
    """`maxModelLen` is `--max-model-len`; an acronym stays one word (`enableLoRA` is `--enable-lora`)."""
    words = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])|[A-Z][a-z]*(?:[A-Z](?![a-z]))+", name.replace("LoRA", "Lora"))
    return "--" + "-".join(w.lower() for w in words)


def _chart_model(mapping: _Y, path: Path, notes, newest, found: Found) -> bool:
    """vLLM's production-stack Helm chart: a `modelSpec` item with `repository`, `tag`, `vllmConfig` (flags in
    camelCase), `vllmConfig.extraArgs` and `env`. True when the mapping is one."""
    fields = cast("dict[str, _Y]", mapping.value)  # a mapping: `_container` passes its own
    repository, tag = fields.get("repository"), fields.get("tag")
    if repository is None or not isinstance(repository.value, str) or "image" in fields:
        return False
    engine, _, digest = image_engine(repository.value)
    if engine is None:
        return False
    where = f"{path}:{repository.line}"
    tokens: list[str] = []
    if "modelURL" in fields and isinstance(fields["modelURL"].value, str):
        tokens.append(fields["modelURL"].value)
    if "enableLoRA" in fields and str(fields["enableLoRA"].value).lower() == "true":
        tokens.append("--enable-lora")  # the chart's template turns the model's enableLoRA into the flag
    config = fields.get("vllmConfig")
    if config is not None and isinstance(config.value, dict):
        for key, value in config.value.items():
            if key == "extraArgs":
                tokens += _text_list(value, where) or []
            elif key == "v1" or isinstance(value.value, (dict, list)):
                continue
            elif value.value is True:
                tokens.append(_camel_flag(key))
            elif value.value is False:
                tokens.append("--no-" + _camel_flag(key)[2:])
            elif value.value is not None:
                tokens += [_camel_flag(key), str(value.value)]
    env: dict[str, str] = {}
    if "env" in fields and isinstance(fields["env"].value, list):
        for item in fields["env"].value:
            if isinstance(item.value, dict) and "name" in item.value and "value" in item.value:
                env[str(item.value["name"].value)] = str(item.value["value"].value)
    tag_text = str(tag.value) if tag is not None and tag.value not in (None, "") else None
    item = image_version(engine, tag_text, digest, where, path, repository.line, notes, newest)
    settings = _unknown_values(parse_tokens(tokens, engine, where, env=env))
    if item is not None:
        found.installed.append(_with_settings(item, settings))
    else:
        found.settings.append(settings)
    return True


def _container(mapping: _Y, path: Path, packages, notes, newest, found: Found) -> None:
    fields = cast("dict[str, _Y]", mapping.value)  # a mapping: `_mappings` yields only those
    image = fields.get("image")
    if image is None:
        _chart_model(mapping, path, notes, newest, found)
        return
    if isinstance(image.value, dict):  # Helm values: image: {repository, tag}
        repository = image.value.get("repository")
        tag = image.value.get("tag")
        if repository is None or not isinstance(repository.value, str):
            return
        reference = repository.value + (f":{tag.value}" if tag is not None and tag.value not in (None, "") else "")
    elif isinstance(image.value, str):
        reference = image.value
    else:
        return
    where = f"{path}:{image.line}"
    engine, tag, digest = image_engine(reference)
    env: dict[str, str] = {}
    environment = fields.get("environment") or fields.get("env")
    if environment is not None and isinstance(environment.value, dict):  # compose: a mapping
        env = {k: str(v.value) for k, v in environment.value.items() if not isinstance(v.value, (dict, list))}
    elif environment is not None and isinstance(environment.value, list):
        for item in environment.value:
            if isinstance(item.value, str):  # compose: "NAME=value"
                name, eq, value = item.value.partition("=")
                if eq:
                    env[name] = value
            elif isinstance(item.value, dict) and "name" in item.value:  # Kubernetes: {name, value | valueFrom}
                given = item.value.get("value")
                if given is not None and not isinstance(given.value, (dict, list)):
                    env[str(item.value["name"].value)] = str(given.value)
    entry = _text_list(fields.get("entrypoint"), where)
    command = _text_list(fields.get("command"), where)
    args = _text_list(fields.get("args"), where)
    if "args" in fields or "containers" in fields or "ports" in fields and isinstance(fields["ports"].value, list) \
            and fields["ports"].value and isinstance(fields["ports"].value[0].value, dict):
        # Kubernetes: command replaces the image's ENTRYPOINT, args its CMD
        tokens = (command or []) + (args or [])
        image_serves = command is None
    else:  # compose: entrypoint replaces ENTRYPOINT, command replaces CMD
        tokens = (entry or []) + (command or [])
        image_serves = entry is None
    if engine is None:
        settings = command_settings(tokens, where, None, env) if tokens else None
        if settings is not None:
            found.settings.append(settings)
        return
    item = image_version(engine, tag, digest, where, path, image.line, notes, newest)
    settings = _image_command(engine, tag, tokens, image_serves, where, env, notes)
    if item is not None:
        found.installed.append(_with_settings(item, settings) if settings is not None else item)
    elif settings is not None:
        found.settings.append(settings)


def from_docker_run(command: str, origin: str, notes: list[str], newest: dict[str, str]) -> Found | None:
    """A `docker run ... IMAGE ARGS` command line given as a serve line: the engine version from the image's tag,
    its settings from what follows the image and `-e`. None when the line is not a docker run."""
    text = re.sub(r"\\\r?\n", " ", command)
    if not re.search(r"(^|\s)docker\s+run\s", text):
        return None
    from dataclasses import replace

    found = script_found(text, f"{origin}:1", notes, newest)
    for settings in [*found.settings, *(i.settings for i in found.installed if i.settings is not None)]:
        settings.origin = origin
    found.installed = [replace(item, origin=origin, line=None) for item in found.installed]
    return found


def script_found(text: str, name: str, notes: list[str], newest: dict[str, str], path: Path | None = None) -> Found:
    """What a script's serve lines declare: the engine images its `docker run` lines name, each with the settings
    that follow it, and the serve lines that run no image of their own."""
    images: list[Installed] = []
    settings = script_settings(text, name, {}, images, newest, notes, path)
    with_image = {id(i.settings) for i in images if i.settings is not None}
    return Found(images, [s for s in settings if id(s) not in with_image])


def from_script(path: Path, packages: dict[str, str], notes: list[str], newest: dict[str, str]) -> Found:
    return script_found(_read_text(path), str(path), notes, newest, path)
