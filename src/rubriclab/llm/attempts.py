"""The client's asking stage, for one claimed request: attempts retried with backoff on what
asking again can cure, within its deadline; an answer cut off at its budget asked again with a
doubled budget; an answer that does not parse re-asked; the first that parses stored in the
cache. What every attempt cost is added up on the completion."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from . import redact
from .backends import (AnswerCutOff, Backends, DeadlineExceeded, EmptyAnswer, RawAnswer,
                       UnreadableReply, is_model_fatal, is_rate_limited, is_retryable,
                       retry_after_s, within_deadline)
from .budget import Reservation, SpendRecordBase
from .cache_records import make_answer
from .failures import Answered, AttemptsExhausted, Failure
from .formats import ResponseFormat, UnparseableAnswer, get_format
from .providers import provider_for
from .ratelimit import Booking, RateLimiter, estimate_prompt_tokens
from .request import Completion, Outcome, Request, Usage
from .settings import LLMConfig, ModelSettings
from .storage import AnswerCache

log = logging.getLogger("rubriclab.llm")


def plus_cost(cost: float | None, more: float | None) -> float | None:
    return None if cost is None or more is None else cost + more


def added(answer: RawAnswer, spent: RawAnswer) -> RawAnswer:
    """`answer` with the usage and cost of `spent` added (cost unknown if either is)."""
    return replace(answer, prompt_tokens=answer.prompt_tokens + spent.prompt_tokens,
                   completion_tokens=answer.completion_tokens + spent.completion_tokens,
                   cost_usd=plus_cost(answer.cost_usd, spent.cost_usd),
                   cache_read_tokens=answer.cache_read_tokens + spent.cache_read_tokens,
                   cache_write_tokens=answer.cache_write_tokens + spent.cache_write_tokens)


@dataclass
class _Tally:
    """What the askings of one request used and cost so far."""

    started: float
    attempts: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    repeat_prompt_tokens: int = 0  # of the askings after the first billed one
    billed_before: bool = False
    cost: float | None = 0.0

    def add_answer(self, raw: RawAnswer) -> None:
        """An asking's answer (kept, or cut off at its budget)."""
        self.prompt_tokens += raw.prompt_tokens
        self.repeat_prompt_tokens += raw.prompt_tokens if self.billed_before else 0
        self.billed_before = True
        self.completion_tokens += raw.completion_tokens
        self.cache_read += raw.cache_read_tokens
        self.cache_write += raw.cache_write_tokens
        self.cost = plus_cost(self.cost, raw.cost_usd)

    def add_spent(self, spent: RawAnswer) -> None:
        """Attempts billed though nothing came of them to keep (empty, unreadable)."""
        self.prompt_tokens += spent.prompt_tokens
        self.completion_tokens += spent.completion_tokens
        self.cost = plus_cost(self.cost, spent.cost_usd)

    def completion(self, request: Request, key: str, outcome: Outcome, text: str,
                   **fields: Any) -> Completion:
        return Completion(request=request, key=key, outcome=outcome, text=text,
                          usage=Usage(self.prompt_tokens, self.completion_tokens,
                                      self.cache_read, self.cache_write),
                          cost_usd=self.cost, latency_s=time.monotonic() - self.started,
                          attempts=self.attempts, reasks=self.reasks,
                          repeat_prompt_tokens=self.repeat_prompt_tokens, **fields)


class Attempts:
    """The LLMClient's stage that asks a claimed request (`_call`) and retries each attempt
    (`_attempt`). Mixed into LLMClient, whose state it reads."""

    config: LLMConfig
    cache: AnswerCache
    backends: Backends
    spend: SpendRecordBase | None
    limiter: RateLimiter
    _model_fatal: set[str]

    if TYPE_CHECKING:  # of the other stages
        def _messages_for(self, request: Request, key: str) -> list[dict]: ...

        async def _admit_attempt(self, request: Request, messages: list[dict],
                                 settings: ModelSettings, deadline: float, attempt: int
                                 ) -> tuple[Booking | None, Reservation | None]: ...

        def _journal_sent(self, request: Request, key: str, batch: bool = False) -> None: ...

        def _settle_attempt(self, booking: Booking | None, reservation: Reservation | None,
                            settings: ModelSettings, answer: RawAnswer | None,
                            failure: Exception | None = None) -> None: ...

    async def _call(self, request: Request, key: str, prior: RawAnswer | None = None
                    ) -> Answered:
        """Ask until an answer parses (then cache it) or the re-asks are spent. `prior`: an
        answer already paid for (a batch's), parsed first as if it were the first attempt."""
        settings = self.config.settings_for(request.model)
        fmt = get_format(request.response_format)
        messages = self._messages_for(request, key)
        tally = _Tally(started=time.monotonic())
        deadline = tally.started + settings.deadline_s
        doublings = 0
        text = ""
        sent = request
        while True:
            try:
                if prior is not None and prior.cost_usd and self.spend is not None:
                    self.spend.add(prior.cost_usd)  # a batch's answer: paid, so on the bill
                raw, used = ((prior, 1) if prior is not None
                             else await self._attempt(sent, messages, settings, deadline, key))
                prior = None
            except AttemptsExhausted as exhausted:
                if exhausted.spent is not None:  # billed, though nothing came to keep
                    tally.add_spent(exhausted.spent)
                tally.attempts += exhausted.attempts
                if not isinstance(exhausted.cause, AnswerCutOff):
                    return self._failed(request, key, exhausted, tally, text)
                tally.add_answer(exhausted.cause.answer)
                if doublings < settings.budget_doublings:
                    doublings += 1
                    sent = replace(sent, max_tokens=sent.max_tokens * 2,
                                   reasoning_tokens=sent.reasoning_tokens * 2)
                    log.info("%s: answer cut off at its budget; asking again with %d tokens",
                             request.model, sent.budget)
                    continue
                # Answered, but never within a budget: like an answer never in the format, it
                # is counted where it is reported (a rerun would pay again for the same
                # cut-off, so it does not stop the job as a failure does).
                error = redact.redact(f"AnswerCutOff: {exhausted.cause}")
                log.warning("answer of %s unusable: %s", request.model, error)
                return Answered(tally.completion(request, key, "unparseable", "", error=error))
            tally.attempts += used
            text = raw.text
            tally.add_answer(raw)
            try:
                parsed = fmt.parse(text)
            except UnparseableAnswer as exc:
                if tally.reasks >= settings.max_reasks:
                    return Answered(tally.completion(request, key, "unparseable", text,
                                                     error=str(exc)))
                tally.reasks += 1
                messages = messages + [{"role": "assistant", "content": text},
                                       {"role": "user", "content": fmt.reask_instruction}]
                continue
            text, parsed = self._store(request, key, fmt, text, parsed, tally)
            return Answered(tally.completion(request, key, "ok", text, parsed=parsed))

    def _failed(self, request: Request, key: str, exhausted: AttemptsExhausted, tally: _Tally,
                text: str) -> Answered:
        """No answer after every attempt: failed, with what the attempts cost."""
        kind = type(exhausted.cause).__name__
        error = redact.redact(f"{kind}: {exhausted.cause}")
        if is_model_fatal(exhausted.cause):
            self._model_fatal.add(key)
        if tally.attempts and provider_for(request.model).priced:
            tally.cost = None  # a provider may bill a call that failed: unknown, not $0
        log.warning("request to %s failed: %s", request.model, error)
        return Answered(tally.completion(request, key, "failed", text, error=error),
                        Failure(kind))

    def _store(self, request: Request, key: str, fmt: ResponseFormat, text: str, parsed: object,
               tally: _Tally) -> tuple[str, object]:
        """Cache an answer that parsed (where its model's answers are cached); the answer to
        serve: this one, or one another process stored first."""
        if not self.config.caches(request.model):
            return text, parsed
        self.cache.put(make_answer(key, request, text, tally.prompt_tokens,
                                   tally.completion_tokens, tally.cost,
                                   self.backends.fingerprint(request.model)))
        # The first answer stored for a key is the one kept. Where another process stored one
        # first (it took this claim over after its lease ran out), that one is served here too,
        # so that runs sharing the cache go on from the same answer; this one was paid for all
        # the same and stays on this row's bill.
        kept = self.cache.get(key)
        if kept is not None and kept.text != text:
            log.warning("%s: another process stored an answer to this request first "
                        "(this one's claim had run out); serving the stored one",
                        request.model)
            return kept.text, fmt.parse(kept.text)
        return text, parsed

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
        or, where no answer came, in `AttemptsExhausted.spent`."""
        spent: RawAnswer | None = None
        try:
            for attempt in range(settings.num_retries + 1):
                booking, reservation = await self._admit_attempt(request, messages, settings,
                                                                 deadline, attempt)
                try:
                    left = deadline - time.monotonic()
                    timed = replace(settings, timeout_s=max(0.001, min(settings.timeout_s, left)))
                    self._journal_sent(request, key)
                    answer = await within_deadline(
                        self.backends.complete(request, messages, timed), left, request.model,
                        settings.deadline_s)
                except Exception as exc:  # noqa: BLE001 - classified, then retried or reported
                    cut = _billed_without_answer(exc, messages)
                    if cut is not None and not isinstance(exc, AnswerCutOff):
                        spent = cut if spent is None else added(spent, cut)
                    self._settle_attempt(booking, reservation, settings, cut, exc)
                    await asyncio.sleep(self._retry_delay(request, settings, deadline, attempt,
                                                          exc))
                except BaseException:  # cancelled: the call may have been billed
                    self._settle_attempt(booking, reservation, settings, None)
                    raise
                else:
                    self._settle_attempt(booking, reservation, settings, answer)
                    if spent is not None:
                        answer = added(answer, spent)
                    return answer, attempt + 1
        except AttemptsExhausted as exhausted:
            exhausted.spent = spent
            raise
        raise AssertionError("unreachable")

    def _retry_delay(self, request: Request, settings: ModelSettings, deadline: float,
                     attempt: int, exc: Exception) -> float:
        """Attempt number `attempt` (from 0) raised `exc`: how long to wait before the next
        (pausing the model's rate limits for every process on a 429), or AttemptsExhausted
        where no retry may follow."""
        delay = min(settings.max_backoff_s, settings.backoff_s * 2**attempt)
        delay *= 0.5 + random.random() / 2
        asked = retry_after_s(exc)
        if asked is not None:
            delay = max(delay, asked)
        if is_rate_limited(exc):
            # The provider's limit is the model's, not this job's: every process waits.
            self.limiter.pause(request.model, delay)
        if not is_retryable(exc) or attempt == settings.num_retries:
            raise AttemptsExhausted(exc, attempt + 1) from exc
        if time.monotonic() + delay >= deadline:
            wait = f"the {asked:g} s its server asks" if asked is not None else "a retry"
            raise AttemptsExhausted(DeadlineExceeded(
                f"no answer from {request.model!r} within its deadline of "
                f"{settings.deadline_s:g} s: {wait} would pass it (last: "
                f"{type(exc).__name__}: {exc})"), attempt + 1) from exc
        log.info("retrying %s in %.2fs after %s", request.model, delay, type(exc).__name__)
        return delay


def _billed_without_answer(exc: Exception, messages: list[dict[str, str]]
                           ) -> RawAnswer | None:
    """What a failed attempt answered, billed: an answer cut off at its budget, an empty one,
    or a body that could not be read (its prompt, estimated high, at an unknown cost)."""
    cut = exc.answer if isinstance(exc, AnswerCutOff) else None
    if isinstance(exc, UnreadableReply):
        cut = RawAnswer("", estimate_prompt_tokens(messages), 0, None)
    elif isinstance(exc, EmptyAnswer):
        cut = exc.answer
    return cut
