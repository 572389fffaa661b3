"""What the benchmark scripts share: the description of the machine, and sizes in MiB."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from verifier import __version__


def machine() -> str:
    """Cores, CPU model, memory, OS, Python, git and the verifier's version, read from /proc and platform."""
    memory = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal:"))
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.machine())
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} cores ({model}), {memory / 1024 ** 2:.1f} GiB memory, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, {git}, gotchas {__version__}")


def mib(n: float) -> str:
    return f"{n / 1024 ** 2:,.1f} MiB"
