"""Progress on stderr: a bar on a terminal, a line at a steady interval everywhere else.

Under `nohup`, in CI or in a Ray job log a bar prints nothing useful (or one line per
refresh), so where the stream is not a terminal a plain line says the stage, done/total,
rate and ETA every `CODENIB_PROGRESS_INTERVAL` seconds (default 10), and once at the end.

Core level (standard library only; tqdm is imported only to draw a bar).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, TextIO

#: Seconds between progress lines when the stream is not a terminal.
DEFAULT_INTERVAL = 10.0
INTERVAL_ENV = "CODENIB_PROGRESS_INTERVAL"


def progress_interval() -> float:
    """The line interval: $CODENIB_PROGRESS_INTERVAL seconds when it is a positive number."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, DEFAULT_INTERVAL))
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 else DEFAULT_INTERVAL


def is_terminal(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed or replaced streams
        return False


class Progress:
    """`update(n)` as work completes; `close()` (or a `with` block) when the stage ends.

    Modes: `bar` (tqdm, on a terminal), `lines` (elsewhere), `off` (`enabled=False`).
    """

    def __init__(self, stage: str, total: int, unit: str = "items", *, enabled: bool = True,
                 stream: TextIO | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic, force_lines: bool = False):
        self.stage, self.total, self.unit = stage, int(total), unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval = interval if interval is not None else progress_interval()
        self.clock = clock
        self.done = 0
        self.postfix: dict[str, Any] = {}
        self._start = clock()
        self._last_line = self._start
        self._closed = False
        self._bar = None
        if not enabled or total <= 0:
            self.mode = "off"
        elif is_terminal(self.stream) and not force_lines:
            self.mode = "bar"
            from tqdm import tqdm

            self._bar = tqdm(total=self.total, desc=stage, unit=unit, file=self.stream, dynamic_ncols=True,
                             leave=False)
        else:
            self.mode = "lines"

    def update(self, n: int = 1, **postfix: Any) -> None:
        self.done += n
        if postfix:
            self.postfix.update(postfix)
        if self._bar is not None:
            self._bar.update(n)
            if postfix:
                self._bar.set_postfix(**postfix, refresh=False)
        elif self.mode == "lines":
            now = self.clock()
            if now - self._last_line >= self.interval:
                self._last_line = now
                self._line(now)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.mode == "lines":
            self._line(self.clock(), final=True)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _line(self, now: float, final: bool = False) -> None:
        elapsed = max(now - self._start, 1e-9)
        rate = self.done / elapsed
        extra = "".join(f", {k} {v}" for k, v in self.postfix.items())
        if final:
            text = f"[progress] {self.stage}: done {self.done}/{self.total} {self.unit} in {elapsed:.1f}s " \
                   f"({rate:.1f} {self.unit}/s{extra})"
        else:
            pct = 100.0 * self.done / self.total if self.total else 100.0
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta_text = f"{eta:.0f}s" if eta != float("inf") else "?"
            text = f"[progress] {self.stage}: {self.done}/{self.total} {self.unit} ({pct:.0f}%), " \
                   f"{rate:.1f} {self.unit}/s, ETA {eta_text}{extra}"
        print(text, file=self.stream, flush=True)
