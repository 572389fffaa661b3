"""Progress on a terminal, silence elsewhere (CI logs stay clean).

One status line on stderr, rewritten in place, only when stderr is a terminal.
"""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, stream=None, enabled: bool | None = None, interval: float = 0.1) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.interval = interval
        self._last = 0.0
        self._width = 0

    def status(self, text: str, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self.interval:
            return
        self._last = now
        text = text[:120]
        self.stream.write("\r" + text.ljust(self._width))
        self.stream.flush()
        self._width = len(text)

    def download(self, done: int, total: int | None, label: str) -> None:
        """A callback for sources: bytes of `label` fetched so far."""
        if total:
            self.status(f"{label}: {done / 1e6:.1f} / {total / 1e6:.1f} MB ({100 * done // max(total, 1)}%)",
                        force=done >= total)
        else:
            self.status(f"{label}: {done / 1e6:.1f} MB")

    def done(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
