"""Which reader reads a file a deployment gives, and the files of a deployment's folder.

A file is read by its name first (requirements, lock files, pyproject.toml, setup.cfg/setup.py, Dockerfiles,
compose files, shell scripts), then by what it holds (a start-up log, a `collect_env` or `pip list` paste, a
Kubernetes manifest, a serve command line). In a folder, only files whose name or first bytes say they may
declare an engine are read, at most MAX_FILES of them and MAX_DEPTH folders down, skipping version-control,
virtual-environment and dependency folders, and symbolic links (a link in a pull request may point anywhere on
the machine that runs the audit). Such a file that cannot be read (not UTF-8, too large, a FIFO or a device
under a name that declares, malformed) is a note and one of `Found.unread`: audit reports the rest and exits 2."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import replace
from pathlib import Path

from ._containers import Found, from_dockerfile, from_script, from_yaml, script_found
from ._logs import looks_like_log, parse_log_text
from ._packaging import from_pyproject, from_setup_cfg, from_setup_py
from ._pastes import env_from_paste, from_paste
from ._read import DeploymentError, _read_text, read_head
from ._versions import from_file

MAX_FILES = 2000
MAX_DEPTH = 8
_SKIP = {".git", ".hg", ".svn", "node_modules", ".venv", "venv", "env", "__pycache__", "site-packages", ".tox",
         ".nox", ".mypy_cache", ".pytest_cache", "dist", "build", ".cache", "third_party", "vendor"}
#: Words that a file declaring an engine holds (llama.cpp's logs name neither llama-server nor llama.cpp, but load
#: a model and print their build).
_ENGINE_WORDS = re.compile(r"vllm|sglang|llama-server|llama[-_.]cpp|llama_model_loader: |\bbuild: \d+ \([0-9a-f]{7,}\)",
                           re.IGNORECASE)


def kind_of(path: Path) -> str | None:
    """The reader a file's name asks for; None when only its content can tell."""
    name = path.name.lower()
    if name in ("uv.lock", "poetry.lock") or re.fullmatch(r"pylock(\.[^.]+)?\.toml", name):
        return "lock"
    if name == "pyproject.toml":
        return "pyproject"
    if name == "setup.cfg":
        return "setup.cfg"
    if name == "setup.py":
        return "setup.py"
    if name in ("dockerfile", "containerfile") or name.startswith(("dockerfile.", "containerfile.")) \
            or name.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if name.endswith((".yml", ".yaml")) or name.endswith((".yaml.tpl", ".yml.tpl")):
        return "yaml"
    if name.endswith((".sh", ".bash", ".slurm", ".sbatch", ".zsh")):
        return "script"
    if re.fullmatch(r"(.*[-_.])?(requirements|constraints)([-_.].*)?\.(txt|in)", name):
        return "requirements"
    return None


def read_path(path: str | Path, packages: dict[str, str], notes: list[str], newest: dict[str, str],
              in_folder: bool = False) -> Found:
    """What one file or folder declares. A file given whose kind cannot be told is read as requirements, as
    before; in a folder, such a file counts only as a log, a paste or a serve script."""
    path = Path(path)
    if path.is_dir():
        return read_folder(path, packages, notes, newest)
    if not in_folder:
        return _name_flag_lists(_read_file(path, packages, notes, newest, in_folder), notes)
    return _read_file(path, packages, notes, newest, in_folder)


def _read_file(path: Path, packages: dict[str, str], notes: list[str], newest: dict[str, str],
               in_folder: bool) -> Found:
    kind = kind_of(path)
    if kind in ("lock", "requirements"):
        return Found(from_file(path, packages, notes))
    if kind == "pyproject":
        return Found(from_pyproject(path, packages, notes))
    if kind == "setup.cfg":
        return Found(from_setup_cfg(path, packages, notes))
    if kind == "setup.py":
        return Found(from_setup_py(path, packages, notes))
    if kind == "dockerfile":
        return from_dockerfile(path, packages, notes, newest)
    if kind == "yaml":
        return from_yaml(path, packages, notes, newest)
    if kind == "script":
        return from_script(path, packages, notes, newest)
    return _by_content(path, packages, notes, newest, in_folder)


def _by_content(path: Path, packages: dict[str, str], notes: list[str], newest: dict[str, str],
                in_folder: bool = False) -> Found:
    """A file with no telling name: a start-up log, a paste of collect_env or pip list, a serve command line, a
    Dockerfile or manifest by its first instruction, else requirements."""
    text = _read_text(path)
    found = Found()
    pasted = from_paste(text, str(path), packages)
    if pasted:
        found.installed.extend(pasted)
        env = env_from_paste(text)
        if env:
            from ._settings import Settings
            found.settings.append(Settings(pasted[0].engine, f"{path} (environment)", env=env))
    if looks_like_log(text):
        settings = parse_log_text(text, str(path))
        if settings.flags or settings.env:
            found.settings.append(settings)
        elif settings.engine == "llama-cpp":  # its log gives no flags: what it says of its build is a note
            notes.extend(n for n in settings.notes if n not in notes)
        if (settings.version or settings.commit) and not pasted:
            from ._versions import Installed
            found.installed.append(Installed(settings.engine, settings.version or "unknown", settings.origin,
                                             str(path), _line(settings.origin), commit=settings.commit))
        return found
    if pasted:
        return found
    first = next((line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
    if re.match(r"(?i)FROM\s+\S+", first):
        return from_dockerfile(path, packages, notes, newest)
    if re.match(r"(apiVersion|kind|services|version|image):", first):
        return from_yaml(path, packages, notes, newest)
    flags = _bare_flags(text, str(path))
    if flags is not None:
        found.settings.append(flags)
        return found
    serve = script_found(text, str(path), notes, newest, path)
    if serve.installed or serve.settings:
        found.installed.extend(serve.installed)
        found.settings.extend(serve.settings)
        return found
    return Found() if in_folder else Found(from_file(path, packages, notes))


def _bare_flags(text: str, name: str):
    """A file that is nothing but engine flags (`--tp 8` per line, as issue reports paste them): the settings of
    an engine to be named by the folder's one engine (`engine` is empty until then); None for any other text."""
    from ._settings import parse_tokens

    lines = [line.strip().rstrip("\\").strip() for line in text.splitlines() if line.strip()]
    if not lines or len(lines) > 500 or not all(re.match(r"--?[A-Za-z][\w.-]*(\s|=|$)", line) for line in lines):
        return None
    try:
        import shlex
        tokens = shlex.split(" ".join(lines))
    except ValueError:
        return None
    return parse_tokens(tokens, "", f"{name}:1")


def _line(origin: str) -> int | None:
    match = re.search(r":(\d+)$", origin)
    return int(match.group(1)) if match else None


def read_folder(root: Path, packages: dict[str, str], notes: list[str], newest: dict[str, str]) -> Found:
    """Every file of a folder that may declare an engine (see the module's docstring), read as `read_path` does.
    A file that cannot be read is a note with its reason and one of `Found.unread`, not the end of the audit: the
    others still count."""
    found = Found()
    seen = 0

    def unread(message: str) -> None:
        notes.append(f"not read: {message}")
        found.unread.append(message)

    for folder, dirs, files in os.walk(root):
        depth = len(Path(folder).relative_to(root).parts)
        dirs[:] = sorted(d for d in dirs if d not in _SKIP and not d.startswith(".") and depth < MAX_DEPTH)
        for name in sorted(files):
            path = Path(folder) / name
            kind = kind_of(path)
            if kind is None and not name.lower().endswith((".log", ".txt")):
                continue
            try:
                mode = os.lstat(path).st_mode
            except OSError as exc:
                unread(f"{path}: cannot read: {exc.strerror or exc}")
                continue
            if stat.S_ISLNK(mode):
                continue  # never followed in a folder (the module's docstring)
            if not stat.S_ISREG(mode):
                unread(f"{path}: not a regular file (a FIFO, a socket or a device); not read")
                continue
            if kind in (None, "yaml", "script", "requirements", "setup.py", "setup.cfg"):
                try:
                    head = read_head(path, 1 << 20)  # the first MiB: a cheap filter before parsing
                except DeploymentError as exc:
                    unread(str(exc))
                    continue
                if not _ENGINE_WORDS.search(head.decode("utf-8", "replace")) \
                        and not (kind is None and head[:64].lstrip().startswith(b"-")):
                    continue
            seen += 1
            if seen > MAX_FILES:
                message = f"{root}: more than {MAX_FILES} candidate files; the rest were not read"
                notes.append(message)
                found.unread.append(message)
                return _name_flag_lists(found, notes)
            try:
                one = read_path(path, packages, notes, newest, in_folder=True)
            except DeploymentError as exc:
                unread(str(exc))
                continue
            found.installed.extend(one.installed)
            found.settings.extend(one.settings)
    return _name_flag_lists(found, notes)


def _name_flag_lists(found: Found, notes: list[str]) -> Found:
    """A bare flag list is the folder's engine's, when the folder declares exactly one engine."""
    engines = sorted({i.engine for i in found.installed} | {s.engine for s in found.settings if s.engine})
    kept = []
    for settings in found.settings:
        if settings.engine:
            kept.append(settings)
        elif len(engines) == 1:
            settings.engine = engines[0]
            kept.append(settings)
        else:
            notes.append(f"{settings.origin}: a list of flags, and the folder declares "
                         f"{'no engine' if not engines else 'several engines'}; not read")
    found.settings = kept
    return found


def one_per_serve_line(installed: list, loose: list, settings: dict, notes: list) -> list:
    """The serve lines the files give with no version of their own: one is the engine's settings; several (two
    launch scripts) are several deployments of the versions the files pin, each audited with its line. Settings
    given on the command line (--serve, --serve-log) win over the files'."""
    by_engine: dict[str, list] = {}
    for one in loose:
        if one.engine in settings:
            notes.append(f"{one.origin}: settings of {one.engine}, not used (audited with "
                         f"{settings[one.engine].origin})")
            continue
        by_engine.setdefault(one.engine, []).append(one)
    for engine, many in by_engine.items():
        bare = [i for i in installed if i.engine == engine and i.settings is None]
        if len(many) == 1 or not bare:
            settings[engine] = many[0]
            notes.extend(f"{one.origin}: more settings of {engine}, not used (audited with {many[0].origin})"
                         for one in many[1:])
            continue
        installed = [i for i in installed if not (i.engine == engine and i.settings is None)]
        installed += [replace(i, settings=one) for i in bare for one in many]
    return installed
