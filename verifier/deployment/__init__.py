"""What `gotchas audit` reads of a deployment: which engine versions it runs, and with which settings.

Versions come from the running environment (its distributions' metadata), another environment's interpreter,
a requirements file or `pip freeze` output, a lock file (`uv.lock`, `poetry.lock`, `pylock.toml`), or
`ENGINE==VERSION` given on the command line; a llama.cpp build (`b4763`: an image tag, a logged build line) stands
for the release whose vendored commit or recorded build number it matches (`_builds`). Settings come from a serve
command line (`vllm serve MODEL --scheduling-policy priority`, `llama-server -m M -c 8192`: `_llama` reads
llama.cpp's own syntax) or from the arguments an engine logs at start-up (vLLM's `non-default args: {...}`,
SGLang's `server_args=ServerArgs(...)`). Nothing read is executed: logs are parsed as Python literals
only, and `--python` runs the interpreter the user named, with a fixed script.

The versions are read in `_versions`, the settings in `_settings`; what both can fail with, and their bounded
file reader, in `_read`. This module is the surface callers import (`deployment.parse_serve`...).
"""

from __future__ import annotations

from ._builds import BuildsError, is_build, kb_data, load_builds, release_for, vendored_data
from ._containers import Found, from_docker_run
from ._find import one_per_serve_line, read_path
from ._llama import Grammar, for_release
from ._logs import looks_like_log, parse_log, parse_log_text
from ._pastes import env_from_paste, from_paste
from ._read import MAX_FILE_BYTES, DeploymentError, EnvironmentFailed
from ._settings import UNKNOWN, Settings, boolean, flag_key, parse_serve, parse_tokens
from ._versions import Installed, file_kind, from_environment, from_file, from_python, from_specs

__all__ = ["MAX_FILE_BYTES", "UNKNOWN", "BuildsError", "DeploymentError", "EnvironmentFailed", "Found", "Grammar",
           "Installed", "Settings", "boolean", "env_from_paste", "file_kind", "flag_key", "for_release",
           "from_docker_run", "from_environment", "from_file", "from_paste", "from_python", "from_specs", "is_build",
           "kb_data", "load_builds", "looks_like_log", "one_per_serve_line", "parse_log", "parse_log_text",
           "parse_serve", "parse_tokens", "read_path", "release_for", "vendored_data"]
