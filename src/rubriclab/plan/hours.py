"""How long a run takes, as its providers document it.

Without batch mode a model is bound by its rate limits, counted as its provider counts them
(`limit_hours`): requests a minute; `tokens_per_minute`, prompt and completion together
(OpenAI's TPM); `input_tokens_per_minute`, prompt tokens, of which Anthropic counts the
uncached ones only (cache reads do not count against its ITPM); `output_tokens_per_minute`,
completion tokens, thinking included (Anthropic's OTPM). Every job of the run shares them, so a
model's rows are summed; its concurrency bounds it too. The slowest bound binds.

With batch mode a job waits for its batch, so what takes time is the batch waits in series: the
critical path of the run's DAG counted in batch waits (`batch_critical_path`), each as long as
its provider's window: at worst the window the provider promises, typically what it documents as
typical, where it does (`BATCH_WINDOWS`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rubriclab.llm.pricing import provider_of
from rubriclab.llm.ratelimit import CACHE_READS_FREE_OF_INPUT_LIMIT
from rubriclab.llm.settings import ModelSettings


@dataclass(frozen=True)
class BatchWindow:
    """How long a provider's batch takes: at worst (its promise) and typically (None where the
    provider documents no typical time)."""

    name: str
    worst_h: float
    typical_h: float | None
    source: str


BATCH_WINDOWS = {
    "anthropic": BatchWindow(
        "Anthropic", 24.0, 1.0,
        "docs.anthropic.com/en/docs/build-with-claude/batch-processing: \"most batches finish "
        "in less than 1 hour\", results within 24 hours"),
    "openai": BatchWindow(
        "OpenAI", 24.0, None,
        "platform.openai.com/docs/guides/batch: a 24-hour completion window, no typical time"),
    "gemini": BatchWindow(
        "Gemini", 24.0, None,
        "ai.google.dev/gemini-api/docs/batch-mode: a 24-hour target turnaround, \"in majority "
        "of cases ... much quicker\", no typical time"),
}
_UNKNOWN_WINDOW = BatchWindow("its provider", 24.0, None, "no batch window documented here")


def window_of(model: str) -> BatchWindow:
    return BATCH_WINDOWS.get(provider_of(model), _UNKNOWN_WINDOW)


def limit_hours(model: str, settings: ModelSettings, requests: Any, prompt: Any,
                cache_read: Any, completion: Any, seconds: Any) -> dict[str, Any]:
    """Hours of a model's requests (numbers or pandas Series, one per row) under each bound it
    has: its concurrency (`seconds` of latency, `concurrency` at a time) and each rate limit
    set, each counting the tokens its provider counts. `cache_read`: prompt tokens read from
    the provider's cache (left out of Anthropic's input limit)."""
    hours = {"concurrency": seconds / max(1, settings.concurrency) / 3600}
    per_minute = {
        "requests_per_minute": requests,
        "tokens_per_minute": prompt + completion,
        "input_tokens_per_minute": (prompt - cache_read
                                    if provider_of(model) in CACHE_READS_FREE_OF_INPUT_LIMIT
                                    else prompt),
        "output_tokens_per_minute": completion,
    }
    for name, counted in per_minute.items():
        limit = getattr(settings, name)
        if limit:
            hours[name] = counted / limit / 60
    return hours


@dataclass(frozen=True)
class BatchWait:
    """One wait for a batch: the job's n-th asking that sent requests to a batch."""

    job: int
    rule: str
    label: str
    models: tuple[str, ...]

    @property
    def worst_h(self) -> float:
        return max(window_of(m).worst_h for m in self.models)

    @property
    def typical_h(self) -> float | None:
        typical = [window_of(m).typical_h for m in self.models]
        known = [t for t in typical if t is not None]
        return None if len(known) < len(typical) else max(known)


@dataclass(frozen=True)
class BatchPath:
    """The longest chain of batch waits one after another in the run's DAG."""

    waits: tuple[BatchWait, ...] = ()

    @property
    def worst_h(self) -> float:
        return sum(w.worst_h for w in self.waits)

    @property
    def typical_h(self) -> float | None:
        typical = [w.typical_h for w in self.waits]
        known = [t for t in typical if t is not None]
        return None if len(known) < len(typical) else sum(known)

    def describe(self) -> str:
        return " → ".join(w.label for w in self.waits)


def batch_critical_path(rows: Iterable[Any], batched: Callable[[Any], bool] | None = None
                        ) -> BatchPath:
    """The most batch waits in series: a job waits once for each of its askings that sent
    requests to a batch (however many models that asking batched: they are submitted side by
    side), after the waits of the model jobs it needs (the rows' `jobs`, `after`, per job its
    own upstream jobs, and `batch_askings`, rubriclab.plan.planner.PlannedRow). Jobs side by
    side count once.

    A row that does not say where it sits in the DAG (no `jobs`) but is batched (`batched`) is
    taken to wait once per rule, after every other wait: an upper bound."""
    askings: dict[int, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    after: dict[int, set[int]] = defaultdict(set)
    named: dict[int, tuple[str, str]] = {}
    unplaced: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        jobs = tuple(getattr(row, "jobs", ()) or ())
        if not jobs:
            if batched is not None and row.to_pay and batched(row):
                unplaced[row.rule].add(row.model)
            continue
        upstream = getattr(row, "after", None) or {}
        for job in jobs:
            after[job].update(upstream.get(job, ()))
            named.setdefault(job, (row.rule, row.label))
        for job, asking in getattr(row, "batch_askings", ()) or ():
            askings[job][asking].add(row.model)
    longest: dict[int, tuple[BatchWait, ...]] = {}
    for job in sorted(after):  # a job's index is after those of the jobs it needs
        before = max((longest[j] for j in after[job] if j in longest),
                     key=_path_order, default=())
        rule, label = named[job]
        longest[job] = before + tuple(BatchWait(job, rule, label, tuple(sorted(models)))
                                      for _, models in sorted(askings[job].items()))
    path = max(longest.values(), key=_path_order, default=())
    last = max(after, default=-1)
    for n, (rule, models) in enumerate(sorted(unplaced.items()), start=1):
        path += (BatchWait(last + n, rule, rule, tuple(sorted(models))),)
    return BatchPath(path)


def _path_order(waits: tuple[BatchWait, ...]) -> tuple[float, float, float]:
    """The most waits, then the longest at worst, then typically (a wait of no documented
    typical time as the longest), so that a tie never hides the slower branch."""
    typical = [w.typical_h for w in waits]
    known = [t for t in typical if t is not None]
    return (len(waits), sum(w.worst_h for w in waits),
            math.inf if len(known) < len(typical) else sum(known))
