"""The client's stages for the requests the cache did not answer: each waits for a slot of its
model (`concurrency`), is refused if the run stopped (its budget, the disk, a signal, a stopped
model), is claimed, and is asked (`attempts`), or waited for while another process answers
it; batched models' requests go to their batch (`batched`). Each outcome is recorded, noted
by the breaker and counted in the progress line."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .breaker import Usability
from .backends import RawAnswer
from .cache_records import CachedAnswer, Claim
from .failures import WAITED_TOO_LONG, Answered, failed, not_attempted
from .progress import Progress
from .prompt_cache import cache_marked_messages, cacheable_prefixes, min_cacheable_tokens
from .request import Completion, Request
from .settings import LLMConfig, ModelSettings
from .stopping import StopSignals

log = logging.getLogger("rubriclab.llm")


@dataclass
class MissRun:
    """One run's requests the cache did not answer, and what their stages share."""

    requests: list[Request]
    keys: list[str]
    results: list[Answered | None]  # by request, as they are answered
    progress: Progress
    limits: dict[str, asyncio.Semaphore]  # by model: its calls at a time
    # model -> (failure kind, requests in a row)
    streaks: dict[str, tuple[str, int]]


class Misses:
    """The LLMClient's stages for cache misses. Mixed into LLMClient, whose state it reads."""

    config: LLMConfig
    role: str | None
    _stop: StopSignals
    _stops: dict[str, str]
    _usability: dict[str, Usability]
    _held: set[str]
    _cache_marks: dict[str, int]
    _budget_stop: str | None
    _disk_stop: str | None
    _not_sent_at_stop: int

    if TYPE_CHECKING:  # of the other stages
        def _from_cache(self, request: Request, key: str, hit: CachedAnswer) -> Completion: ...

        def _claim_batched(self, requests: list[Request], keys: list[str],
                           results: list[Answered | None], misses: list[int]
                           ) -> dict[str, list[int]]: ...

        async def _answer_batch(self, run: MissRun, model: str, indices: list[int]
                                ) -> None: ...

        async def _claim_for_call(self, request: Request, key: str, shared: bool
                                  ) -> tuple[Claim, Answered | None]: ...

        def _release(self, key: str) -> None: ...

        def _wait_limit_s(self, settings: ModelSettings) -> float: ...

        def _disk_problem(self, request: Request) -> str | None: ...

        def _stop_reason(self) -> str | None: ...

        async def _call(self, request: Request, key: str, prior: RawAnswer | None = None
                        ) -> Answered: ...

        def _record(self, completion: Completion) -> None: ...

        def _note_outcome(self, answered: Answered, settings: ModelSettings,
                          streaks: dict[str, tuple[str, int]]) -> None: ...

    async def _answer_misses(self, requests: list[Request], keys: list[str],
                             results: list[Answered | None], misses: list[int],
                             label: str) -> list[Answered]:
        batched = self._claim_batched(requests, keys, results, misses)
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
        run = MissRun(requests, keys, results, progress, limits, streaks={})

        # Tasks start in request order and semaphores are FIFO, so a model limited to one
        # call at a time answers in that order (consecutive checks of one item share a
        # prefix).
        await asyncio.gather(*(self._answer_one(run, i) for i in misses if i not in in_batch),
                             *(self._answer_batch(run, m, indices)
                               for m, indices in batched.items()))
        return [r for r in results if r is not None]

    async def _answer_one(self, run: MissRun, i: int) -> None:
        """Answer request `i` as an ordinary call, or wait for the process that pays for it."""
        request, key = run.requests[i], run.keys[i]
        settings = self.config.settings_for(request.model)
        waited_since = None
        poll_s = 0.05
        while True:
            async with run.limits[request.model]:
                answered, claim = await self._ask(request, key)
            if answered is None and self._stop.stopped:
                reason = self._stop_reason()
                assert reason is not None  # given whenever the job is stopped
                answered = not_attempted(request, key, reason)
            if answered is not None:
                if answered.not_attempted and self._stop.stopped:
                    self._not_sent_at_stop += 1
                break
            # Another process pays for it: wait (without holding a slot) for its answer.
            assert claim is not None  # _ask answers nothing only with the claim of who pays
            waited = 0.0 if waited_since is None else time.monotonic() - waited_since
            if waited_since is None:
                waited_since = time.monotonic()
                log.info("%s: waiting for the answer %s is paying for", request.model,
                         claim.holder)
            elif waited > self._wait_limit_s(settings):
                answered = failed(
                    request, key, WAITED_TOO_LONG,
                    f"{claim.holder} has held this request for {waited:.0f} s, past how long "
                    f"it may take ({self._wait_limit_s(settings):.0f} s)", latency_s=waited)
                break
            await asyncio.sleep(poll_s)
            poll_s = min(1.0, poll_s * 1.5)
        run.results[i] = answered
        self._record(answered.completion)
        self._note_outcome(answered, settings, run.streaks)
        run.progress.advance(answered.completion)

    async def _ask(self, request: Request, key: str) -> tuple[Answered | None, Claim | None]:
        """Within a slot of its model: refused (the run stopped, or its model), claimed and
        asked, or found answered since the lookup. No answer where another process is paying
        for it (then its claim names who)."""
        if self._disk_stop is None:
            self._disk_stop = self._disk_problem(request)
        stop = self._budget_stop or self._disk_stop or self._stop_reason()
        if request.model in self._stops or stop is not None:
            why = self._stops.get(request.model) or stop
            assert why is not None  # the model's stop (never empty), else the run's
            return not_attempted(request, key, why), None
        shared = self.config.caches(request.model)
        claim, answered = await self._claim_for_call(request, key, shared)
        if answered is not None:
            return answered, claim
        if claim.answer is not None:
            return Answered(self._from_cache(request, key, claim.answer)), claim
        if not claim.claimed:
            return None, claim
        self._held.add(key)
        try:
            return await self._call(request, key), claim
        finally:
            self._held.discard(key)
            if shared:
                self._release(key)

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
