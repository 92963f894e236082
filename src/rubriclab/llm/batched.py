"""The client's batch stage: the misses of a batched model (or that a stored batch holds) are
claimed, sent through the provider's batch API (`rubriclab.llm.batch`), and settled one by one:
an answer is parsed (and re-asked as ordinary calls where it does not parse), an unusable or
missing one is asked as an ordinary call or fails, as `batch_fallback` says (docs/batches.md)."""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING

from . import redact
from .attempts import added, plus_cost
from .backends import RawAnswer
from .batch import BatchRunner
from .batch_records import BatchOutcome
from .budget import SpendRecordBase
from .cache_records import CachedAnswer, Claim
from .failures import BATCH_FAILED, Answered, Failure, not_attempted
from .formats import get_format
from .misses import MissRun
from .request import Completion, Request, Usage
from .settings import LLMConfig
from .storage import AnswerCache

log = logging.getLogger("rubriclab.llm")


class Batched:
    """The LLMClient's stage for batched requests. Mixed into LLMClient, whose state it
    reads."""

    config: LLMConfig
    role: str | None
    cache: AnswerCache
    batches: BatchRunner
    spend: SpendRecordBase | None
    _held: set[str]
    _budget_stop: str | None
    _disk_stop: str | None

    if TYPE_CHECKING:  # of the other stages
        def _claim(self, key: str, held_by_owner: bool | None = None) -> Claim: ...

        def _release(self, key: str) -> None: ...

        def _from_cache(self, request: Request, key: str, hit: CachedAnswer) -> Completion: ...

        def _messages_for(self, request: Request, key: str) -> list[dict]: ...

        async def _call(self, request: Request, key: str, prior: RawAnswer | None = None
                        ) -> Answered: ...

        def _record(self, completion: Completion) -> None: ...

    def _claim_batched(self, requests: list[Request], keys: list[str],
                       results: list[Answered | None], misses: list[int]
                       ) -> dict[str, list[int]]:
        """Claim the misses to batch (of batched models, or held by a stored batch), by
        model; those answered since the lookup are answered from the cache. Those another
        process is paying for are left to be waited for, as ordinary misses."""
        held = self._held_by_stored_batches(requests, keys, misses)
        batched: dict[str, list[int]] = defaultdict(list)
        for i in misses:
            if (self.config.batch_for(requests[i].model, requests[i].role or self.role)
                    or keys[i] in held):
                claim = self._claim(keys[i])
                if claim.answer is not None:  # answered since the lookup
                    cached = self._from_cache(requests[i], keys[i], claim.answer)
                    results[i] = Answered(cached)
                    self._record(cached)
                elif claim.claimed:
                    self._held.add(keys[i])
                    batched[requests[i].model].append(i)
        return batched

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

    async def _answer_batch(self, run: MissRun, model: str, indices: list[int]) -> None:
        requests, keys = run.requests, run.keys
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
            run.progress.note_batch_lines(outcomes.unusable_lines)

            async def settle(i: int) -> None:
                async with run.limits[model]:
                    settled = await self._settle(requests[i], keys[i], outcomes[keys[i]],
                                                 submit)
                    run.results[i] = settled
                self._record(settled.completion)
                # Served (cached and billed, or asked otherwise): no longer kept.
                self.batches.store.forget_answers(model, [keys[i]])
                run.progress.advance(settled.completion)

            await asyncio.gather(*(settle(i) for i in indices))
        finally:
            for key in unique:
                self._held.discard(key)
                self._release(key)

    async def _settle(self, request: Request, key: str, outcome: BatchOutcome,
                      batched: bool = True) -> Answered:
        """A completion from what a batch gave one request: its answer (parsed, re-asked as
        ordinary calls if it does not parse), else an ordinary call or a failure. `batched`
        False: the model is no longer batched, so a request its stored batch did not answer
        is asked as an ordinary call, whatever `batch_fallback` says."""
        hit = self.cache.get(key)
        if hit is not None:  # answered meanwhile (a duplicate request, another job)
            return Answered(self._from_cache(request, key, hit))
        if outcome.unsent:  # never in a batch: an ordinary call, as any other of the run
            return await self._call(request, key)
        if outcome.over_budget or outcome.disk_low:
            if outcome.over_budget:
                self._budget_stop = self._budget_stop or outcome.error
            else:
                self._disk_stop = self._disk_stop or outcome.error
            return not_attempted(request, key, outcome.error, batch=True)
        answer = outcome.answer
        if answer is not None and _usable(request, answer):
            answered = await self._call(request, key, prior=answer)
            return replace(answered, completion=replace(answered.completion, batch=True))
        return await self._settle_unusable(request, key, outcome, batched)

    async def _settle_unusable(self, request: Request, key: str, outcome: BatchOutcome,
                               batched: bool) -> Answered:
        """A batch gave a request no usable answer: it fails, or is asked as an ordinary call,
        and what the batch's unusable answers cost is on the bill and on its completion."""
        answer = outcome.answer
        error = redact.redact(outcome.error or (f"batch {outcome.batch_id}: the answer was cut "
                                                "off at its budget or empty"))
        settings = self.config.settings_for(request.model)
        # The batch's answers that cannot be used (cut off, empty, or conflicting lines) were
        # paid for all the same: on the run's bill, and part of what this request cost.
        unused = ((answer,) if answer is not None else ()) + outcome.spent
        spent = RawAnswer("", 0, 0, 0.0)
        for paid in unused:
            spent = added(spent, paid)
            if paid.cost_usd and self.spend is not None:
                self.spend.add(paid.cost_usd)
        if outcome.running or (batched and settings.batch_fallback == "fail"):
            log.warning("request to %s failed: %s", request.model, error)
            return Answered(Completion(request=request, key=key, outcome="failed",
                                       usage=Usage(spent.prompt_tokens, spent.completion_tokens,
                                                   spent.cache_read_tokens,
                                                   spent.cache_write_tokens),
                                       cost_usd=spent.cost_usd, attempts=len(unused),
                                       error=error, batch=True),
                            Failure(BATCH_FAILED))
        (log.warning if outcome.spent else log.info)("%s; asking it as an ordinary call", error)
        answered = await self._call(request, key)
        if not unused:
            return answered
        # What the batch's unusable answers cost is part of what this request cost; the first
        # was the first asking, so every prompt token after it is a repeat's.
        completion = answered.completion
        usage = completion.usage
        return replace(answered, completion=replace(
            completion, attempts=completion.attempts + len(unused),
            cost_usd=plus_cost(completion.cost_usd, spent.cost_usd), batch=True,
            repeat_prompt_tokens=(usage.prompt_tokens + spent.prompt_tokens
                                  - unused[0].prompt_tokens),
            usage=Usage(usage.prompt_tokens + spent.prompt_tokens,
                        usage.completion_tokens + spent.completion_tokens,
                        usage.cache_read_tokens + spent.cache_read_tokens,
                        usage.cache_write_tokens + spent.cache_write_tokens)))


def _usable(request: Request, answer: RawAnswer) -> bool:
    """As for an ordinary call (Backends.complete): an empty answer, or a structured one cut
    off at its budget, is not an answer to parse."""
    if not answer.text.strip():
        return False
    return answer.finish_reason != "length" or get_format(request.response_format).free_text
