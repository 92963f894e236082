"""OpenAI's batch API through litellm's file and batch calls (acreate_file, acreate_batch,
aretrieve_batch, afile_content, alist_batches), rows in OpenAI's batch format; the batch
carries its job key in its metadata, so a job killed before storing the batch's id finds it
among the provider's recent batches."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, cast

from .batch_api import (BatchAPI, ProviderBatch, ResultLines, Retrying, answer_of,
                        batch_errors, error_of, is_not_found, litellm_connection,
                        litellm_file_text, litellm_params, parse_lines, request_id)
from .batch_records import UNFINISHED, BatchJob, BatchOutcome
from .litellm_import import import_litellm
from .request import Request
from .settings import ModelSettings

if TYPE_CHECKING:
    from litellm.types.llms.openai import AllMessageValues

log = logging.getLogger("rubriclab.llm.batch")

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
METADATA_KEY = "rubriclab_job"


class OpenAIBatchAPI(BatchAPI):
    """OpenAI's file and batch API through litellm (acreate_file, acreate_batch,
    aretrieve_batch, afile_content, alist_batches), rows in OpenAI's batch format."""

    # "up to 50,000 requests, and a batch input file can be up to 200 MB in size"
    # (platform.openai.com/docs/guides/batch)
    MAX_REQUESTS = 50_000
    MAX_BYTES = 200 * 10**6

    def body(self, request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return openai_body(request, messages)

    async def upload(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> str | None:
        lines = [json.dumps({"custom_id": k, "method": "POST", "url": ENDPOINT, "body": body},
                            ensure_ascii=False) for k, body in bodies.items()]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        uploaded = await import_litellm().acreate_file(
            file=(f"rubriclab-{job.job_key[:16]}.jsonl", data), purpose="batch",
            custom_llm_provider="openai",
            **litellm_connection(settings, "openai", transfer=True))
        return uploaded.id

    async def create(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> ProviderBatch:
        batch = await import_litellm().acreate_batch(
            completion_window=COMPLETION_WINDOW, endpoint=ENDPOINT,
            input_file_id=job.input_file_id, custom_llm_provider="openai",
            metadata={METADATA_KEY: job.job_key}, **litellm_connection(settings, "openai"))
        return _openai_batch(batch)

    async def find(self, job: BatchJob, settings: ModelSettings,
                   taken: set[str]) -> ProviderBatch | None:
        """A batch of this job among the provider's most recent ones (one page)."""
        page = await import_litellm().alist_batches(
            custom_llm_provider="openai", limit=100,
            **litellm_connection(settings, "openai"))
        for batch in getattr(page, "data", None) or []:
            metadata = getattr(batch, "metadata", None) or {}
            if (metadata.get(METADATA_KEY) == job.job_key
                    and str(batch.status) not in UNFINISHED):
                return _openai_batch(batch)
        return None

    async def retrieve(self, job: BatchJob, settings: ModelSettings) -> ProviderBatch:
        return _openai_batch(await import_litellm().aretrieve_batch(
            batch_id=job.batch_id, custom_llm_provider="openai",
            **litellm_connection(settings, "openai")))

    async def results(self, job: BatchJob, batch: ProviderBatch, settings: ModelSettings,
                      retrying: Retrying) -> ResultLines:
        lines = ResultLines(job, "custom_id")
        gone: list[Exception] = []
        for file_id in (getattr(batch.handle, "output_file_id", None),
                        getattr(batch.handle, "error_file_id", None)):
            if not file_id:
                continue
            try:
                text = await retrying(settings, "download", lambda: litellm_file_text(
                    "openai", file_id, settings))
            except Exception as exc:  # noqa: BLE001 - one file gone: the other's answers hold
                if not is_not_found(exc):
                    raise
                log.warning("[batch %s] file %s is gone (%s)", job.batch_id, file_id,
                            type(exc).__name__)
                gone.append(exc)
                continue
            for where, result in parse_lines(job, f"file {file_id}", text):
                lines.add(request_id(result, "custom_id"),
                          lambda: _openai_outcome(job, result, settings), where)
        if gone and not lines and not lines.without_id:
            raise gone[0]  # every result is gone: the batch is
        return lines


def _openai_batch(batch: Any) -> ProviderBatch:
    counts = getattr(batch, "request_counts", None)
    return ProviderBatch(str(batch.id), str(batch.status),
                         getattr(counts, "completed", "?"), getattr(counts, "failed", "?"),
                         batch_errors(batch), batch)



def _openai_outcome(job: BatchJob, result: dict[str, Any], settings: ModelSettings
                    ) -> BatchOutcome:
    response = result.get("response") or {}
    error = result.get("error")
    body = response.get("body") or {}
    if error or response.get("status_code") != 200:
        detail = error or body.get("error") or body
        message = (str(detail.get("message") or detail) if isinstance(detail, dict)
                   else str(detail))
        return error_of(job, response.get("status_code"), message)
    choice = (body.get("choices") or [{}])[0]
    usage = body.get("usage") or {}
    return answer_of(job, (choice.get("message") or {}).get("content") or "",
                     int(usage.get("prompt_tokens") or 0),
                     int(usage.get("completion_tokens") or 0),
                     str(choice.get("finish_reason") or "stop"), usage, settings)


def openai_body(request: Request, messages: list[dict[str, Any]] | None = None
                ) -> dict[str, Any]:
    """The /v1/chat/completions body litellm would send for this request (an openai/ model),
    with the same parameter mapping (max_completion_tokens for reasoning models, ...)."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    model, optional = litellm_params(request, "openai")
    config = ProviderConfigManager.get_provider_chat_config(model=model,
                                                            provider=LlmProviders.OPENAI)
    assert config is not None  # litellm has a chat config for every OpenAI model
    sent = cast("list[AllMessageValues]", messages or request.message_dicts())
    body = dict(config.transform_request(model=model,
                                         messages=sent,
                                         optional_params=optional, litellm_params={},
                                         headers={}))
    body.pop("stream", None)
    if not body.get("extra_body"):
        body.pop("extra_body", None)
    return body
