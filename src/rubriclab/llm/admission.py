"""The client's admission stage: whether a paid call may start now, and what it books
first. Under a budget (`llm.budget_usd`) every paid model's calls must be countable; each
attempt books its worst case on the run's bill (`rubriclab.llm.budget`), waits for its start in
the model's shared rate limits (`rubriclab.llm.ratelimit`), and is journaled as sent
(`rubriclab.llm.journal`); no answer is paid for without `llm.min_free_disk_mb` free where it is
stored, nor once the job was asked to stop."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import replace

from . import pricing
from .backends import DeadlineExceeded, RawAnswer, made_no_completion
from .budget import (BudgetCannotGuard, BudgetExceeded, Reservation, SpendRecordBase,
                     unguarded_message, unguarded_models, usd, worst_cost)
from .cache_records import DiskSpaceLow, free_space_problem
from .failures import AttemptsExhausted
from .ledger import Ledger, attempts_path
from .providers import provider_for
from .ratelimit import (Booking, RateLimiter, RateLimitWait, estimate_prompt_tokens,
                        limited_input_tokens)
from .request import Request
from .settings import LLMConfig, ModelSettings
from .stopping import JobStopped, StopSignals
from .storage import AnswerCache

log = logging.getLogger("rubriclab.llm")


class Admission:
    """The LLMClient's stage between a claimed request and its call: the budget, the rate
    limits, the disk guard and the journal. Mixed into LLMClient, whose state it reads."""

    config: LLMConfig
    cache: AnswerCache
    ledger: Ledger | None
    spend: SpendRecordBase | None
    limiter: RateLimiter
    _stop: StopSignals
    _budget_stop: str | None  # why the run stopped at its budget
    _disk_stop: str | None  # why the run stopped before paying: disk space

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

    async def _admit_attempt(self, request: Request, messages: list[dict],
                             settings: ModelSettings, deadline: float, attempt: int
                             ) -> tuple[Booking | None, Reservation | None]:
        """Before attempt number `attempt` (from 0) of a request: enough free disk, no stop
        asked, time left before the deadline, its start in the rate limits and its worst case
        on the bill; else AttemptsExhausted, naming why."""
        disk = self._disk_problem(request)
        if disk is not None:
            self._disk_stop = self._disk_stop or disk
            raise AttemptsExhausted(DiskSpaceLow(disk), attempt)
        if self._stop.stopped:  # no retry or re-ask once the job is asked to stop
            raise AttemptsExhausted(JobStopped(self._stop_reason()), attempt)
        left = deadline - time.monotonic()
        if left <= 0:
            raise AttemptsExhausted(DeadlineExceeded(
                f"no answer from {request.model!r} within its deadline of "
                f"{settings.deadline_s:g} s"), attempt)
        try:
            booking = await self._wait_for_rate(request, messages, settings, deadline)
        except RateLimitWait as exc:
            raise AttemptsExhausted(DeadlineExceeded(
                f"no answer from {request.model!r} within its deadline of "
                f"{settings.deadline_s:g} s: {exc}"), attempt) from exc
        try:
            reservation = self._reserve(request, messages, settings)
        except BudgetExceeded as exc:
            self._budget_stop = self._budget_stop or str(exc)
            raise AttemptsExhausted(exc, attempt) from exc
        return booking, reservation

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
            assert self.spend is not None  # a reservation is made only with a spend record
            self.spend.settle(reservation, cost)

    def _stop_reason(self) -> str | None:
        """Why no new request is sent: the job was asked to stop (SIGINT or SIGTERM)."""
        if not self._stop.stopped:
            return None
        return f"not sent: the job was stopped by {self._stop.signal_name}"

    def _journal_sent(self, request: Request, key: str, batch: bool = False) -> None:
        """Before a paid request goes out: a record that outlives a kill, so that its call is
        billed (`rubriclab.llm.journal`) even if this process never records it."""
        if pricing.is_free(request.model):
            return
        ledger = self.ledger
        try:
            self.cache.journal_sent(
                key, request.model,
                str(attempts_path(ledger.path).absolute()) if ledger is not None else None,
                ledger.rule if ledger is not None else None,
                ledger.run if ledger is not None else None, batch)
        except OSError as exc:  # the call goes ahead: its ledger row will count it
            log.error("could not journal a request to %s before sending it: %s",
                      request.model, exc)

    def _disk_problem(self, request: Request) -> str | None:
        """Why no answer should be paid for now: too little free space where it is stored."""
        if not provider_for(request.model).durable:
            return None
        folders = [self.config.cache_dir]
        if self.ledger is not None:
            folders.append(self.ledger.path.parent)
        return free_space_problem(folders, int(self.config.min_free_disk_mb * 2**20))


def _worst_cost(request: Request, messages: list[dict], settings: ModelSettings, *,
                batch: bool) -> float | None:
    """The most one asking of `request` can cost (rubriclab.llm.budget.worst_cost): its prompt
    (estimated high) at the input or the cache-write rate, whichever is higher (the input
    rate where no cache write can be billed), and its whole answer budget; None if unknown."""
    return worst_cost(request.model, estimate_prompt_tokens(messages), request.budget,
                      settings, batch=batch)
