"""Progress of a batch of model requests: done / total, cache hits, rate and time left, the
tokens and dollars paid so far, and, inside a Snakemake run, how far the whole run is."""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger("rubriclab.progress")

# Written by the Snakefile's onstart (rubriclab.llm.progress.write_run_plan); jobs inherit it.
RUN_PLAN_VARIABLE = "RUBRICLAB_RUN_PLAN"


# The kinds of a batch's result lines of no use (rubriclab.llm.batch_records.BatchOutcomes), as the
# progress line reports them: requests answered by conflicting lines, lines without a request
# id or with one the batch did not hold, and requests a completed batch gave no line.
UNUSABLE_BATCH_LINES = {"conflicting": "with conflicting answers",
                        "without_id": "without a request id",
                        "unknown_id": "for a request not in its batch",
                        "missing": "missing (a request given no line)"}


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1_000_000:.1f}M"
    if tokens >= 10_000:
        return f"{tokens / 1000:.0f}k"
    if tokens >= 1000:
        return f"{tokens / 1000:.1f}k"
    return str(tokens)


def write_run_plan(path: str | Path, jobs: Iterable[Iterable[str]], started: float | None = None) -> None:
    """The run's jobs (each as its output files) and when it started, for RunPlan to read."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    plan = {"started": time.time() if started is None else started,
            "jobs": [[os.path.abspath(f) for f in outputs] for outputs in map(list, jobs) if outputs]}
    path.write_text(json.dumps(plan), encoding="utf-8")


class RunPlan:
    """How far the Snakemake run is: a job is done once all its outputs exist, written since
    the run started. Time left is the run's pace so far (elapsed / jobs done) times the jobs
    left: a rough figure, as jobs differ in length, and labelled as such."""

    def __init__(self, started: float, jobs: list[list[str]], clock: Callable[[], float] = time.time):
        self.started = started
        self.jobs = [list(outputs) for outputs in jobs]
        self._clock = clock
        self._done: set[int] = set()

    @classmethod
    def from_environment(cls, environ: dict[str, str] | None = None) -> RunPlan | None:
        path = (os.environ if environ is None else environ).get(RUN_PLAN_VARIABLE)
        if not path:
            return None
        try:
            plan: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
            return cls(float(plan["started"]), plan["jobs"])
        except (OSError, ValueError, KeyError, TypeError):
            return None  # a progress line never stops a job

    def _finished(self, outputs: list[str]) -> bool:
        try:
            return all(os.stat(f).st_mtime >= self.started for f in outputs)
        except OSError:
            return False

    def status(self) -> tuple[int, int, float | None]:
        """(jobs done, jobs in the run, seconds left at the pace so far or None)."""
        for i, outputs in enumerate(self.jobs):
            if i not in self._done and self._finished(outputs):
                self._done.add(i)
        done, total = len(self._done), len(self.jobs)
        elapsed = self._clock() - self.started
        left = elapsed / done * (total - done) if done and elapsed > 0 else None
        return done, total, left

    def line(self) -> str:
        done, total, left = self.status()
        text = f"run: {done}/{total} jobs done"
        if left is not None and done < total:
            text += f", about {format_duration(left)} left at its pace so far"
        return text


class Progress:
    """Logs a line at most every `interval_s` seconds, and always at the start and the end.

    Rate and time left are computed over uncached requests only: cache hits are instant and
    would make the estimate meaningless. Tokens and dollars count the calls paid in this batch
    (cache hits cost nothing); a call whose price litellm does not know is counted as unpriced,
    never as $0. Batch result lines of no use (`note_batch_lines`) are counted on every line
    after they are read, the last included.
    """

    def __init__(self, label: str, total: int, cache_hits: int, interval_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic, log: logging.Logger = logger,
                 run_plan: RunPlan | None = None):
        self.label = label
        self.total = total
        self.cache_hits = cache_hits
        self.uncached_done = 0
        self.tokens = 0
        self.cost_usd = 0.0
        self.unpriced = 0
        self.unusable_batch_lines: Counter[str] = Counter()
        self.interval_s = interval_s
        self._clock = clock
        self._log = log
        self._run_plan = run_plan if run_plan is not None else RunPlan.from_environment()
        self._start = clock()
        self._last = float("-inf")
        self.emit(force=True)

    @property
    def done(self) -> int:
        return self.cache_hits + self.uncached_done

    def advance(self, completion: Any = None) -> None:
        """One request answered; `completion` (a Completion) adds what it paid, unless it came
        from the cache."""
        self.uncached_done += 1
        if completion is not None and not completion.cached:
            self.tokens += completion.usage.total_tokens
            if completion.cost_usd is None:
                self.unpriced += 1
            else:
                self.cost_usd += completion.cost_usd
        self.emit(force=self.done == self.total)

    def note_batch_lines(self, unusable: Mapping[str, int]) -> None:
        """Result lines of a collected batch that were of no use, by kind
        (UNUSABLE_BATCH_LINES)."""
        self.unusable_batch_lines.update({k: n for k, n in unusable.items() if n})

    def batch_lines(self) -> str:
        """"3 batch result lines unusable: 1 with conflicting answers, ...", or ""."""
        counts = self.unusable_batch_lines
        total = sum(counts.values())
        if not total:
            return ""
        kinds = [f"{counts[kind]} {words}" for kind, words in UNUSABLE_BATCH_LINES.items()
                 if counts[kind]]
        kinds += [f"{n} {kind}" for kind, n in sorted(counts.items())
                  if n and kind not in UNUSABLE_BATCH_LINES]
        return f"{total} batch result line{'s' * (total != 1)} unusable: {', '.join(kinds)}"

    def paid(self) -> str:
        text = f"{format_tokens(self.tokens)} tokens, ${self.cost_usd:.4f}"
        if self.unpriced:
            text += f" + {self.unpriced} call(s) of unknown price"
        return text

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
        if self.uncached_done:
            parts.append(self.paid())
        if self.unusable_batch_lines:
            parts.append(self.batch_lines())
        if self._run_plan is not None:
            parts.append(self._run_plan.line())
        return " | ".join(parts)

    def emit(self, force: bool = False) -> None:
        now = self._clock()
        if force or now - self._last >= self.interval_s:
            self._last = now
            # The last line of a batch with unusable result lines is a warning: the summary a
            # user reads at the end of a job.
            final_warning = self.unusable_batch_lines and self.done == self.total
            self._log.log(logging.WARNING if final_warning else logging.INFO, self.line())
