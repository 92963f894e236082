"""Gemini (Google AI Studio) batches through litellm's Gemini file and batch calls: the input
file uploaded with acreate_file, the job created with acreate_batch (models/<model>:
batchGenerateContent), polled with aretrieve_batch and its responses file read with
afile_content, all with custom_llm_provider="gemini".

The rows are written in the format Google documents for a batch input file, one
`{"key": ..., "request": GenerateContentRequest}` per line, and the output is read as it
documents it, one `{"key": ..., "response": GenerateContentResponse}` (or an error status) per
line (ai.google.dev/gemini-api/docs/batch-api, "Input file"). litellm would upload OpenAI-shaped
rows instead (litellm/llms/gemini/batches/transformation.py), for Gemini to map through its
OpenAI compatibility layer; that layer maps reasoning_effort to thinking budgets of its own
(ai.google.dev/gemini-api/docs/openai), not the ones litellm sends on an ordinary gemini/ call,
so a batch request would not be the request its cache key stands for. Here each request is the
body litellm's Gemini transformation builds for the ordinary call (contents,
system_instruction, generationConfig with maxOutputTokens, temperature and the thinking budget
litellm maps the effort to).

The job's display name carries its job key. litellm lists no Gemini batches, so a job killed
between the batch's creation and its id being stored lists them itself (GET v1beta/batches).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from .backends import api_key_to_send
from .batch_api import (BatchAPI, ProviderBatch, ResultLines, Retrying, answer_of, batch_errors,
                        error_of, litellm_connection, litellm_file_text, litellm_params,
                        parse_lines, request_id)
from .batch_records import UNFINISHED, BatchJob, BatchOutcome
from .litellm_import import import_litellm
from .request import Request
from .settings import ModelSettings

if TYPE_CHECKING:
    from litellm.types.llms.openai import AllMessageValues

DISPLAY_PREFIX = "rubriclab-"
ENDPOINT = "/v1/chat/completions"  # litellm's argument; the job goes to batchGenerateContent


class GeminiBatchAPI(BatchAPI):
    # An input file of up to 2 GB (ai.google.dev/gemini-api/docs/batch-api); no request count.
    MAX_REQUESTS = None
    MAX_BYTES = 2 * 10**9

    def body(self, request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
        return gemini_body(request, messages)

    async def upload(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> str | None:
        lines = [json.dumps({"key": k, "request": body}, ensure_ascii=False)
                 for k, body in bodies.items()]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        uploaded = await import_litellm().acreate_file(
            file=(f"{DISPLAY_PREFIX}{job.job_key[:16]}.jsonl", data, "application/jsonl"),
            purpose="batch", custom_llm_provider="gemini",
            **litellm_connection(settings, "gemini", transfer=True))
        return uploaded.id

    async def create(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> ProviderBatch:
        batch = await import_litellm().acreate_batch(
            completion_window="24h", endpoint=ENDPOINT, input_file_id=job.input_file_id,
            custom_llm_provider="gemini", model=job.model,
            metadata={"display_name": DISPLAY_PREFIX + job.job_key},
            **litellm_connection(settings, "gemini"))
        return _batch(batch)

    async def find(self, job: BatchJob, settings: ModelSettings,
                   taken: set[str]) -> ProviderBatch | None:
        import httpx
        from litellm.llms.gemini.batches.transformation import (GeminiBatchOperation,
                                                                _to_litellm_batch)
        from litellm.llms.gemini.common_utils import GeminiModelInfo

        base = GeminiModelInfo.get_api_base(settings.api_base).rstrip("/")
        async with httpx.AsyncClient(timeout=settings.timeout_s) as client:
            response = await client.get(
                f"{base}/v1beta/batches", params={"pageSize": 100},
                headers={"x-goog-api-key": api_key_to_send("gemini", settings) or ""})
        if response.status_code != 200:
            error = RuntimeError(f"listing Gemini batches: HTTP {response.status_code}: "
                                 f"{response.text[:200]}")
            error.status_code = response.status_code  # type: ignore[attr-defined]
            raise error
        for operation in response.json().get("operations") or []:
            batch = _to_litellm_batch(GeminiBatchOperation.model_validate(operation))
            display = (batch.metadata or {}).get("display_name")
            if (display == DISPLAY_PREFIX + job.job_key and batch.id not in taken
                    and str(batch.status) not in UNFINISHED):
                return _batch(batch)
        return None

    async def retrieve(self, job: BatchJob, settings: ModelSettings) -> ProviderBatch:
        return _batch(await import_litellm().aretrieve_batch(
            batch_id=job.batch_id, custom_llm_provider="gemini", model=job.model,
            **litellm_connection(settings, "gemini")))

    async def results(self, job: BatchJob, batch: ProviderBatch, settings: ModelSettings,
                      retrying: Retrying) -> ResultLines:
        lines = ResultLines(job, "key")
        file_id = getattr(batch.handle, "output_file_id", None)
        if not file_id:
            return lines
        text = await retrying(settings, "download", lambda: litellm_file_text(
            "gemini", file_id, settings))
        for where, row in parse_lines(job, f"file {file_id}", text):
            lines.add(request_id(row, "key"), lambda: _outcome(job, row, settings), where)
        return lines


def gemini_body(request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The generateContent body litellm builds for this request (a gemini/ model)."""
    from litellm.llms.vertex_ai.gemini.transformation import (_with_default_output_budget,
                                                              transform_request_body)

    model, optional = litellm_params(request, "gemini")
    sent = cast("list[AllMessageValues]", [dict(m) for m in messages])
    body = transform_request_body(messages=sent, model=model,
                                  optional_params=optional, custom_llm_provider="gemini",
                                  litellm_params={}, cached_content=None)
    return dict(_with_default_output_budget(body, model, "gemini", None))


def _batch(batch: Any) -> ProviderBatch:
    counts = getattr(batch, "request_counts", None)
    return ProviderBatch(str(batch.id), str(batch.status), getattr(counts, "completed", "?"),
                         getattr(counts, "failed", "?"), batch_errors(batch), batch)


def _outcome(job: BatchJob, row: dict[str, Any], settings: ModelSettings) -> BatchOutcome:
    response = row.get("response")
    if not response:
        status = row.get("error") or row.get("status") or {}
        message = status.get("message") if isinstance(status, dict) else str(status)
        return error_of(job, status.get("code") if isinstance(status, dict) else None,
                        message or "no response")
    from litellm.litellm_core_utils.core_helpers import map_finish_reason
    from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import (
        VertexGeminiConfig)

    candidate = (response.get("candidates") or [{}])[0]
    text, _thinking = VertexGeminiConfig().get_assistant_content_message(
        (candidate.get("content") or {}).get("parts") or [])
    # As litellm reads an ordinary call's usage: thinking tokens are completion tokens.
    usage = VertexGeminiConfig.calculate_usage(response)
    finish = candidate.get("finishReason")
    return answer_of(job, text or "", int(usage.prompt_tokens or 0),
                     int(usage.completion_tokens or 0),
                     map_finish_reason(finish) if finish else "stop", usage, settings)
