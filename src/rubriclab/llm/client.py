"""The one way in for every model call: `LLMClient.run(requests) -> completions`.

For a batch of requests it looks every key up in the cache first, checks API keys for the models
that still need calls (before any call is made), then runs the misses concurrently with a
per-model limit. Before paying for a miss it claims the key in the cache; a key another process
(or task) has claimed is waited for, not paid again. Each call is retried with backoff on rate
limits (as long as the provider's Retry-After asks), server errors, timeouts, dropped connections
and empty answers, within a deadline per request; before each attempt it waits for its start
in the model's rate limits, which every process of the run shares (`rubriclab.llm.ratelimit`; a
429 pauses the model for all of them), and books the attempt's worst-case cost on the run's bill,
which stops the run before it passes `llm.budget_usd` (`rubriclab.llm.budget`). Errors that
asking again cannot cure (authentication, missing credentials, unknown model, bad request) fail
at once, and a model whose requests keep failing the same way is no longer asked. An answer is
parsed strictly and re-asked a bounded number of times; it is cached the moment it parses, and
only then (journaled first, so that no paid answer is lost: `rubriclab.llm.journal`); no paid
call starts without `llm.min_free_disk_mb` free where it is stored. A model whose answers keep
coming back unusable (never parsed, or cut off at every budget) is no longer asked either, and
the job fails (`UnusableAnswers`). Every request is written to the ledger and counted in the
progress line. Known secrets (keys in the environment, credentials in an `api_base`) are
redacted from what it logs, journals and raises (`rubriclab.llm.redact`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import replace
from typing import Protocol

from . import redact
from .admission import Admission
from .attempts import Attempts
from .backends import Backends
from .batch import BatchRunner
from .batched import Batched
from .breaker import Breaker, Usability
from .budget import BudgetExceeded
from .cache_lookup import CacheLookup
from .cache_records import DiskSpaceLow
from .claiming import CLAIM_LEASE_S, Claiming
from .failures import Answered
from .formats import get_format
from .ledger import Ledger
from .misses import Misses
from .providers import provider_for
from .request import Completion, Request, cache_key
from .settings import LLMConfig, check_batch_settings, check_unusable_settings
from .stopping import JobStopped, StopSignals
from .storage import AnswerCache, open_cache, open_rate_limiter, open_spend_record

log = logging.getLogger("rubriclab.llm")

UNUSABLE_ADVICE = (
    "Unusable answers are not cached, so a rerun asks them again: change the model, or its"
    " prompt or answer format; for answers cut off at their budget, a larger max_tokens or"
    " llm.per_model.<model>.budget_doublings; or, if such answers are expected, raise"
    " llm.per_model.<model>.max_unusable_in_a_row / max_unusable_share (or"
    " unusable_min_answers)")


class StandIn(Protocol):
    """Answers prepared requests instead of their models (`rubriclab plan`)."""

    def answer(self, client: LLMClient, requests: Sequence[Request],
               label: str) -> list[Completion]: ...


_STAND_IN: ContextVar[StandIn | None] = ContextVar("rubriclab_stand_in", default=None)


@contextlib.contextmanager
def answered_by(stand_in: StandIn) -> Iterator[None]:
    """Within this block, every LLMClient.run is answered by `stand_in`: no model, cache write
    or ledger line; API keys are not checked."""
    token = _STAND_IN.set(stand_in)
    try:
        yield
    finally:
        _STAND_IN.reset(token)


class ModelCallsFailed(RuntimeError):
    """Some requests got no usable answer after every retry; the others are cached."""


class UnusableAnswers(ModelCallsFailed):
    """A model's answers in a job kept coming back unusable (`ModelSettings.
    max_unusable_in_a_row`, `max_unusable_share`): it was no longer asked, and the job fails
    whatever `raise_on_failure` says. Unusable answers are never cached."""


class SecretInError(RuntimeError):
    """An error whose message held a known secret, raised again with the secret redacted
    (the original, chained, would print it)."""


class LLMClient(CacheLookup, Batched, Misses, Claiming, Admission, Attempts, Breaker):
    """Answers requests: `run(requests) -> completions`, each request through the stages
    cached? (`cache_lookup`) -> batched? (`batched`) -> claimed? -> within budget, disk and
    rate limits? (`claiming`, `admission`) -> asked, retried, re-asked and stored
    (`attempts`) -> recorded and noted by the breaker (`breaker`); `misses` runs the
    stages of the requests the cache did not answer. Each stage is a class mixed in here
    that works on this client's state."""

    def __init__(self, config: LLMConfig, *, ledger: Ledger | None = None,
                 cache: AnswerCache | None = None, role: str | None = None,
                 run_name: str | None = None):
        self.config = config
        self.role = role  # the part its models play, unless a request or a run names another
        self.ledger = ledger
        if ledger is not None and config.cache_url:
            # where every host's rows meet
            ledger.send_rows_to(config.cache_url, config.cache_reconnect_s)
        self.cache = cache if cache is not None else open_cache(config)
        self.backends = Backends(config)
        self.batches = BatchRunner(config, before_submit=self._before_batch)
        # Shared by every process of the run: the schedule of each model's requests and tokens
        # (beside the cache; with a PostgreSQL cache, in its database) and the run's bill (beside
        # its ledgers; with a PostgreSQL cache, the row of the run named `run_name`, None: the
        # unnamed run, shared by every host).
        self.limiter = open_rate_limiter(config)
        self.spend = (open_spend_record(config, ledger.path, run_name) if ledger is not None
                      else None)
        self._budget_stop: str | None = None  # why the run stopped at its budget
        # key -> characters of its shared prefix marked cacheable, for the run under way.
        self._cache_marks: dict[str, int] = {}
        self.claim_lease_s = CLAIM_LEASE_S
        self._owner = uuid.uuid4().hex  # this client's name on the claims it holds
        self._held: set[str] = set()  # keys this client is answering now
        self._model_fatal: set[str] = set()  # keys whose failure no request to its model escapes
        self._stops: dict[str, str] = {}  # model -> why the last batch stopped asking it
        self._usability: dict[str, Usability] = defaultdict(Usability)  # by model, this job
        for settings in (config.defaults, *config.per_model.values()):
            redact.register_url_credentials(settings.api_base)
        redact.install_log_filter()
        self._disk_stop: str | None = None  # why the run stopped before paying: disk space
        self._adopted: set[str] = set()  # models served entries of an earlier key version
        self._stop = StopSignals(config.stop_grace_s)  # SIGINT / SIGTERM, while `run` runs
        self._not_sent_at_stop = 0

    def close(self) -> None:
        self.batches.close()
        self.limiter.close()
        if self.spend is not None:
            self.spend.close()
        if self.ledger is not None:
            self.ledger.close()
        self.cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        try:
            if exc_type is None:
                self.finish()
        finally:
            self.close()

    def finish(self) -> None:
        """The job's end (leaving `with LLMClient(...)` without an error): UnusableAnswers
        where every answer a model gave the job (one or more) was unusable, though too few to
        reach `max_unusable_in_a_row` or `unusable_min_answers`, so that no job exits 0 with
        nothing usable. Not for `fake/` models, whose answers never parse by design (the dry
        pipeline's agent), nor where `max_unusable_share` is 1 (any share is expected)."""
        hopeless = sorted(m for m, seen in self._usability.items()
                          if seen.answers and seen.unusable == seen.answers
                          and seen.stop is None and not provider_for(m).scripted
                          and self.config.settings_for(m).max_unusable_share < 1)
        if hopeless:
            raise UnusableAnswers(redact.redact(
                "; ".join(f"every answer of model {m!r} in this job was unusable: "
                          f"{self._usability[m].describe()}" for m in hopeless)
                + f". {UNUSABLE_ADVICE}"))

    def key_for(self, request: Request) -> str:
        get_format(request.response_format)
        return cache_key(request, self.backends.fingerprint(request.model))

    def prepare(self, request: Request, role: str | None = None) -> Request:
        """The request as it is sent and keyed: its role's reasoning effort (unless it sets one
        itself) and its model's room for reasoning beside the answer budget. Idempotent."""
        role = request.role or role or self.role
        effort = request.reasoning_effort
        if effort is None:
            effort = self.config.role_settings_for(role, request.model).reasoning_effort
        room = self.config.settings_for(request.model).reasoning_tokens
        if (role, effort, room) == (request.role, request.reasoning_effort,
                                    request.reasoning_tokens):
            return request
        return replace(request, role=role, reasoning_effort=effort, reasoning_tokens=room)

    def run(self, requests: list[Request], label: str = "model calls",
            raise_on_failure: bool = True, role: str | None = None) -> list[Completion]:
        """Answer every request, in order. Unparseable answers come back as such, never guessed.

        `role` (judge, reviser, ...) selects the settings of `llm.roles` for requests that do
        not name a role of their own. With `raise_on_failure`, requests that failed after all
        retries raise ModelCallsFailed once the whole batch is done (so every other answer is
        already cached).
        """
        requests = [self.prepare(r, role) for r in requests]
        stand_in = _STAND_IN.get()
        if stand_in is not None:
            return stand_in.answer(self, requests, label)
        self._stop = StopSignals(self.config.stop_grace_s)
        self._not_sent_at_stop = 0
        try:
            with self._stop.caught():
                answered = asyncio.run(self._run(requests, label))
        except asyncio.CancelledError:
            if not self._stop.stopped:
                raise
            answered = []  # the grace ran out: the journal bills what was in flight
        except Exception as exc:
            # A provider's error may echo the key it was sent; the chained original would
            # print it in the job's traceback, so it is left out.
            if redact.contains_secret(str(exc)):
                raise SecretInError(
                    f"{type(exc).__name__}: {redact.redact(str(exc))}") from None
            raise
        completions = [a.completion for a in answered]
        self._raise_if_stopped(label, requests, completions)
        failed = [a for a in answered if a.completion.outcome == "failed"]
        if failed and raise_on_failure:
            stopped = "".join(f"; {reason}" for reason in self._stops.values())
            first = next((a for a in failed if not a.not_attempted), failed[0]).completion
            raise ModelCallsFailed(redact.redact(
                f"{len(failed)} of {len(completions)} requests in '{label}' failed after retries "
                f"(first: model {first.request.model!r}: {first.error}){stopped}; "
                "the other answers are cached, so a rerun only repeats the failed ones"
            ))
        return completions

    def _raise_if_stopped(self, label: str, requests: list[Request],
                          completions: list[Completion]) -> None:
        """Whatever `raise_on_failure` says, the job ends where the run stopped: it was asked
        to, the disk or the budget ran short, or a model's answers kept coming back unusable."""
        if self._stop.stopped:
            raise JobStopped(redact.redact(
                f"'{label}': {self._stop.describe(self._not_sent_at_stop)}"))
        if self._disk_stop is not None:
            raise DiskSpaceLow(f"'{label}': stopped before paying for more answers: "
                               f"{self._disk_stop}")
        if self._budget_stop is not None:
            # The calls in flight finished and their answers are cached.
            raise BudgetExceeded(redact.redact(f"'{label}': {self._budget_stop}"))
        stops = {m: u.stop for m, u in self._usability.items() if u.stop}
        stopped_unusable = sorted({r.model for r in requests} & stops.keys())
        if stopped_unusable:
            # Every further answer would most likely be paid for and unusable too.
            raise UnusableAnswers(redact.redact(
                f"'{label}': " + "; ".join(stops[m] for m in stopped_unusable)
                + f"; {sum(c.outcome == 'failed' for c in completions)} of {len(completions)}"
                f" requests not answered. {UNUSABLE_ADVICE}"))

    async def _run(self, requests: list[Request], label: str) -> list[Answered]:
        """The stages of one run: every request looked up in the cache; the misses' models
        checked (before any claim is held or call made); the misses answered."""
        task = asyncio.current_task()
        assert task is not None  # a coroutine runs in a task
        self._stop.watch(task, lambda: len(self._held))
        keys = [self.key_for(r) for r in requests]
        results: list[Answered | None] = [None] * len(requests)
        misses: list[int] = []
        for i, (request, key) in enumerate(zip(requests, keys)):
            hit = self.lookup(request, key)
            if hit is None:
                misses.append(i)
                continue
            cached = self._from_cache(request, key, hit)
            results[i] = Answered(cached)
            self._record(cached)

        self._budget_stop = self._disk_stop = None
        for model in sorted({requests[i].model for i in misses}):
            self._check_model(model, batched=any(
                self.config.batch_for(model, requests[i].role or self.role) for i in misses
                if requests[i].model == model))
        with self._renewing_claims():
            return await self._answer_misses(requests, keys, results, misses, label)

    def _check_model(self, model: str, batched: bool) -> None:
        """Before any call to `model` (`batched`: through its batch API): its API key, its
        settings, its budget guard and its batch credentials."""
        if provider_for(model).through_litellm:
            # Imported before any claim is held: the import takes seconds (minutes on a
            # loaded machine), which other processes would spend waiting on those claims.
            self.backends.litellm  # noqa: B018
        self.backends.check_api_key(model)
        check_batch_settings(model, self.config.settings_for(model), f"model {model!r}")
        check_unusable_settings(self.config.settings_for(model), f"model {model!r}")
        self._check_budget_guards(model)
        if batched:
            self.batches.check_credentials(model)

    def _record(self, completion: Completion) -> None:
        """The last stage of every request: its ledger row; its journal entry closed (its
        cost is in the attempts journal now); its answer counted by the breaker."""
        if self.ledger is not None:
            self.ledger.record(completion)
        self.cache.journal_closed(completion.key)
        self._note_usability(completion)
