"""Progress of a batch of model requests: done / total, cache hits, rate and time left."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

logger = logging.getLogger("rubriclab.progress")


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


class Progress:
    """Logs a line at most every `interval_s` seconds, and always at the start and the end.

    Rate and time left are computed over uncached requests only: cache hits are instant and
    would make the estimate meaningless.
    """

    def __init__(self, label: str, total: int, cache_hits: int, interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, log: logging.Logger = logger):
        self.label = label
        self.total = total
        self.cache_hits = cache_hits
        self.uncached_done = 0
        self.interval_s = interval_s
        self._clock = clock
        self._log = log
        self._start = clock()
        self._last = float("-inf")
        self.emit(force=True)

    @property
    def done(self) -> int:
        return self.cache_hits + self.uncached_done

    def advance(self) -> None:
        self.uncached_done += 1
        self.emit(force=self.done == self.total)

    def line(self) -> str:
        elapsed = self._clock() - self._start
        pct = 100.0 * self.done / self.total if self.total else 100.0
        parts = [f"[{self.label}] {self.done}/{self.total} ({pct:.0f}%)",
                 f"{self.cache_hits} cache hits"]
        if self.uncached_done and elapsed > 0:
            rate = self.uncached_done / elapsed
            remaining = self.total - self.done
            parts.append(f"{rate:.2f} calls/s")
            parts.append(f"{format_duration(remaining / rate)} left" if remaining else
                         f"done in {format_duration(elapsed)}")
        elif self.done == self.total:
            parts.append(f"done in {format_duration(elapsed)}")
        return " | ".join(parts)

    def emit(self, force: bool = False) -> None:
        now = self._clock()
        if force or now - self._last >= self.interval_s:
            self._last = now
            self._log.info(self.line())
