"""Batch mode: a run's cache misses for a model sent to its provider's batch API.

Half the price of ordinary calls, answered within the provider's 24-hour window. Three
providers, each through its own adapter (`rubriclab.llm.batch_providers` picks it): OpenAI
(`batch_openai`) and Gemini (`batch_gemini`) through litellm's file and batch calls,
Anthropic's Message Batches (`batch_anthropic`) through the official anthropic SDK. Every batch
is stored beside the cache (`rubriclab.llm.storage.open_batch_store`: `llm_batches.sqlite` in
the cache directory, or the PostgreSQL cache database) under a key over its model and request
keys, before it is submitted and again
once the provider names it, so a killed or restarted job polls the batch it already paid for
instead of submitting another. A job killed between the provider creating the batch and the id
being stored finds it among the provider's recent batches: by the key in the batch's metadata
(OpenAI) or display name (Gemini); Anthropic's batches carry neither (see `batch_anthropic`).

A request a stored batch holds that has not ended is never sent again before that batch is
collected, whatever else the run asks: a rerun with other misses (a config edit, a neighbour
that answered some, a run that gave up waiting) collects each stored batch its misses overlap,
and only the misses no stored batch holds go into a new one; a rerun whose model is no longer
batched collects it too (`run(..., submit=False)`) and submits nothing. The answers such a batch
gives to requests the run no longer asks are kept in the store and serve them when a later run
does (batched or not); each is removed once it is served, or once the cache holds its request.
A batch the provider no longer knows (404 on its poll or on its results) is marked "gone" and
its requests follow `batch_fallback`.

Credentials follow the rule of ordinary calls (`backends.api_key_to_send`): an `api_base` that
is not the provider's own API never gets the environment's provider key, on any batch call
(the key `api_key_env` names, else the placeholder), nor does a server that needs no key
(`placeholder_api_key`); a batched model whose key is missing stops before the first call
(`BatchRunner.check_credentials`).

A result file is read line by line (`ResultLines`): a request answered by identical lines
takes the answer once; one answered by lines that differ takes none (no answer is cached, the
request follows `batch_fallback`, and every answer is on the bill, since the provider may have
billed each); lines without a request id, with one the batch did not hold, and requests a
completed batch gave no line are warnings naming the batch, counted on the job's last progress
line (`BatchOutcomes.unusable_lines`).

This module only submits, polls and reads results; `LLMClient` parses each answer with its
request's format, caches and records it, and asks the requests a batch did not answer as
ordinary calls (or counts them as failed).
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from .backends import (PROVIDER_KEY_VARIABLES, MissingAPIKey, RawAnswer, api_key_to_send,
                       is_retryable)
from .batch_api import BatchAPI, ProviderBatch, ResultLines, is_not_found
from .batch_providers import api_for
from .batch_records import (DONE, UNFINISHED, BatchJob, BatchOutcome, BatchOutcomes,
                            job_key)
from .budget import BudgetExceeded
from .cache_records import DiskSpaceLow
from .pricing import provider_of
from .request import Request
from .settings import BATCH_PROVIDERS, LLMConfig, ModelSettings
from .storage import BatchStorage, batch_store_may_hold, open_batch_store

log = logging.getLogger("rubriclab.llm.batch")

# Of a provider's limit on one batch's input, what a batch here fills at most (the rest is room
# for what a row adds around its request body).
FILL = 0.8

T = TypeVar("T")


# Called before a new batch is submitted, with its model, requests and messages: checks the
# free disk space (raising DiskSpaceLow to refuse it), books the batch's worst case on the
# run's bill (raising BudgetExceeded), journals its requests as sent, and returns what releases
# that booking once the batch's answers are read and billed one by one.
BeforeSubmit = Callable[[str, dict[str, Request], dict[str, list[dict[str, Any]]]],
                        Callable[[], None]]


class BatchRunner:
    def __init__(self, config: LLMConfig, before_submit: BeforeSubmit | None = None):
        self.config = config
        self.before_submit = before_submit
        self._store: BatchStorage | None = None

    @property
    def store(self) -> BatchStorage:
        if self._store is None:
            self._store = open_batch_store(self.config)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    async def run(self, model: str, requests: dict[str, Request],
                  messages: dict[str, list[dict[str, Any]]] | None = None,
                  submit: bool = True) -> BatchOutcomes:
        """Answers (or reasons) for `requests` (key -> request), all of one model. `messages`:
        the messages to send for a key, where they differ from the request's own (prompt-cache
        marks); the key stays the request's.

        Requests a stored batch of an earlier run answered without being asked are served its
        answers (kept until the caller forgets them: `BatchStorage.forget_answers`); those a
        stored batch that may still answer holds go to that batch (collected first, whichever
        other requests it holds); the others are split into new batches within the provider's
        limits (requests and bytes per batch). `submit` False (the model is no longer batched):
        stored batches are collected, and nothing is submitted; the requests none holds come
        back `unsent`, to be asked as ordinary calls. The outcomes count the result lines
        of the batches collected that were of no use (`BatchOutcomes.unusable_lines`)."""
        messages = messages or {}
        api = api_for(model)
        self.check_credentials(model)
        outcomes = BatchOutcomes(self.store.kept_answers(model, list(requests)))
        if outcomes:
            log.info("%s: %d requests answered by batches collected before", model,
                     len(outcomes))
        left = {k: r for k, r in requests.items() if k not in outcomes}
        groups = self._groups(api, model, left, messages)
        if not submit:
            for stored, group in groups:
                if stored is None:
                    outcomes.update({k: BatchOutcome(None, "held by no stored batch",
                                                     unsent=True) for k in group})
            groups = [(stored, group) for stored, group in groups if stored is not None]
            if groups:
                log.warning("%s: batch is off, but %d of its requests are held by %d batches "
                            "submitted before: collecting them first (polled for at most "
                            "batch_max_wait_s), so that none is paid for twice", model,
                            sum(len(g) for _, g in groups), len(groups))
        for part in await asyncio.gather(*(self._run_one(api, model, group, messages, stored,
                                                         submit)
                                           for stored, group in groups)):
            outcomes.update(part)
            if isinstance(part, BatchOutcomes):
                outcomes.unusable_lines.update(part.unusable_lines)
        return outcomes

    def stored_keys(self, model: str, keys: set[str]) -> set[str]:
        """Of `keys`, those a stored batch of the model may still answer or has answered
        (kept answers): without opening (or creating) a SQLite store where there is none."""
        if (provider_of(model) not in BATCH_PROVIDERS
                or (self._store is None and not batch_store_may_hold(self.config))):
            return set()
        held: set[str] = set()
        for request_keys in self.store.open_jobs(model).values():
            held |= request_keys & keys
        return held | set(self.store.kept_answers(model, sorted(keys - held)))

    def check_credentials(self, model: str) -> None:
        """Raise MissingAPIKey, naming the variable, where a batched model's batch calls
        would have no key to send: before any call (`check_api_key: false` does not skip it,
        since every batch call sends the key itself)."""
        settings = self.config.settings_for(model)
        provider = provider_of(model)
        if api_key_to_send(provider, settings) is None:
            names = (f"{settings.api_key_env} (api_key_env)" if settings.api_key_env else
                     " or ".join(PROVIDER_KEY_VARIABLES.get(provider, ())) or "its key")
            raise MissingAPIKey(
                f"model {model!r} has batch: true, and its batch calls need the environment "
                f"variable {names}; set it before running (keys are read from the "
                "environment, never from config), or set placeholder_api_key: true for a "
                "server that needs no key")

    def _groups(self, api: BatchAPI, model: str, requests: dict[str, Request],
                messages: dict[str, list[dict[str, Any]]]
                ) -> list[tuple[str | None, dict[str, Request]]]:
        """(stored job key, requests) for each stored job that holds some of `requests`,
        then (None, requests) for each new batch of the rest."""
        left = dict(requests)
        groups: list[tuple[str | None, dict[str, Request]]] = []
        for stored, request_keys in self.store.open_jobs(model).items():
            held = sorted(request_keys & left.keys())
            if held:
                groups.append((stored, {k: left.pop(k) for k in held}))
        most = api.MAX_REQUESTS or len(left) or 1
        room = FILL * (api.MAX_BYTES or float("inf"))
        group: dict[str, Request] = {}
        size = 0
        for k, request in left.items():
            # The request's text, as JSON, stands for its row's size.
            chars = len(json.dumps(messages.get(k) or request.message_dicts())) + 512
            if group and (len(group) >= most or size + chars > room):
                groups.append((None, group))
                group, size = {}, 0
            group[k] = request
            size += chars
        if group:
            groups.append((None, group))
        return groups

    async def _run_one(self, api: BatchAPI, model: str, requests: dict[str, Request],
                       messages: dict[str, list[dict[str, Any]]], stored: str | None = None,
                       submit: bool = True) -> dict[str, BatchOutcome]:
        """`stored`: the key of the stored job that holds these requests (and maybe others);
        `submit` False: collect it, never submit one."""
        settings = self.config.settings_for(model)
        key = stored or job_key(model, list(requests))
        releases: list[Callable[[], None]] = []
        try:
            job = await self._submitted(api, model, key, requests, messages, settings, releases,
                                        submit)
            batch = await self._wait(api, job, settings)
            outcomes = await self._results(api, job, batch, requests, settings)
            for release in releases:  # each answer is on the bill now, at what it cost
                release()
            return outcomes
        except (BudgetExceeded, DiskSpaceLow) as exc:
            log.warning("batch of %s for %d requests not submitted: %s", model, len(requests),
                        exc)
            budget = isinstance(exc, BudgetExceeded)
            return {k: BatchOutcome(None, str(exc), over_budget=budget, disk_low=not budget)
                    for k in requests}
        except _GaveUp as exc:
            return {k: BatchOutcome(None, str(exc), exc.batch_id, running=exc.running)
                    for k in requests}
        except _NotSubmitted as exc:
            return {k: BatchOutcome(None, str(exc), unsent=True) for k in requests}
        except Exception as exc:  # noqa: BLE001 - reported per request, like a failed call
            row = self.store.get(key)
            if row is not None and row.status == "lost":  # submitted anew, on a key of its own
                row = self.store.get(job_key(model, list(requests)))
            # Submitted and not known to have ended: the provider may still answer it, so
            # the requests must not be paid for again elsewhere; a rerun polls it.
            running = bool(row and row.batch_id and row.status not in UNFINISHED
                           and row.status != "collected")
            error = (f"batch of {model} for {len(requests)} requests: "
                     f"{type(exc).__name__}: {exc}")
            if running:
                assert row is not None  # running: a stored row with its batch id
                error += f" (batch {row.batch_id} is stored, so a rerun collects it)"
            elif settings.batch_fallback == "call":
                error += ("; its requests are asked as ordinary calls, at the full price "
                          "(batch_fallback: call)")
            log.warning("%s", error)
            return {k: BatchOutcome(None, error, row.batch_id if row else None,
                                    running=running) for k in requests}

    # --- submission ----------------------------------------------------------------------

    async def _submitted(self, api: BatchAPI, model: str, key: str,
                         requests: dict[str, Request], messages: dict[str, list[dict]],
                         settings: ModelSettings, releases: list[Callable[[], None]],
                         submit: bool = True) -> BatchJob:
        """The stored batch of this job if it can still answer (paid for already), else a new
        one, booked on the run's bill first (`before_submit`; its release goes to
        `releases`); `submit` False: _NotSubmitted instead of a new one."""
        job = self.store.get(key)
        if job is not None and job.batch_id and job.status not in UNFINISHED:
            log.info("[batch %s] %s: collecting the batch submitted before for %d of these "
                     "requests (of %d it holds; status %s)", job.batch_id, model,
                     len(requests), job.requests, job.status)
            return job
        if job is not None and not job.batch_id:
            found = await self._retrying(settings, "list", lambda: api.find(
                job, settings, self._taken(key)))
            if found is not None:
                log.info("[batch %s] %s: found the batch a killed job submitted for these %d "
                         "requests", found.id, model, len(requests))
                return self.store.save(BatchJob(key, model, job.requests, job.input_file_id,
                                                found.id, found.status, 0.0))
            if not submit or self.store.requests_of(key) != set(requests):
                # Never created (or not to be found): its requests this run asks go into a
                # batch of their own; the rest are free to be asked again.
                self.store.save(replace(job, status="lost"))
                key = job_key(model, list(requests))
        if not submit:
            raise _NotSubmitted(f"the batch stored for these requests of {model} was never "
                                "submitted (not found at the provider)")
        if self.before_submit is not None:
            releases.append(self.before_submit(model, requests, messages))
        return await self._submit(api, model, key, requests, messages, settings)

    def _taken(self, key: str) -> set[str]:
        """Batch ids other jobs of this store hold: never adopted as this job's."""
        return {j.batch_id for j in self.store.all() if j.batch_id and j.job_key != key}

    async def _submit(self, api: BatchAPI, model: str, key: str, requests: dict[str, Request],
                      messages: dict[str, list[dict]], settings: ModelSettings) -> BatchJob:
        bodies = {k: api.body(r, messages.get(k) or r.message_dicts())
                  for k, r in requests.items()}
        job = self.store.save(BatchJob(key, model, len(requests), None, None, "submitting", 0.0))
        self.store.save_requests(key, list(requests))
        file_id = await self._retrying(settings, "upload", lambda: api.upload(job, bodies,
                                                                              settings))
        job = self.store.save(BatchJob(key, model, len(requests), file_id, None, "submitting",
                                       0.0))
        batch = None
        for attempt in range(settings.num_retries + 1):
            try:
                batch = await api.create(job, bodies, settings)
                break
            except Exception as exc:  # noqa: BLE001 - classified, then retried or raised
                if not is_retryable(exc) or attempt == settings.num_retries:
                    raise
                # The provider may have created it before the connection failed: never twice.
                batch = await self._retrying(settings, "list", lambda: api.find(
                    job, settings, self._taken(key)))
                if batch is not None:
                    break
                await asyncio.sleep(_backoff(settings, attempt))
        assert batch is not None  # every attempt ends with a batch, or raises (the last one)
        job = self.store.save(BatchJob(key, model, len(requests), file_id, batch.id,
                                       batch.status, 0.0))
        log.info("[batch %s] %s: submitted %d requests", batch.id, model, len(requests))
        return job

    # --- waiting and results -------------------------------------------------------------

    async def _wait(self, api: BatchAPI, job: BatchJob, settings: ModelSettings
                    ) -> ProviderBatch:
        started = time.monotonic()
        while True:
            try:
                batch = await self._retrying(settings, "poll", lambda: api.retrieve(job,
                                                                                  settings))
            except Exception as exc:  # noqa: BLE001 - a batch the provider no longer knows
                if not is_not_found(exc):
                    raise
                log.warning("[batch %s] %s: the provider no longer knows this batch (%s); "
                            "marked gone, its requests follow batch_fallback (%s)",
                            job.batch_id, job.model, type(exc).__name__,
                            settings.batch_fallback)
                batch = ProviderBatch(job.batch_id or "", "gone",
                                      errors=f" (the provider answered 404: {exc})")
            waited = time.monotonic() - started
            log.info("[batch %s] %s: %s, %s of %d requests done (%s failed), waited %.0fs",
                     job.batch_id, job.model, batch.status, batch.completed, job.requests,
                     batch.failed, waited)
            if batch.status != job.status:
                job = self.store.save(BatchJob(job.job_key, job.model, job.requests,
                                               job.input_file_id, job.batch_id, batch.status,
                                               0.0))
            if batch.status == DONE or batch.status in UNFINISHED:
                return batch
            if waited + settings.batch_poll_s > settings.batch_max_wait_s:
                raise _GaveUp(
                    f"batch {job.batch_id} of {job.model} still {batch.status} after "
                    f"{waited:.0f}s (batch_max_wait_s {settings.batch_max_wait_s:g}); it is "
                    f"stored in {self.store.location}, so a rerun collects it without paying again",
                    job.batch_id, running=True)
            await asyncio.sleep(settings.batch_poll_s)

    async def _results(self, api: BatchAPI, job: BatchJob, batch: ProviderBatch,
                       requests: dict[str, Request], settings: ModelSettings
                       ) -> BatchOutcomes:
        status, errors = batch.status, batch.errors
        outcomes = BatchOutcomes()
        lines = ResultLines(job, "custom_id")
        if status != "gone":
            try:
                lines = await api.results(job, batch, settings, self._retrying)
            except Exception as exc:  # noqa: BLE001 - results the provider no longer has
                if not is_not_found(exc):
                    raise
                log.warning("[batch %s] %s: the provider no longer has this batch's results "
                            "(%s); marked gone, its requests follow batch_fallback (%s)",
                            job.batch_id, job.model, type(exc).__name__,
                            settings.batch_fallback)
                status, errors = "gone", f" (its results answered 404: {exc})"
        held = self.store.requests_of(job.job_key)
        unusable = outcomes.unusable_lines
        if lines.without_id:
            unusable["without_id"] += len(lines.without_id)
            log.warning("[batch %s] %s: %d result lines without a %s ignored (%s)",
                        job.batch_id, job.model, len(lines.without_id), lines.id_name,
                        _listed(lines.without_id))
        if lines.repeated:
            log.info("[batch %s] %s: %d result lines repeat an earlier line's result; each "
                     "taken once", job.batch_id, job.model, lines.repeated)
        results = dict(lines.outcomes)
        for key in lines.conflicting:
            results[key] = lines.refused(key)
            if key in held:
                unusable["conflicting"] += 1
                log.warning("[batch %s] %s: request %s: %s; %s", job.batch_id, job.model,
                            key, results[key].error,
                            f"it follows batch_fallback ({settings.batch_fallback})"
                            if key in requests else "nothing is kept for a later run")
        kept: dict[str, RawAnswer] = {}
        for key, outcome in results.items():
            if key in requests:
                outcomes[key] = outcome
            elif key in held and outcome.answer is not None:
                kept[key] = outcome.answer  # paid for: a later run that asks it takes it
            elif key not in held:
                unusable["unknown_id"] += 1
                log.warning("[batch %s] %s: result line(s) for request %r, which the batch "
                            "does not hold, ignored (%s)", job.batch_id, job.model, key,
                            ", ".join(lines.where.get(key, [])))
        if kept:
            self.store.save_answers(job, kept)
            log.info("[batch %s] %s: %d answers to requests this run does not ask kept in %s",
                     job.batch_id, job.model, len(kept), self.store.location)
        missing = BatchOutcome(None, f"batch {job.batch_id} of {job.model} ended {status} "
                                     f"without an answer to this request{errors}",
                               job.batch_id)
        unanswered = sorted(k for k in requests if k not in outcomes)
        if status == DONE and unanswered:
            # A completed batch gives every request a line: one without is the provider's
            # fault, not an ending that explains it.
            unusable["missing"] += len(unanswered)
            missing = replace(missing, error=f"batch {job.batch_id} of {job.model} completed "
                                             "without a result line for this request")
            log.warning("[batch %s] %s: completed without a result line for %d requests (%s); "
                        "they follow batch_fallback (%s)", job.batch_id, job.model,
                        len(unanswered), _listed(unanswered), settings.batch_fallback)
        self.store.save(BatchJob(job.job_key, job.model, job.requests, job.input_file_id,
                                 job.batch_id, status if status in UNFINISHED else "collected",
                                 0.0))
        answered = sum(o.answer is not None for o in outcomes.values())
        log.info("[batch %s] %s: %s, %d of %d requests answered", job.batch_id, job.model,
                 status, answered, len(requests))
        outcomes.update({k: missing for k in unanswered})
        return outcomes

    # --- plumbing ------------------------------------------------------------------------

    async def _retrying(self, settings: ModelSettings, what: str,
                        call: Callable[[], Awaitable[T]]) -> T:
        """A batch API call that is safe to repeat, retried like model calls are."""
        for attempt in range(settings.num_retries + 1):
            try:
                return await call()
            except Exception as exc:  # noqa: BLE001 - classified, then retried or raised
                if not is_retryable(exc) or attempt == settings.num_retries:
                    raise
                log.info("batch %s: retrying after %s", what, type(exc).__name__)
                await asyncio.sleep(_backoff(settings, attempt))
        raise AssertionError("unreachable")


class _NotSubmitted(Exception):
    """A new batch would be needed, and the run submits none (its model is not batched)."""


class _GaveUp(Exception):
    def __init__(self, message: str, batch_id: str | None, running: bool):
        super().__init__(message)
        self.batch_id = batch_id
        self.running = running


def _backoff(settings: ModelSettings, attempt: int) -> float:
    delay = min(settings.max_backoff_s, settings.backoff_s * 2**attempt)
    return delay * (0.5 + random.random() / 2)


def _listed(items: list[str], most: int = 10) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")
