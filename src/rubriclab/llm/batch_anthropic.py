"""Anthropic's Message Batches through the official anthropic SDK (litellm 1.110 reads Anthropic
batches but does not create them: "Batch creation not yet implemented for Anthropic").

Each request's params are what litellm sends for an ordinary call of the same request
(litellm's Anthropic transformation: system blocks, max_tokens, temperature, the thinking budget
litellm maps reasoning_effort to, and the cache_control marks of rubriclab.llm.prompt_cache), and
its custom_id is the request's sha256 key (Anthropic allows 64 characters of [a-zA-Z0-9_-]).

Prompt caching inside a batch: Anthropic bills all batch usage at 50% of standard prices, cache
writes and reads included, and recommends the 1-hour cache duration for batches with shared
context "because batches can take more than 5 minutes to process" (docs.claude.com/en/docs/
build-with-claude/batch-processing, "Pricing" and "Using prompt caching with Message Batches");
cache hits inside a batch are best-effort, not guaranteed. The marks sent here are the ordinary
calls' (5-minute ephemeral), so a batch request is the request an ordinary call would make, and
its usage says what was read from or written to the cache; litellm's price map has the batch
cache rates (cache_*_input_token_cost_batches) it is priced at.

Message batches carry no metadata, so a job killed between the batch's creation and its id being
stored cannot find it by a key: it adopts the one batch the provider lists that was created
after the job stored its intent to submit, with as many requests as the job has, and that no
other stored job holds; with none or several such batches it submits anew.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from .backends import api_key_to_send
from .batch_api import (BatchAPI, ProviderBatch, ResultLines, Retrying, answer_of, error_of,
                        litellm_params, request_id, transfer_timeout_s)
from .batch_records import DONE, BatchJob, BatchOutcome
from .request import Request
from .settings import ModelSettings

if TYPE_CHECKING:
    from litellm.types.llms.openai import AllMessageValues

# The provider's clock and ours may differ: a batch created this long before the job's
# stored intent still counts as possibly the job's.
CLOCK_SLACK_S = 300.0


class AnthropicBatchAPI(BatchAPI):
    # "limited to either 100,000 Message requests or 256 MB in size, whichever is reached
    # first" (docs.claude.com/en/docs/build-with-claude/batch-processing)
    MAX_REQUESTS = 100_000
    MAX_BYTES = 256 * 10**6

    def body(self, request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return anthropic_params(request, messages)

    async def upload(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> str | None:
        return None  # the requests go in the create call itself

    async def create(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> ProviderBatch:
        async with _client(settings, transfer=True) as client:
            batch = await client.messages.batches.create(
                requests=[{"custom_id": key, "params": params} for key, params in bodies.items()])
        return _batch(batch)

    async def find(self, job: BatchJob, settings: ModelSettings,
                   taken: set[str]) -> ProviderBatch | None:
        async with _client(settings) as client:
            page = await client.messages.batches.list(limit=100)
            listed = list(page.data)
        since = job.updated_at - CLOCK_SLACK_S
        candidates = [b for b in listed if b.id not in taken
                      and _timestamp(b.created_at) >= since
                      and _total(b.request_counts) == job.requests]
        return _batch(candidates[0]) if len(candidates) == 1 else None

    async def retrieve(self, job: BatchJob, settings: ModelSettings) -> ProviderBatch:
        async with _client(settings) as client:
            return _batch(await client.messages.batches.retrieve(job.batch_id))

    async def results(self, job: BatchJob, batch: ProviderBatch, settings: ModelSettings,
                      retrying: Retrying) -> ResultLines:
        async def download() -> list[dict[str, Any]]:
            async with _client(settings, transfer=True) as client:
                decoder = await client.messages.batches.results(job.batch_id)
                return [item.to_dict() async for item in decoder]

        lines = ResultLines(job, "custom_id")
        for line_no, row in enumerate(await retrying(settings, "download", download), start=1):
            lines.add(request_id(row, "custom_id"),
                      lambda: _outcome(job, row.get("result") or {}, settings),
                      f"results line {line_no}")
        return lines


def anthropic_params(request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The Messages API body litellm would send for this request (an anthropic/ model)."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    model, optional = litellm_params(request, "anthropic")
    config = ProviderConfigManager.get_provider_chat_config(model=model,
                                                            provider=LlmProviders.ANTHROPIC)
    assert config is not None  # litellm has a chat config for every Anthropic model
    sent = cast("list[AllMessageValues]", [dict(m) for m in messages])
    body = dict(config.transform_request(model=model, messages=sent,
                                         optional_params=optional, litellm_params={},
                                         headers={}))
    body.pop("stream", None)
    return body


def _client(settings: ModelSettings, transfer: bool = False) -> Any:
    import anthropic

    return anthropic.AsyncAnthropic(api_key=api_key_to_send("anthropic", settings),
                                    base_url=settings.api_base or None,
                                    max_retries=0, timeout=transfer_timeout_s(settings)
                                    if transfer else settings.timeout_s)


def _total(counts: Any) -> int:
    return sum(int(getattr(counts, name, 0) or 0)
               for name in ("processing", "succeeded", "errored", "canceled", "expired"))


def _timestamp(value: Any) -> float:
    return value.timestamp() if isinstance(value, datetime) else float(value or 0)


def _batch(batch: Any) -> ProviderBatch:
    counts = batch.request_counts
    status = str(batch.processing_status)
    if status == "ended":
        # Ended: every request succeeded, errored, was canceled or expired; those that did
        # not succeed are reported per request (and asked again or failed, as configured).
        status = ("expired" if counts.expired else "cancelled" if counts.canceled else DONE)
    return ProviderBatch(batch.id, status, counts.succeeded, counts.errored, "", batch)


def _outcome(job: BatchJob, result: dict[str, Any], settings: ModelSettings) -> BatchOutcome:
    kind = result.get("type")
    if kind != "succeeded":
        error = (result.get("error") or {}).get("error") or result.get("error") or {}
        message = error.get("message") if isinstance(error, dict) else str(error)
        return error_of(job, kind, message or f"the request {kind}")
    from litellm.litellm_core_utils.core_helpers import map_finish_reason
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig

    message = result.get("message") or {}
    text = "".join(block.get("text", "") for block in message.get("content") or []
                   if block.get("type") == "text")
    # As litellm reads an ordinary call's usage: prompt tokens include those read from and
    # written to the cache.
    usage = AnthropicConfig().calculate_usage(usage_object=message.get("usage") or {},
                                              reasoning_content=None)
    return answer_of(job, text, int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0),
                     map_finish_reason(str(message.get("stop_reason") or "end_turn")), usage, settings)
