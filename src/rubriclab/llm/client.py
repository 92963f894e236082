"""The one way in for every model call: `LLMClient.run(requests) -> completions`.

For a batch of requests it looks every key up in the cache first, checks API keys for the models
that still need calls (before any call is made), then runs the misses concurrently with a
per-model limit. Each call is retried with backoff on rate limits, server errors, timeouts,
dropped connections and empty answers; its answer is parsed strictly and re-asked a bounded
number of times; an answer is cached the moment it parses, and only then. Every request is
written to the ledger and counted in the progress line.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import defaultdict
from dataclasses import replace

from .backends import AnswerCutOff, Backends, RawAnswer, is_retryable
from .cache import CacheBackend, SQLiteCache, make_answer
from .formats import UnparseableAnswer, get_format
from .ledger import Ledger
from .progress import Progress
from .request import Completion, Request, Usage, cache_key
from .settings import LLMConfig, ModelSettings

log = logging.getLogger("rubriclab.llm")


class ModelCallsFailed(RuntimeError):
    """Some requests got no usable answer after every retry; the others are cached."""


class _AttemptsExhausted(Exception):
    def __init__(self, cause: Exception, attempts: int):
        super().__init__(str(cause))
        self.cause = cause
        self.attempts = attempts


class LLMClient:
    def __init__(self, config: LLMConfig, *, ledger: Ledger | None = None,
                 cache: CacheBackend | None = None, role: str | None = None):
        self.config = config
        self.role = role  # the part its models play, unless a request or a run names another
        self.ledger = ledger
        self.cache = cache if cache is not None else SQLiteCache(config.cache_path)
        self.backends = Backends(config)

    def close(self) -> None:
        if self.ledger is not None:
            self.ledger.close()
        close = getattr(self.cache, "close", None)
        if close:
            close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

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
        completions = asyncio.run(self._run(requests, label))
        failed = [c for c in completions if c.outcome == "failed"]
        if failed and raise_on_failure:
            raise ModelCallsFailed(
                f"{len(failed)} of {len(completions)} requests in '{label}' failed after retries "
                f"(first: model {failed[0].request.model!r}: {failed[0].error}); the other "
                "answers are cached, so a rerun only repeats the failed ones"
            )
        return completions

    async def _run(self, requests: list[Request], label: str) -> list[Completion]:
        keys = [self.key_for(r) for r in requests]
        results: list[Completion | None] = [None] * len(requests)
        misses: list[int] = []
        for i, (request, key) in enumerate(zip(requests, keys)):
            hit = self.cache.get(key)
            if hit is None:
                misses.append(i)
                continue
            results[i] = self._from_cache(request, key, hit.text, hit.prompt_tokens,
                                          hit.completion_tokens, hit.cost_usd)
            self._record(results[i])

        for model in sorted({requests[i].model for i in misses}):
            self.backends.check_api_key(model)

        progress = Progress(label, len(requests), len(requests) - len(misses),
                            interval_s=self.config.progress_interval_s)
        limits: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(1))
        for model in {requests[i].model for i in misses}:
            limits[model] = asyncio.Semaphore(max(1, self.config.settings_for(model).concurrency))

        async def answer(i: int) -> None:
            request = requests[i]
            async with limits[request.model]:
                # Another job may have answered it since the batch started.
                hit = self.cache.get(keys[i])
                if hit is not None:
                    completion = self._from_cache(request, keys[i], hit.text, hit.prompt_tokens,
                                                  hit.completion_tokens, hit.cost_usd)
                else:
                    completion = await self._call(request, keys[i])
            results[i] = completion
            self._record(completion)
            progress.advance(completion)

        # Tasks start in request order and semaphores are FIFO, so a model limited to one
        # call at a time answers in that order (consecutive checks of one item share a prefix).
        await asyncio.gather(*(answer(i) for i in misses))
        return [r for r in results if r is not None]

    def _from_cache(self, request: Request, key: str, text: str, prompt_tokens: int,
                    completion_tokens: int, cost: float | None) -> Completion:
        fmt = get_format(request.response_format)
        try:
            parsed, outcome, error = fmt.parse(text), "ok", ""
        except UnparseableAnswer as exc:  # cached under an older parser
            parsed, outcome, error = None, "unparseable", str(exc)
        return Completion(request=request, key=key, outcome=outcome, text=text, parsed=parsed,
                          usage=Usage(prompt_tokens, completion_tokens), cost_usd=cost,
                          cached=True, error=error)

    def _record(self, completion: Completion) -> None:
        if self.ledger is not None:
            self.ledger.record(completion)

    async def _call(self, request: Request, key: str) -> Completion:
        settings = self.config.settings_for(request.model)
        fmt = get_format(request.response_format)
        messages = request.message_dicts()
        started = time.monotonic()
        attempts = reasks = doublings = prompt_tokens = completion_tokens = 0
        cost: float | None = 0.0
        text = error = ""
        sent = request
        while True:
            try:
                raw, used = await self._attempt(sent, messages, settings)
            except _AttemptsExhausted as exhausted:
                if isinstance(exhausted.cause, AnswerCutOff):
                    attempts += exhausted.attempts
                    cut = exhausted.cause.answer
                    prompt_tokens += cut.prompt_tokens
                    completion_tokens += cut.completion_tokens
                    cost = None if cost is None or cut.cost_usd is None else cost + cut.cost_usd
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
                    error = f"AnswerCutOff: {exhausted.cause}"
                    log.warning("answer of %s unusable: %s", request.model, error)
                    return Completion(request=request, key=key, outcome="unparseable", text="",
                                      usage=Usage(prompt_tokens, completion_tokens),
                                      cost_usd=cost, latency_s=time.monotonic() - started,
                                      attempts=attempts, reasks=reasks, error=error)
                attempts += exhausted.attempts
                error = f"{type(exhausted.cause).__name__}: {exhausted.cause}"
                log.warning("request to %s failed: %s", request.model, error)
                return Completion(request=request, key=key, outcome="failed", text=text,
                                  usage=Usage(prompt_tokens, completion_tokens), cost_usd=cost,
                                  latency_s=time.monotonic() - started, attempts=attempts,
                                  reasks=reasks, error=error)
            attempts += used
            text = raw.text
            prompt_tokens += raw.prompt_tokens
            completion_tokens += raw.completion_tokens
            cost = None if cost is None or raw.cost_usd is None else cost + raw.cost_usd
            try:
                parsed = fmt.parse(text)
            except UnparseableAnswer as exc:
                error = str(exc)
                if reasks >= settings.max_reasks:
                    return Completion(request=request, key=key, outcome="unparseable",
                                      text=text, usage=Usage(prompt_tokens, completion_tokens),
                                      cost_usd=cost, latency_s=time.monotonic() - started,
                                      attempts=attempts, reasks=reasks, error=error)
                reasks += 1
                messages = messages + [{"role": "assistant", "content": text},
                                       {"role": "user", "content": fmt.reask_instruction}]
                continue
            self.cache.put(make_answer(key, request, text, prompt_tokens, completion_tokens, cost))
            return Completion(request=request, key=key, outcome="ok", text=text, parsed=parsed,
                              usage=Usage(prompt_tokens, completion_tokens), cost_usd=cost,
                              latency_s=time.monotonic() - started, attempts=attempts,
                              reasks=reasks)

    async def _attempt(self, request: Request, messages: list[dict[str, str]],
                       settings: ModelSettings) -> tuple[RawAnswer, int]:
        """One answer, retrying transient failures with exponential backoff and jitter."""
        for attempt in range(settings.num_retries + 1):
            try:
                return await self.backends.complete(request, messages, settings), attempt + 1
            except Exception as exc:  # noqa: BLE001 - classified, then retried or reported
                if not is_retryable(exc) or attempt == settings.num_retries:
                    raise _AttemptsExhausted(exc, attempt + 1) from exc
                delay = min(settings.max_backoff_s, settings.backoff_s * 2**attempt)
                delay *= 0.5 + random.random() / 2
                log.info("retrying %s in %.2fs after %s", request.model, delay, type(exc).__name__)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")
