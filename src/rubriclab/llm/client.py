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
import math
import random
import sqlite3
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Protocol

from . import pricing, redact
from .backends import (AnswerCutOff, Backends, DeadlineExceeded, EmptyAnswer, RawAnswer,
                       UnreadableReply,
                       is_model_fatal, is_rate_limited, is_retryable, made_no_completion,
                       retry_after_s, within_deadline)
from .batch import BatchOutcome, BatchRunner
from .budget import (BudgetCannotGuard, BudgetExceeded, Reservation, SpendRecord,
                     spend_record_path, unguarded_message, unguarded_models, usd,
                     worst_cost)
from .cache import (CacheBackend, CachedAnswer, CacheUnreachable, Claim, DiskSpaceLow,
                    free_space_problem, make_answer, open_cache)
from .formats import UnparseableAnswer, get_format
from .ledger import Ledger, attempts_path
from .progress import Progress
from .prompt_cache import cache_marked_messages, cacheable_prefixes, min_cacheable_tokens
from .ratelimit import (Booking, RateLimiter, RateLimitWait, estimate_prompt_tokens,
                        limited_input_tokens)
from .request import (CACHE_KEY_VERSION, Completion, Request, Usage, cache_key,
                      legacy_cache_keys)
from .settings import LLMConfig, ModelSettings, check_batch_settings, check_unusable_settings
from .stopping import JobStopped, StopSignals

log = logging.getLogger("rubriclab.llm")

# An in-flight claim lasts this long unless its holder renews it (every third of it).
CLAIM_LEASE_S = 30.0
NOT_ATTEMPTED = "NotAttempted"
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


@dataclass
class _Usability:
    """One model's answers in one client's life (one job): how many, how many unusable, the
    current run of unusable ones, the last unusable one, and why the model was stopped."""

    answers: int = 0
    unusable: int = 0
    in_a_row: int = 0
    example: Completion | None = None
    stop: str | None = None

    def describe(self) -> str:
        share = self.unusable / self.answers if self.answers else 0.0
        text = f"{self.unusable} of {self.answers} answers unusable ({share:.0%})"
        if self.example is not None:
            shown = self.example.text[:200] if self.example.text else "(no text)"
            text += f"; e.g. {shown!r}: {self.example.error}"
        return text


class _AttemptsExhausted(Exception):
    def __init__(self, cause: Exception, attempts: int):
        super().__init__(str(cause))
        self.cause = cause
        self.attempts = attempts
        # what attempts answered without an answer to keep (empty, unreadable) were billed
        self.spent: RawAnswer | None = None


class LLMClient:
    def __init__(self, config: LLMConfig, *, ledger: Ledger | None = None,
                 cache: CacheBackend | None = None, role: str | None = None):
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
        # (beside the cache) and the run's bill (beside its ledgers).
        self.limiter = RateLimiter(config.local_dir / "rate_limits.sqlite")
        self.spend = SpendRecord(spend_record_path(ledger.path)) if ledger is not None else None
        self._budget_stop: str | None = None  # why the run stopped at its budget
        # key -> characters of its shared prefix marked cacheable, for the run under way.
        self._cache_marks: dict[str, int] = {}
        self.claim_lease_s = CLAIM_LEASE_S
        self._owner = uuid.uuid4().hex  # this client's name on the claims it holds
        self._held: set[str] = set()  # keys this client is answering now
        self._model_fatal: set[str] = set()  # keys whose failure no request to its model escapes
        self._stops: dict[str, str] = {}  # model -> why the last batch stopped asking it
        self._usability: dict[str, _Usability] = defaultdict(_Usability)  # by model, this job
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
        close = getattr(self.cache, "close", None)
        if close:
            close()

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
                          and seen.stop is None and not m.startswith("fake/")
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
                completions = asyncio.run(self._run(requests, label))
        except asyncio.CancelledError:
            if not self._stop.stopped:
                raise
            completions = []  # the grace ran out: the journal bills what was in flight
        except Exception as exc:
            # A provider's error may echo the key it was sent; the chained original would
            # print it in the job's traceback, so it is left out.
            if redact.contains_secret(str(exc)):
                raise SecretInError(
                    f"{type(exc).__name__}: {redact.redact(str(exc))}") from None
            raise
        if self._stop.stopped:
            # Whatever `raise_on_failure` says: the job was asked to end.
            raise JobStopped(redact.redact(
                f"'{label}': {self._stop.describe(self._not_sent_at_stop)}"))
        if self._disk_stop is not None:
            raise DiskSpaceLow(f"'{label}': stopped before paying for more answers: "
                               f"{self._disk_stop}")
        if self._budget_stop is not None:
            # Whatever `raise_on_failure` says: the job stops; the calls in flight finished and
            # their answers are cached.
            raise BudgetExceeded(redact.redact(f"'{label}': {self._budget_stop}"))
        stopped_unusable = sorted({r.model for r in requests}
                                  & {m for m, u in self._usability.items() if u.stop})
        if stopped_unusable:
            # Whatever `raise_on_failure` says: every further answer would most likely be
            # paid for and unusable too.
            raise UnusableAnswers(redact.redact(
                f"'{label}': " + "; ".join(self._usability[m].stop for m in stopped_unusable)
                + f"; {sum(c.outcome == 'failed' for c in completions)} of {len(completions)}"
                f" requests not answered. {UNUSABLE_ADVICE}"))
        failed = [c for c in completions if c.outcome == "failed"]
        if failed and raise_on_failure:
            stopped = "".join(f"; {reason}" for reason in self._stops.values())
            attempted = [c for c in failed if not c.error.startswith(NOT_ATTEMPTED)] or failed
            raise ModelCallsFailed(redact.redact(
                f"{len(failed)} of {len(completions)} requests in '{label}' failed after retries "
                f"(first: model {attempted[0].request.model!r}: {attempted[0].error}){stopped}; "
                "the other answers are cached, so a rerun only repeats the failed ones"
            ))
        return completions

    async def _run(self, requests: list[Request], label: str) -> list[Completion]:
        self._stop.watch(asyncio.current_task(), lambda: len(self._held))
        keys = [self.key_for(r) for r in requests]
        results: list[Completion | None] = [None] * len(requests)
        misses: list[int] = []
        for i, (request, key) in enumerate(zip(requests, keys)):
            hit = self.lookup(request, key)
            if hit is None:
                misses.append(i)
                continue
            results[i] = self._from_cache(request, key, hit)
            self._record(results[i])

        self._budget_stop = self._disk_stop = None
        for model in sorted({requests[i].model for i in misses}):
            if not model.startswith("fake/"):
                # Imported before any claim is held: the import takes seconds (minutes on a
                # loaded machine), which other processes would spend waiting on those claims.
                self.backends.litellm  # noqa: B018
            self.backends.check_api_key(model)
            check_batch_settings(model, self.config.settings_for(model), f"model {model!r}")
            check_unusable_settings(self.config.settings_for(model), f"model {model!r}")
            self._check_budget_guards(model)
            if any(self.config.batch_for(model, requests[i].role or self.role) for i in misses
                   if requests[i].model == model):
                self.batches.check_credentials(model)
        with self._renewing_claims():
            return await self._answer_misses(requests, keys, results, misses, label)

    async def _answer_misses(self, requests: list[Request], keys: list[str],
                             results: list[Completion | None], misses: list[int],
                             label: str) -> list[Completion]:
        held = self._held_by_stored_batches(requests, keys, misses)
        batched: dict[str, list[int]] = defaultdict(list)
        for i in misses:
            if (self.config.batch_for(requests[i].model, requests[i].role or self.role)
                    or keys[i] in held):
                claim = self._claim(keys[i])
                if claim.answer is not None:  # answered since the lookup
                    results[i] = self._from_cache(requests[i], keys[i], claim.answer)
                    self._record(results[i])
                elif claim.claimed:
                    self._held.add(keys[i])
                    batched[requests[i].model].append(i)
                # else another process is paying for it: waited for below, as an ordinary miss
        misses = [i for i in misses if results[i] is None]
        in_batch = {i for indices in batched.values() for i in indices}
        # Batched requests too: a batch request is sent as an ordinary call would be.
        self._cache_marks = self._prompt_cache_marks([requests[i] for i in misses],
                                                     [keys[i] for i in misses])

        progress = Progress(label, len(requests), len(requests) - len(misses),
                            interval_s=self.config.progress_interval_s)
        limits: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(1))
        for model in {requests[i].model for i in misses}:
            limits[model] = asyncio.Semaphore(max(1, self.config.settings_for(model).concurrency))
        # A model stopped for unusable answers earlier in this job stays stopped.
        self._stops = {m: u.stop for m, u in self._usability.items() if u.stop}
        streaks: dict[str, tuple[str, int]] = {}  # model -> (failure kind, requests in a row)

        async def answer(i: int) -> None:
            request, key = requests[i], keys[i]
            settings = self.config.settings_for(request.model)
            waited_since = None
            poll_s = 0.05
            while True:
                completion = None
                async with limits[request.model]:
                    if self._disk_stop is None:
                        self._disk_stop = self._disk_problem(request)
                    stop = self._budget_stop or self._disk_stop or self._stop_reason()
                    if request.model in self._stops or stop is not None:
                        why = self._stops.get(request.model) or stop
                        completion = Completion(request=request, key=key, outcome="failed",
                                                error=f"{NOT_ATTEMPTED}: {why}")
                    else:
                        # Answered since the batch started, or being answered elsewhere?
                        # (An answer that is not cached is not shared: nothing to claim.)
                        shared = self.config.caches(request.model)
                        try:
                            if not shared:
                                claim = Claim(claimed=True)
                            elif getattr(self.cache, "claims_wait_for_server", False):
                                # It may wait out a lost server (llm.cache_reconnect_s): in a
                                # thread, so that the calls in flight are answered meanwhile.
                                # The key counts as held while it is claimed, so that another
                                # task asking it meanwhile waits for this one's answer.
                                others = key in self._held
                                self._held.add(key)
                                try:
                                    claim = await asyncio.to_thread(self._claim, key, others)
                                finally:
                                    if not others:
                                        self._held.discard(key)
                            else:
                                claim = self._claim(key)
                        except sqlite3.OperationalError as exc:  # nothing paid yet
                            if isinstance(exc, CacheUnreachable):
                                # The server stayed lost past llm.cache_reconnect_s: the job
                                # stops (rather than each request failing), once the calls in
                                # flight are answered and journaled.
                                longest = max(s.deadline_s for s in (
                                    self.config.defaults, *self.config.per_model.values()))
                                until = time.monotonic() + longest + 5
                                while self._held and time.monotonic() < until:
                                    await asyncio.sleep(0.1)
                                raise
                            claim = Claim(holder="the cache")
                            completion = Completion(
                                request=request, key=key, outcome="failed",
                                error=f"CacheUnwritable: could not claim it in the cache "
                                      f"({exc}); nothing was paid, a rerun asks it again")
                        if completion is not None:
                            pass
                        elif claim.answer is not None:
                            completion = self._from_cache(request, key, claim.answer)
                        elif claim.claimed:
                            self._held.add(key)
                            try:
                                completion = await self._call(request, key)
                            finally:
                                self._held.discard(key)
                                if shared:
                                    self._release(key)
                if completion is None and self._stop.stopped:
                    completion = Completion(request=request, key=key, outcome="failed",
                                            error=f"{NOT_ATTEMPTED}: {self._stop_reason()}")
                if completion is not None:
                    if completion.error.startswith(NOT_ATTEMPTED) and self._stop.stopped:
                        self._not_sent_at_stop += 1
                    break
                # Another process pays for it: wait (without holding a slot) for its answer.
                waited = 0.0 if waited_since is None else time.monotonic() - waited_since
                if waited_since is None:
                    waited_since = time.monotonic()
                    log.info("%s: waiting for the answer %s is paying for", request.model,
                             claim.holder)
                elif waited > self._wait_limit_s(settings):
                    completion = Completion(
                        request=request, key=key, outcome="failed",
                        latency_s=waited,
                        error=f"WaitedTooLong: {claim.holder} has held this request for "
                              f"{waited:.0f} s, past how long it may take "
                              f"({self._wait_limit_s(settings):.0f} s)")
                    break
                await asyncio.sleep(poll_s)
                poll_s = min(1.0, poll_s * 1.5)
            results[i] = completion
            self._record(completion)
            self._note_outcome(completion, settings, streaks)
            progress.advance(completion)

        async def answer_batch(model: str, indices: list[int]) -> None:
            unique = {keys[i]: requests[i] for i in indices}
            # Not batched now (batch: false since): its requests a stored batch holds are
            # collected from it, and nothing new is submitted.
            submit = any(self.config.batch_for(model, requests[i].role or self.role)
                         for i in indices)
            try:
                self.batches.store.clean_answers(lambda k: self.cache.get(k) is not None)
                outcomes = await self.batches.run(
                    model, unique, {key: self._messages_for(r, key) for key, r in unique.items()},
                    submit=submit)
                progress.note_batch_lines(outcomes.unusable_lines)

                async def settle(i: int) -> None:
                    async with limits[model]:
                        results[i] = await self._settle(requests[i], keys[i],
                                                        outcomes[keys[i]], submit)
                    self._record(results[i])
                    # Served (cached and billed, or asked otherwise): no longer kept.
                    self.batches.store.forget_answers(model, [keys[i]])
                    progress.advance(results[i])

                await asyncio.gather(*(settle(i) for i in indices))
            finally:
                for key in unique:
                    self._held.discard(key)
                    self._release(key)

        # Tasks start in request order and semaphores are FIFO, so a model limited to one
        # call at a time answers in that order (consecutive checks of one item share a
        # prefix).
        await asyncio.gather(*(answer(i) for i in misses if i not in in_batch),
                             *(answer_batch(m, indices) for m, indices in batched.items()))
        return [r for r in results if r is not None]

    def _prompt_cache_marks(self, requests: list[Request], keys: list[str]) -> dict[str, int]:
        """Shared prefixes to mark cacheable, by key: of the models whose provider caches only
        what is marked, where the prefix is long enough (`rubriclab.llm.prompt_cache`)."""
        marking = [i for i, r in enumerate(requests)
                   if self.config.settings_for(r.model).prompt_cache
                   and min_cacheable_tokens(r.model) is not None]
        if not marking:
            return {}
        chosen = cacheable_prefixes([requests[i] for i in marking])
        return {keys[i]: chars for i, chars in zip(marking, chosen) if chars}

    def _messages_for(self, request: Request, key: str) -> list[dict]:
        """The messages as sent: with the shared prefix marked cacheable where it qualifies.
        Transport only; the key was made from the request as it is."""
        marked = self._cache_marks.get(key)
        return cache_marked_messages(request, marked) if marked else request.message_dicts()

    async def _settle(self, request: Request, key: str, outcome: BatchOutcome,
                      batched: bool = True) -> Completion:
        """A completion from what a batch gave one request: its answer (parsed, re-asked as
        ordinary calls if it does not parse), else an ordinary call or a failure. `batched`
        False: the model is no longer batched, so a request its stored batch did not answer
        is asked as an ordinary call, whatever `batch_fallback` says."""
        hit = self.cache.get(key)
        if hit is not None:  # answered meanwhile (a duplicate request, another job)
            return self._from_cache(request, key, hit)
        if outcome.unsent:  # never in a batch: an ordinary call, as any other of the run
            return await self._call(request, key)
        if outcome.over_budget or outcome.disk_low:
            if outcome.over_budget:
                self._budget_stop = self._budget_stop or outcome.error
            else:
                self._disk_stop = self._disk_stop or outcome.error
            return Completion(request=request, key=key, outcome="failed",
                              error=f"{NOT_ATTEMPTED}: {outcome.error}", batch=True)
        answer = outcome.answer
        if answer is not None and _usable(request, answer):
            return replace(await self._call(request, key, prior=answer), batch=True)
        error = redact.redact(outcome.error or (f"batch {outcome.batch_id}: the answer was cut "
                                                "off at its budget or empty"))
        settings = self.config.settings_for(request.model)
        # The batch's answers that cannot be used (cut off, empty, or conflicting lines) were
        # paid for all the same: on the run's bill, and part of what this request cost.
        unused = ((answer,) if answer is not None else ()) + outcome.spent
        spent = RawAnswer("", 0, 0, 0.0)
        for paid in unused:
            spent = _added(spent, paid)
            if paid.cost_usd and self.spend is not None:
                self.spend.add(paid.cost_usd)
        if outcome.running or (batched and settings.batch_fallback == "fail"):
            log.warning("request to %s failed: %s", request.model, error)
            return Completion(request=request, key=key, outcome="failed",
                              usage=Usage(spent.prompt_tokens, spent.completion_tokens,
                                          spent.cache_read_tokens, spent.cache_write_tokens),
                              cost_usd=spent.cost_usd, attempts=len(unused),
                              error=error, batch=True)
        (log.warning if outcome.spent else log.info)("%s; asking it as an ordinary call", error)
        completion = await self._call(request, key)
        if not unused:
            return completion
        # What the batch's unusable answers cost is part of what this request cost; the first
        # was the first asking, so every prompt token after it is a repeat's.
        usage = completion.usage
        return replace(completion, attempts=completion.attempts + len(unused),
                       cost_usd=_plus_cost(completion.cost_usd, spent.cost_usd), batch=True,
                       repeat_prompt_tokens=(usage.prompt_tokens + spent.prompt_tokens
                                             - unused[0].prompt_tokens),
                       usage=Usage(usage.prompt_tokens + spent.prompt_tokens,
                                   usage.completion_tokens + spent.completion_tokens,
                                   usage.cache_read_tokens + spent.cache_read_tokens,
                                   usage.cache_write_tokens + spent.cache_write_tokens))

    def _held_by_stored_batches(self, requests: list[Request], keys: list[str],
                                misses: list[int]) -> set[str]:
        """Keys of misses not batched now that a stored batch holds (or has answered): they
        are collected from it, never paid for again as ordinary calls (docs/batches.md)."""
        by_model: dict[str, set[str]] = defaultdict(set)
        for i in misses:
            if not self.config.batch_for(requests[i].model, requests[i].role or self.role):
                by_model[requests[i].model].add(keys[i])
        held: set[str] = set()
        for model, model_keys in sorted(by_model.items()):
            found = self.batches.stored_keys(model, model_keys)
            if found:
                self.batches.check_credentials(model)
                held |= found
        return held

    def lookup(self, request: Request, key: str, migrate: bool = True) -> CachedAnswer | None:
        """The cached answer of `key`; or one stored under a key of the same request from
        before numbers were normalised, which is then stored under `key` too (unless
        `migrate` is False: the plan only reads the cache)."""
        hit = self.cache.get(key)
        fingerprint = self.backends.fingerprint(request.model)
        if hit is not None:
            if (migrate and hit.model_fingerprint is None
                    and hasattr(self.cache, "record_fingerprint")):
                self.cache.record_fingerprint(key, fingerprint)
            return hit
        earlier = [cache_key(request, fp) for fp in self.backends.credentialed_fingerprints(
            request.model)]
        for legacy in [*legacy_cache_keys(request, fingerprint), *earlier]:
            old = self.cache.get(legacy)
            if old is not None:
                migrated = replace(old, key=key, model_fingerprint=fingerprint,
                                   key_version=CACHE_KEY_VERSION)
                if migrate:
                    self.cache.put(migrated)
                return migrated
        # Stored under an earlier key version's fingerprint (by a release that recorded none).
        earlier_entry = getattr(self.cache, "earlier_version_entry", None)
        for earlier in self.backends.earlier_fingerprints(request.model) if earlier_entry else ():
            for old_key in [cache_key(request, earlier), *legacy_cache_keys(request, earlier)]:
                old = earlier_entry(old_key)
                if old is None:
                    continue
                if request.model not in self._adopted:
                    self._adopted.add(request.model)
                    log.warning("%s: serving answers an earlier release cached (key version 1, "
                                "before a model's endpoint was part of its key; it recorded "
                                "none) as this endpoint's, stored again under this version's "
                                "keys", request.model)
                migrated = replace(old, key=key, model_fingerprint=fingerprint,
                                   key_version=CACHE_KEY_VERSION)
                if migrate:
                    self.cache.put(migrated)
                return migrated
        return None

    def _check_budget_guards(self, model: str) -> None:
        """Under a budget, before any call: every paid model's calls can be counted."""
        budget = self.config.budget_usd
        if budget is None or pricing.is_free(model):
            return
        if self.spend is None:
            raise BudgetCannotGuard(
                f"a budget is set (llm.budget_usd = {usd(budget)}), but this client has no "
                "ledger, beside which the run's bill is kept; give it one, or set no budget")
        settings = {model: self.config.settings_for(model)}
        if unguarded_models(budget, [model], settings=settings):
            raise BudgetCannotGuard(f"model {unguarded_message(budget, [model], settings)}")

    def _reserve(self, request: Request, messages: list[dict], settings: ModelSettings
                 ) -> Reservation | None:
        """Book the worst case of one paid attempt on the run's bill (BudgetExceeded if the
        budget would not hold it); None where nothing is counted (a free model, no spend
        record, a model of unknown price without a budget)."""
        if self.spend is None or pricing.is_free(request.model):
            return None
        worst = _worst_cost(request, messages, settings, batch=False)
        if worst is None:
            return None  # unknown price: refused before the first call under a budget
        budget = self.config.budget_usd
        return self.spend.reserve(worst, math.inf if budget is None else budget,
                                  f"a call to {request.model!r}")

    def _before_batch(self, model: str, requests: dict[str, Request],
                      messages: dict[str, list[dict]]) -> Callable[[], None]:
        """Before a new batch is paid for, as before an ordinary call: DiskSpaceLow where too
        little space is free to store its answers; its worst case booked on the run's bill
        (`_reserve_batch`); each of its requests journaled as sent, so that a job killed
        while it runs leaves them on the bill. What releases the booking."""
        disk = self._disk_problem(next(iter(requests.values())))
        if disk is not None:
            raise DiskSpaceLow(disk)
        release = self._reserve_batch(model, requests, messages)
        for key, request in requests.items():
            self._journal_sent(request, key, batch=True)
        return release

    def _reserve_batch(self, model: str, requests: dict[str, Request],
                       messages: dict[str, list[dict]]) -> Callable[[], None]:
        """Book a new batch's worst case (every request at its whole budget, as a batch) on
        the run's bill, or raise BudgetExceeded; what releases the booking once its answers
        are billed. A batch whose answers are never read (a killed job, one still running
        when this run stopped waiting) keeps its worst case on the bill."""
        settings = self.config.settings_for(model)
        if self.spend is None or pricing.is_free(model):
            return lambda: None
        worst = 0.0
        for key, request in requests.items():
            cost = _worst_cost(request, messages.get(key) or request.message_dicts(), settings,
                               batch=True)
            if cost is None:
                return lambda: None  # unknown price: refused before the first call under a budget
            worst += cost
        budget = self.config.budget_usd
        spend = self.spend
        reservation = spend.reserve(worst, math.inf if budget is None else budget,
                                    f"a batch of {len(requests)} requests to {model!r}")
        return lambda: spend.release(reservation)

    async def _wait_for_rate(self, request: Request, messages: list[dict],
                             settings: ModelSettings, deadline: float) -> Booking | None:
        """Wait for this attempt's start in the model's shared schedule (and past any pause a
        429 set for every process); RateLimitWait if it would pass the deadline."""
        if pricing.is_free(request.model):
            return None
        latest = time.time() + (deadline - time.monotonic())
        prompt = estimate_prompt_tokens(messages)
        booking = self.limiter.book(request.model, settings, prompt + request.budget, latest,
                                    input_tokens=prompt, output_tokens=request.budget)
        while True:
            wait = booking.wait_s()
            if wait > 0:
                await asyncio.sleep(wait)
            paused = self.limiter.not_before(request.model)  # a 429 since the booking
            if paused <= time.time():
                return booking
            if paused > latest:
                raise RateLimitWait(
                    f"model {request.model!r}: the provider's pause (a 429) would start this "
                    f"request in {paused - time.time():.1f} s, past its deadline")
            booking = replace(booking, start=paused)

    def _settle_attempt(self, booking: Booking | None, reservation: Reservation | None,
                        settings: ModelSettings, answer: RawAnswer | None,
                        failure: Exception | None = None) -> None:
        """An attempt is over: the schedule gets its actual tokens, the bill its cost (an
        error status made no completion: $0; a timeout, a dropped connection, an attempt cut
        at the deadline or a 200 whose body could not be read: unknown, so its worst case
        stays)."""
        if booking is not None and answer is not None:
            self.limiter.settle(booking, settings,
                                answer.prompt_tokens + answer.completion_tokens,
                                used_input=round(limited_input_tokens(
                                    booking.model, answer.prompt_tokens,
                                    answer.cache_read_tokens)),
                                used_output=answer.completion_tokens)
        if reservation is not None:
            if answer is not None:
                cost = answer.cost_usd
            else:
                cost = 0.0 if failure is not None and made_no_completion(failure) else None
            self.spend.settle(reservation, cost)

    def _stop_reason(self) -> str | None:
        """Why no new request is sent: the job was asked to stop (SIGINT or SIGTERM)."""
        if not self._stop.stopped:
            return None
        return f"not sent: the job was stopped by {self._stop.signal_name}"

    def _wait_limit_s(self, settings: ModelSettings) -> float:
        """How long to wait for a request another process holds: its deadline, or the longest
        wait for a batch when the model is batched (the holder may be collecting one)."""
        limit = settings.deadline_s
        if settings.batch:
            limit = max(limit, settings.batch_max_wait_s)
        return limit + 2 * self.claim_lease_s

    def _claim(self, key: str, held_by_owner: bool | None = None) -> Claim:
        """`held_by_owner`: whether another task of this client answers `key` (default: as
        `_held` says now)."""
        claim = getattr(self.cache, "claim", None)
        if claim is None:  # a backend without claims: only its answers are shared
            hit = self.cache.get(key)
            return Claim(answer=hit) if hit is not None else Claim(claimed=True)
        if held_by_owner is None:
            held_by_owner = key in self._held
        return claim(key, self._owner, self.claim_lease_s, held_by_owner=held_by_owner)

    def _release(self, key: str) -> None:
        release = getattr(self.cache, "release", None)
        if release is not None:
            release(key, self._owner)

    @contextlib.contextmanager
    def _renewing_claims(self) -> Iterator[None]:
        """Renew the claims this client holds every third of their lease, from a thread of
        its own until the block ends.

        Not a task of the event loop: the loop can be busy for longer than a lease (claiming
        hundreds of keys and building a batch's file took 39 s on a loaded machine), and a
        lease that runs out lets another process pay for the same request."""
        renew = getattr(self.cache, "renew_claims", None)
        if renew is None:
            yield
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.claim_lease_s / 3):
                if self._held:
                    try:
                        renew(self._owner, self.claim_lease_s)
                    except Exception as exc:  # noqa: BLE001 - tried again at the next beat
                        log.warning("could not renew this process's claims: %s", exc)

        heartbeat = threading.Thread(target=beat, name="rubriclab-claims", daemon=True)
        heartbeat.start()
        try:
            yield
        finally:
            stop.set()
            heartbeat.join(timeout=60)

    def _note_outcome(self, completion: Completion, settings: ModelSettings,
                      streaks: dict[str, tuple[str, int]]) -> None:
        """Stop asking a model whose requests fail in a way no other request escapes, or fail
        the same way `max_consecutive_failures` times in a row."""
        model = completion.request.model
        if completion.outcome != "failed":
            streaks[model] = ("", 0)
            return
        kind = completion.error.split(":", 1)[0]
        if kind == NOT_ATTEMPTED or model in self._stops:
            return
        last_kind, count = streaks.get(model, ("", 0))
        count = count + 1 if kind == last_kind else 1
        streaks[model] = (kind, count)
        if completion.key in self._model_fatal:
            self._stops[model] = (f"stopped asking model {model!r} after {kind}, which no "
                                  f"request to it can get past: {completion.error}")
        elif count >= settings.max_consecutive_failures:
            self._stops[model] = (f"stopped asking model {model!r} after {count} requests in a "
                                  f"row failed with {kind} (last: {completion.error})")
        if model in self._stops:
            log.error("%s", self._stops[model])

    def _from_cache(self, request: Request, key: str, hit: CachedAnswer) -> Completion:
        fmt = get_format(request.response_format)
        try:
            parsed, outcome, error = fmt.parse(hit.text), "ok", ""
        except UnparseableAnswer as exc:  # cached under an older parser
            parsed, outcome, error = None, "unparseable", str(exc)
        return Completion(request=request, key=key, outcome=outcome, text=hit.text,
                          parsed=parsed, usage=Usage(hit.prompt_tokens, hit.completion_tokens),
                          cost_usd=hit.cost_usd, cached=True, error=error)

    def _record(self, completion: Completion) -> None:
        if self.ledger is not None:
            self.ledger.record(completion)
        closed = getattr(self.cache, "journal_closed", None)
        if closed is not None:
            closed(completion.key)  # its cost is in the attempts journal now
        self._note_usability(completion)

    def _note_usability(self, completion: Completion) -> None:
        """Count an answer (cached or not; a failure is no answer) and stop asking its model
        once too many come back unusable: `max_unusable_in_a_row` in a row, or a share above
        `max_unusable_share` of at least `unusable_min_answers` answers."""
        if completion.outcome not in ("ok", "unparseable"):
            return
        model = completion.request.model
        settings = self.config.settings_for(model)
        seen = self._usability[model]
        seen.answers += 1
        if completion.outcome == "ok":
            seen.in_a_row = 0
        else:
            seen.unusable += 1
            seen.in_a_row += 1
            seen.example = completion
        if seen.stop is not None:
            return
        if seen.in_a_row >= settings.max_unusable_in_a_row:
            why = f"{seen.in_a_row} answers in a row were unusable (max_unusable_in_a_row)"
        elif (seen.answers >= settings.unusable_min_answers
              and seen.unusable / seen.answers > settings.max_unusable_share):
            why = (f"more than {settings.max_unusable_share:.0%} of its answers were unusable "
                   "(max_unusable_share)")
        else:
            return
        seen.stop = redact.redact(f"stopped asking model {model!r} after {why}: "
                                  f"{seen.describe()}")
        self._stops[model] = seen.stop
        log.error("%s", seen.stop)

    def _journal_sent(self, request: Request, key: str, batch: bool = False) -> None:
        """Before a paid request goes out: a record that outlives a kill, so that its call is
        billed (`rubriclab.llm.journal`) even if this process never records it."""
        sent = getattr(self.cache, "journal_sent", None)
        if sent is None or pricing.is_free(request.model):
            return
        ledger = self.ledger
        try:
            sent(key, request.model,
                 str(attempts_path(ledger.path).absolute()) if ledger is not None else None,
                 ledger.rule if ledger is not None else None,
                 ledger.run if ledger is not None else None, batch)
        except OSError as exc:  # the call goes ahead: its ledger row will count it
            log.error("could not journal a request to %s before sending it: %s",
                      request.model, exc)

    def _disk_problem(self, request: Request) -> str | None:
        """Why no answer should be paid for now: too little free space where it is stored."""
        if request.model.startswith("fake/"):
            return None
        folders = [self.config.cache_dir]
        if self.ledger is not None:
            folders.append(self.ledger.path.parent)
        return free_space_problem(folders, int(self.config.min_free_disk_mb * 2**20))

    async def _call(self, request: Request, key: str, prior: RawAnswer | None = None
                    ) -> Completion:
        """Ask until an answer parses (then cache it) or the re-asks are spent. `prior`: an
        answer already paid for (a batch's), parsed first as if it were the first attempt."""
        settings = self.config.settings_for(request.model)
        fmt = get_format(request.response_format)
        messages = self._messages_for(request, key)
        started = time.monotonic()
        deadline = started + settings.deadline_s
        attempts = reasks = doublings = prompt_tokens = completion_tokens = 0
        cache_read = cache_write = 0
        repeat_prompt_tokens = 0  # of the askings after the first billed one
        billed_before = False
        cost: float | None = 0.0
        text = error = ""
        sent = request
        while True:
            try:
                if prior is not None and prior.cost_usd and self.spend is not None:
                    self.spend.add(prior.cost_usd)  # a batch's answer: paid, so on the bill
                raw, used = ((prior, 1) if prior is not None
                             else await self._attempt(sent, messages, settings, deadline, key))
                prior = None
            except _AttemptsExhausted as exhausted:
                if exhausted.spent is not None:  # billed, though nothing came to keep
                    prompt_tokens += exhausted.spent.prompt_tokens
                    completion_tokens += exhausted.spent.completion_tokens
                    cost = _plus_cost(cost, exhausted.spent.cost_usd)
                if isinstance(exhausted.cause, AnswerCutOff):
                    attempts += exhausted.attempts
                    cut = exhausted.cause.answer
                    prompt_tokens += cut.prompt_tokens
                    repeat_prompt_tokens += cut.prompt_tokens if billed_before else 0
                    billed_before = True
                    completion_tokens += cut.completion_tokens
                    cache_read += cut.cache_read_tokens
                    cache_write += cut.cache_write_tokens
                    cost = _plus_cost(cost, cut.cost_usd)
                    if doublings < settings.budget_doublings:
                        doublings += 1
                        sent = replace(sent, max_tokens=sent.max_tokens * 2,
                                       reasoning_tokens=sent.reasoning_tokens * 2)
                        log.info("%s: answer cut off at its budget; asking again with %d tokens",
                                 request.model, sent.budget)
                        continue
                    # Answered, but never within a budget: like an answer never in the
                    # format, it is counted where it is reported (a rerun would pay again for
                    # the same cut-off, so it does not stop the job as a failure does).
                    error = redact.redact(f"AnswerCutOff: {exhausted.cause}")
                    log.warning("answer of %s unusable: %s", request.model, error)
                    return Completion(request=request, key=key, outcome="unparseable", text="",
                                      usage=Usage(prompt_tokens, completion_tokens, cache_read, cache_write),
                                      cost_usd=cost, latency_s=time.monotonic() - started,
                                      attempts=attempts, reasks=reasks, error=error,
                                      repeat_prompt_tokens=repeat_prompt_tokens)
                attempts += exhausted.attempts
                error = redact.redact(f"{type(exhausted.cause).__name__}: {exhausted.cause}")
                if is_model_fatal(exhausted.cause):
                    self._model_fatal.add(key)
                if attempts and not request.model.startswith(("fake/", "local/")):
                    cost = None  # a provider may bill a call that failed: unknown, not $0
                log.warning("request to %s failed: %s", request.model, error)
                return Completion(request=request, key=key, outcome="failed", text=text,
                                  usage=Usage(prompt_tokens, completion_tokens, cache_read, cache_write), cost_usd=cost,
                                  latency_s=time.monotonic() - started, attempts=attempts,
                                  reasks=reasks, error=error,
                                  repeat_prompt_tokens=repeat_prompt_tokens)
            attempts += used
            text = raw.text
            prompt_tokens += raw.prompt_tokens
            repeat_prompt_tokens += raw.prompt_tokens if billed_before else 0
            billed_before = True
            completion_tokens += raw.completion_tokens
            cache_read += raw.cache_read_tokens
            cache_write += raw.cache_write_tokens
            cost = _plus_cost(cost, raw.cost_usd)
            try:
                parsed = fmt.parse(text)
            except UnparseableAnswer as exc:
                error = str(exc)
                if reasks >= settings.max_reasks:
                    return Completion(request=request, key=key, outcome="unparseable",
                                      text=text, usage=Usage(prompt_tokens, completion_tokens, cache_read, cache_write),
                                      cost_usd=cost, latency_s=time.monotonic() - started,
                                      attempts=attempts, reasks=reasks, error=error,
                                      repeat_prompt_tokens=repeat_prompt_tokens)
                reasks += 1
                messages = messages + [{"role": "assistant", "content": text},
                                       {"role": "user", "content": fmt.reask_instruction}]
                continue
            if self.config.caches(request.model):
                self.cache.put(make_answer(key, request, text, prompt_tokens, completion_tokens,
                                           cost, self.backends.fingerprint(request.model)))
                # The first answer stored for a key is the one kept. Where another process
                # stored one first (it took this claim over after its lease ran out), that one
                # is served here too, so that runs sharing the cache go on from the same
                # answer; this one was paid for all the same and stays on this row's bill.
                kept = self.cache.get(key)
                if kept is not None and kept.text != text:
                    log.warning("%s: another process stored an answer to this request first "
                                "(this one's claim had run out); serving the stored one",
                                request.model)
                    text, parsed = kept.text, fmt.parse(kept.text)
            return Completion(request=request, key=key, outcome="ok", text=text, parsed=parsed,
                              usage=Usage(prompt_tokens, completion_tokens, cache_read, cache_write), cost_usd=cost,
                              latency_s=time.monotonic() - started, attempts=attempts,
                              reasks=reasks, repeat_prompt_tokens=repeat_prompt_tokens)

    async def _attempt(self, request: Request, messages: list[dict[str, str]],
                       settings: ModelSettings, deadline: float, key: str = ""
                       ) -> tuple[RawAnswer, int]:
        """One answer, retrying transient failures with exponential backoff and jitter (or
        the wait the provider asks for), each attempt bounded by the time left to the
        deadline (wall clock, whatever the server does). `key`: the request's as it was keyed
        (the journal names the call by it).

        Attempts answered with nothing to keep were billed all the same: an empty answer
        (EmptyAnswer) at its usage, a body that could not be read (UnreadableReply) at its
        prompt (estimated high) and an unknown cost. Both are counted in the answer returned
        or, where no answer came, in `_AttemptsExhausted.spent`."""
        spent: RawAnswer | None = None
        try:
            for attempt in range(settings.num_retries + 1):
                disk = self._disk_problem(request)
                if disk is not None:
                    self._disk_stop = self._disk_stop or disk
                    raise _AttemptsExhausted(DiskSpaceLow(disk), attempt)
                if self._stop.stopped:  # no retry or re-ask once the job is asked to stop
                    raise _AttemptsExhausted(JobStopped(self._stop_reason()), attempt)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _AttemptsExhausted(DeadlineExceeded(
                        f"no answer from {request.model!r} within its deadline of "
                        f"{settings.deadline_s:g} s"), attempt)
                try:
                    booking = await self._wait_for_rate(request, messages, settings, deadline)
                except RateLimitWait as exc:
                    raise _AttemptsExhausted(DeadlineExceeded(
                        f"no answer from {request.model!r} within its deadline of "
                        f"{settings.deadline_s:g} s: {exc}"), attempt) from exc
                try:
                    reservation = self._reserve(request, messages, settings)
                except BudgetExceeded as exc:
                    self._budget_stop = self._budget_stop or str(exc)
                    raise _AttemptsExhausted(exc, attempt) from exc
                try:
                    left = deadline - time.monotonic()
                    timed = replace(settings, timeout_s=max(0.001, min(settings.timeout_s, left)))
                    self._journal_sent(request, key)
                    answer = await within_deadline(
                        self.backends.complete(request, messages, timed), left, request.model,
                        settings.deadline_s)
                except Exception as exc:  # noqa: BLE001 - classified, then retried or reported
                    cut = exc.answer if isinstance(exc, AnswerCutOff) else None
                    if isinstance(exc, UnreadableReply):
                        cut = RawAnswer("", estimate_prompt_tokens(messages), 0, None)
                    elif isinstance(exc, EmptyAnswer):
                        cut = exc.answer
                    if cut is not None and not isinstance(exc, AnswerCutOff):
                        spent = cut if spent is None else _added(spent, cut)
                    self._settle_attempt(booking, reservation, settings, cut, exc)
                    delay = min(settings.max_backoff_s, settings.backoff_s * 2**attempt)
                    delay *= 0.5 + random.random() / 2
                    asked = retry_after_s(exc)
                    if asked is not None:
                        delay = max(delay, asked)
                    if is_rate_limited(exc):
                        # The provider's limit is the model's, not this job's: every process waits.
                        self.limiter.pause(request.model, delay)
                    if not is_retryable(exc) or attempt == settings.num_retries:
                        raise _AttemptsExhausted(exc, attempt + 1) from exc
                    if time.monotonic() + delay >= deadline:
                        wait = (f"the {asked:g} s its server asks" if asked is not None
                                else "a retry")
                        raise _AttemptsExhausted(DeadlineExceeded(
                            f"no answer from {request.model!r} within its deadline of "
                            f"{settings.deadline_s:g} s: {wait} would pass it (last: "
                            f"{type(exc).__name__}: {exc})"), attempt + 1) from exc
                    log.info("retrying %s in %.2fs after %s", request.model, delay,
                             type(exc).__name__)
                    await asyncio.sleep(delay)
                except BaseException:  # cancelled: the call may have been billed
                    self._settle_attempt(booking, reservation, settings, None)
                    raise
                else:
                    self._settle_attempt(booking, reservation, settings, answer)
                    if spent is not None:
                        answer = _added(answer, spent)
                    return answer, attempt + 1
        except _AttemptsExhausted as exhausted:
            exhausted.spent = spent
            raise
        raise AssertionError("unreachable")


def _plus_cost(cost: float | None, more: float | None) -> float | None:
    return None if cost is None or more is None else cost + more


def _added(answer: RawAnswer, spent: RawAnswer) -> RawAnswer:
    """`answer` with the usage and cost of `spent` added (cost unknown if either is)."""
    return replace(answer, prompt_tokens=answer.prompt_tokens + spent.prompt_tokens,
                   completion_tokens=answer.completion_tokens + spent.completion_tokens,
                   cost_usd=_plus_cost(answer.cost_usd, spent.cost_usd),
                   cache_read_tokens=answer.cache_read_tokens + spent.cache_read_tokens,
                   cache_write_tokens=answer.cache_write_tokens + spent.cache_write_tokens)


def _worst_cost(request: Request, messages: list[dict], settings: ModelSettings, *,
                batch: bool) -> float | None:
    """The most one asking of `request` can cost (rubriclab.llm.budget.worst_cost): its prompt
    (estimated high) at the input or the cache-write rate, whichever is higher (the input
    rate where no cache write can be billed), and its whole answer budget; None if unknown."""
    return worst_cost(request.model, estimate_prompt_tokens(messages), request.budget,
                      settings, batch=batch)


def _usable(request: Request, answer: RawAnswer) -> bool:
    """As for an ordinary call (Backends.complete): an empty answer, or a structured one cut
    off at its budget, is not an answer to parse."""
    if not answer.text.strip():
        return False
    return answer.finish_reason != "length" or get_format(request.response_format).free_text
