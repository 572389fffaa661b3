"""What `gotchas audit` reads of a deployment: which engine versions it runs, and with which settings.

Versions come from the running environment (its distributions' metadata), another environment's interpreter,
a requirements file or `pip freeze` output, a lock file (`uv.lock`, `poetry.lock`, `pylock.toml`), or
`ENGINE==VERSION` given on the command line. Settings come from a serve command line (`vllm serve MODEL
--scheduling-policy priority`) or from the arguments an engine logs at start-up (vLLM's `non-default args:
{...}`, SGLang's `server_args=ServerArgs(...)`). Nothing read is executed: logs are parsed as Python literals
only, and `--python` runs the interpreter the user named, with a fixed script.

The versions are read in `_versions`, the settings in `_settings`; what both can fail with, and their bounded
file reader, in `_read`. This module is the surface callers import (`deployment.parse_serve`...).
"""

from __future__ import annotations

from ._containers import Found, from_docker_run
from ._find import one_per_serve_line, read_path
from ._logs import looks_like_log, parse_log, parse_log_text
from ._pastes import env_from_paste, from_paste
from ._read import MAX_FILE_BYTES, DeploymentError, EnvironmentFailed
from ._settings import UNKNOWN, Settings, boolean, flag_key, parse_serve, parse_tokens
from ._versions import Installed, file_kind, from_environment, from_file, from_python, from_specs

__all__ = ["MAX_FILE_BYTES", "UNKNOWN", "DeploymentError", "EnvironmentFailed", "Found", "Installed", "Settings",
           "boolean", "env_from_paste", "file_kind", "flag_key", "from_docker_run", "from_environment", "from_file",
           "from_paste", "from_python", "from_specs", "looks_like_log", "one_per_serve_line", "parse_log",
           "parse_log_text", "parse_serve", "parse_tokens", "read_path"]
