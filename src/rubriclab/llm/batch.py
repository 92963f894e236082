"""Batch mode: a run's cache misses for a model sent to the provider's batch API through litellm.

Half the price of ordinary calls, answered within the provider's 24-hour window. The batch is
stored beside the cache (`llm_batches.sqlite` in the cache directory) under a key over its
model and request keys, before it is submitted and again once the provider names it, so a
killed or restarted job polls the batch it already paid for instead of submitting another.
Submitted batches also carry that key in their metadata: a job killed between the provider
creating the batch and the id being stored finds it among the provider's recent batches.

This module only submits, polls and reads results; `LLMClient` parses each answer with its
request's format, caches and records it, and asks the requests a batch did not answer as
ordinary calls (or counts them as failed).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .backends import RawAnswer, import_litellm, is_retryable, prompt_cache_tokens
from .cache import open_wal_database
from .pricing import price, provider_of
from .request import Request
from .settings import LLMConfig, ModelSettings

log = logging.getLogger("rubriclab.llm.batch")

# Providers whose batches litellm (1.110) creates and reads through acreate_file /
# acreate_batch / aretrieve_batch / afile_content in OpenAI's wire format. litellm reads
# Anthropic's message batches but does not create them ("Batch creation not yet implemented
# for Anthropic"), so anthropic/ models are refused rather than half supported.
BATCH_PROVIDERS = frozenset({"openai"})
BATCH_FALLBACKS = ("call", "fail")
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
DONE = "completed"
UNFINISHED = frozenset({"failed", "expired", "cancelled"})  # ended without answering all
METADATA_KEY = "rubriclab_job"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_jobs (
    job_key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    requests INTEGER NOT NULL,
    input_file_id TEXT,
    batch_id TEXT,
    status TEXT NOT NULL,
    updated_at REAL NOT NULL
)
"""

T = TypeVar("T")


class BatchNotSupported(ValueError):
    pass


def check_batch_settings(model: str, settings: ModelSettings, where: str) -> None:
    """Refuse, naming the setting, batch settings that cannot work; before any call."""
    if settings.batch_fallback not in BATCH_FALLBACKS:
        raise ValueError(f"{where}: batch_fallback must be one of {list(BATCH_FALLBACKS)}, got "
                         f"{settings.batch_fallback!r}")
    if settings.batch_poll_s <= 0 or settings.batch_max_wait_s <= 0:
        raise ValueError(f"{where}: batch_poll_s and batch_max_wait_s must be > 0, got "
                         f"{settings.batch_poll_s} and {settings.batch_max_wait_s}")
    if settings.batch and provider_of(model) not in BATCH_PROVIDERS:
        raise BatchNotSupported(
            f"{where}: batch: true, but model {model!r} is not of a provider whose batches "
            f"litellm creates ({', '.join(sorted(BATCH_PROVIDERS))}/ models; litellm reads "
            "Anthropic message batches but cannot create them); remove batch for this model")


def job_key(model: str, keys: list[str]) -> str:
    """The identity of a batch: its model and the set of request keys it answers."""
    payload = json.dumps([model, sorted(set(keys))], separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class BatchJob:
    job_key: str
    model: str
    requests: int
    input_file_id: str | None
    batch_id: str | None
    status: str
    updated_at: float


class BatchStore:
    """The batches this cache directory has submitted, one row per job key."""

    FILE_NAME = "llm_batches.sqlite"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._db = open_wal_database(self.path, _SCHEMA)

    def close(self) -> None:
        self._db.close()

    def get(self, key: str) -> BatchJob | None:
        row = self._db.execute(
            "SELECT job_key, model, requests, input_file_id, batch_id, status, updated_at"
            " FROM batch_jobs WHERE job_key = ?", (key,)).fetchone()
        return BatchJob(*row) if row else None

    def save(self, job: BatchJob) -> BatchJob:
        self._db.execute("INSERT OR REPLACE INTO batch_jobs VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (job.job_key, job.model, job.requests, job.input_file_id, job.batch_id,
                          job.status, time.time()))
        return job

    def all(self) -> list[BatchJob]:
        rows = self._db.execute(
            "SELECT job_key, model, requests, input_file_id, batch_id, status, updated_at"
            " FROM batch_jobs ORDER BY updated_at").fetchall()
        return [BatchJob(*row) for row in rows]


@dataclass(frozen=True)
class BatchOutcome:
    """What a batch gave one request: an answer, or why not. `running`: the batch had not
    ended when this run stopped waiting; it stays stored, so asking elsewhere would pay twice."""

    answer: RawAnswer | None
    error: str = ""
    batch_id: str | None = None
    running: bool = False


class BatchRunner:
    def __init__(self, config: LLMConfig):
        self.config = config
        self._store: BatchStore | None = None

    @property
    def store(self) -> BatchStore:
        if self._store is None:
            self._store = BatchStore(self.config.cache_dir / BatchStore.FILE_NAME)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    async def run(self, model: str, requests: dict[str, Request]) -> dict[str, BatchOutcome]:
        """Answers (or reasons) for `requests` (key -> request), all of one model."""
        settings = self.config.settings_for(model)
        key = job_key(model, list(requests))
        try:
            job = await self._submitted(model, key, requests, settings)
            batch = await self._wait(job, settings)
            return await self._results(job, batch, requests, settings)
        except _GaveUp as exc:
            return {k: BatchOutcome(None, str(exc), exc.batch_id, running=exc.running)
                    for k in requests}
        except Exception as exc:  # noqa: BLE001 - reported per request, like a failed call
            stored = self.store.get(key)
            # Submitted and not known to have ended: the provider may still answer it, so
            # the requests must not be paid for again elsewhere; a rerun polls it.
            running = bool(stored and stored.batch_id and stored.status not in UNFINISHED
                           and stored.status != "collected")
            error = (f"batch of {model} for {len(requests)} requests: "
                     f"{type(exc).__name__}: {exc}")
            if running:
                error += f" (batch {stored.batch_id} is stored, so a rerun collects it)"
            log.warning("%s", error)
            return {k: BatchOutcome(None, error, stored.batch_id if stored else None,
                                    running=running) for k in requests}

    # --- submission ----------------------------------------------------------------------

    async def _submitted(self, model: str, key: str, requests: dict[str, Request],
                         settings: ModelSettings) -> BatchJob:
        """The stored batch of this job if it can still answer, else a new one."""
        job = self.store.get(key)
        if job is not None and job.batch_id and job.status not in UNFINISHED:
            log.info("[batch %s] %s: collecting the batch submitted before for these %d "
                     "requests (status %s)", job.batch_id, model, len(requests), job.status)
            return job
        if job is not None and not job.batch_id:
            found = await self._find_on_provider(key, settings)
            if found is not None:
                log.info("[batch %s] %s: found the batch a killed job submitted for these %d "
                         "requests", found.id, model, len(requests))
                return self.store.save(BatchJob(key, model, len(requests), job.input_file_id,
                                                found.id, str(found.status), 0.0))
        return await self._submit(model, key, requests, settings)

    async def _submit(self, model: str, key: str, requests: dict[str, Request],
                      settings: ModelSettings) -> BatchJob:
        litellm = import_litellm()
        lines = [json.dumps({"custom_id": k, "method": "POST", "url": ENDPOINT,
                             "body": openai_body(r)}, ensure_ascii=False)
                 for k, r in requests.items()]
        data = ("\n".join(lines) + "\n").encode("utf-8")
        job = self.store.save(BatchJob(key, model, len(requests), None, None, "submitting", 0.0))
        uploaded = await self._retrying(settings, "upload", lambda: litellm.acreate_file(
            file=(f"rubriclab-{key[:16]}.jsonl", data), purpose="batch",
            custom_llm_provider=provider_of(model), **self._connection(settings)))
        job = self.store.save(BatchJob(key, model, len(requests), uploaded.id, None,
                                       "submitting", 0.0))
        batch = None
        for attempt in range(settings.num_retries + 1):
            try:
                batch = await litellm.acreate_batch(
                    completion_window=COMPLETION_WINDOW, endpoint=ENDPOINT,
                    input_file_id=uploaded.id, custom_llm_provider=provider_of(model),
                    metadata={METADATA_KEY: key}, **self._connection(settings))
                break
            except Exception as exc:  # noqa: BLE001 - classified, then retried or raised
                if not is_retryable(exc) or attempt == settings.num_retries:
                    raise
                # The provider may have created it before the connection failed: never twice.
                batch = await self._find_on_provider(key, settings)
                if batch is not None:
                    break
                await asyncio.sleep(_backoff(settings, attempt))
        job = self.store.save(BatchJob(key, model, len(requests), uploaded.id, batch.id,
                                       str(batch.status), 0.0))
        log.info("[batch %s] %s: submitted %d requests (%d bytes)", batch.id, model,
                 len(requests), len(data))
        return job

    async def _find_on_provider(self, key: str, settings: ModelSettings) -> Any | None:
        """A batch of this job among the provider's most recent ones (one page)."""
        litellm = import_litellm()
        page = await self._retrying(settings, "list", lambda: litellm.alist_batches(
            custom_llm_provider="openai", limit=100, **self._connection(settings)))
        for batch in getattr(page, "data", None) or []:
            metadata = getattr(batch, "metadata", None) or {}
            if metadata.get(METADATA_KEY) == key and str(batch.status) not in UNFINISHED:
                return batch
        return None

    # --- waiting and results -------------------------------------------------------------

    async def _wait(self, job: BatchJob, settings: ModelSettings) -> Any:
        litellm = import_litellm()
        started = time.monotonic()
        while True:
            batch = await self._retrying(settings, "poll", lambda: litellm.aretrieve_batch(
                batch_id=job.batch_id, custom_llm_provider=provider_of(job.model),
                **self._connection(settings)))
            status = str(batch.status)
            waited = time.monotonic() - started
            counts = getattr(batch, "request_counts", None)
            log.info("[batch %s] %s: %s, %s of %d requests done (%s failed), waited %.0fs",
                     job.batch_id, job.model, status, getattr(counts, "completed", "?"),
                     job.requests, getattr(counts, "failed", "?"), waited)
            if status != job.status:
                job = self.store.save(BatchJob(job.job_key, job.model, job.requests,
                                               job.input_file_id, job.batch_id, status, 0.0))
            if status == DONE or status in UNFINISHED:
                return batch
            if waited + settings.batch_poll_s > settings.batch_max_wait_s:
                raise _GaveUp(
                    f"batch {job.batch_id} of {job.model} still {status} after {waited:.0f}s "
                    f"(batch_max_wait_s {settings.batch_max_wait_s:g}); it is stored in "
                    f"{self.store.path}, so a rerun collects it without paying again",
                    job.batch_id, running=True)
            await asyncio.sleep(settings.batch_poll_s)

    async def _results(self, job: BatchJob, batch: Any, requests: dict[str, Request],
                       settings: ModelSettings) -> dict[str, BatchOutcome]:
        status = str(batch.status)
        outcomes: dict[str, BatchOutcome] = {}
        for file_id in (getattr(batch, "output_file_id", None),
                        getattr(batch, "error_file_id", None)):
            if not file_id:
                continue
            for line_no, line in enumerate((await self._file_text(file_id, settings))
                                           .splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    result = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ValueError(f"batch {job.batch_id}, file {file_id}, line {line_no}: "
                                     f"not JSON ({exc})") from exc
                key = result.get("custom_id")
                if key not in requests:
                    log.warning("[batch %s] result for unknown request %r ignored",
                                job.batch_id, key)
                    continue
                outcomes[key] = _outcome(job, result, settings)
        reason = _batch_errors(batch)
        missing = BatchOutcome(None, f"batch {job.batch_id} of {job.model} ended {status} "
                                     f"without an answer to this request{reason}", job.batch_id)
        if status in UNFINISHED or status == DONE:
            self.store.save(BatchJob(job.job_key, job.model, job.requests, job.input_file_id,
                                     job.batch_id, status if status in UNFINISHED else "collected",
                                     0.0))
        answered = sum(o.answer is not None for o in outcomes.values())
        log.info("[batch %s] %s: %s, %d of %d requests answered", job.batch_id, job.model,
                 status, answered, len(requests))
        return {k: outcomes.get(k, missing) for k in requests}

    async def _file_text(self, file_id: str, settings: ModelSettings) -> str:
        litellm = import_litellm()
        content = await self._retrying(settings, "download", lambda: litellm.afile_content(
            file_id=file_id, custom_llm_provider="openai", **self._connection(settings)))
        raw = getattr(content, "content", content)
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)

    # --- plumbing ------------------------------------------------------------------------

    def _connection(self, settings: ModelSettings) -> dict[str, Any]:
        connection: dict[str, Any] = {"timeout": settings.timeout_s, "max_retries": 0}
        if settings.api_base:
            connection["api_base"] = settings.api_base
        return connection

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


class _GaveUp(Exception):
    def __init__(self, message: str, batch_id: str | None, running: bool):
        super().__init__(message)
        self.batch_id = batch_id
        self.running = running


def _backoff(settings: ModelSettings, attempt: int) -> float:
    delay = min(settings.max_backoff_s, settings.backoff_s * 2**attempt)
    return delay * (0.5 + random.random() / 2)


def _batch_errors(batch: Any) -> str:
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict)
                                             else None) or []
    messages = [str(e.get("message") if isinstance(e, dict) else getattr(e, "message", e))
                for e in data]
    return f" ({'; '.join(messages[:3])})" if messages else ""


def _outcome(job: BatchJob, result: dict[str, Any], settings: ModelSettings) -> BatchOutcome:
    response = result.get("response") or {}
    error = result.get("error")
    body = response.get("body") or {}
    if error or response.get("status_code") != 200:
        detail = error or body.get("error") or body
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
        return BatchOutcome(None, f"batch {job.batch_id} of {job.model} answered this request "
                                  f"with an error (status {response.get('status_code')}): "
                                  f"{message}", job.batch_id)
    choice = (body.get("choices") or [{}])[0]
    usage = body.get("usage") or {}
    prompt_tokens = int(usage.get("prompt_tokens") or 0)
    completion_tokens = int(usage.get("completion_tokens") or 0)
    read, written = prompt_cache_tokens(usage)
    return BatchOutcome(RawAnswer(
        text=(choice.get("message") or {}).get("content") or "",
        prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        cost_usd=price(job.model, prompt_tokens, completion_tokens, batch=True,
                       cache_read_tokens=read, cache_write_tokens=written,
                       configured=settings.price),
        finish_reason=str(choice.get("finish_reason") or "stop"),
        cache_read_tokens=read, cache_write_tokens=written), batch_id=job.batch_id)


def openai_body(request: Request) -> dict[str, Any]:
    """The /v1/chat/completions body litellm would send for this request (an openai/ model),
    with the same parameter mapping (max_completion_tokens for reasoning models, ...)."""
    import_litellm()
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager, get_optional_params

    model = request.model.split("/", 1)[1]
    params: dict[str, Any] = {"max_tokens": request.budget}
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.reasoning_effort is not None:
        params["reasoning_effort"] = request.reasoning_effort
    if request.top_p is not None:
        params["top_p"] = request.top_p
    if request.stop:
        params["stop"] = list(request.stop)
    optional = get_optional_params(model=model, custom_llm_provider="openai", **params)
    config = ProviderConfigManager.get_provider_chat_config(model=model,
                                                            provider=LlmProviders.OPENAI)
    body = dict(config.transform_request(model=model, messages=request.message_dicts(),
                                         optional_params=optional, litellm_params={},
                                         headers={}))
    body.pop("stream", None)
    if not body.get("extra_body"):
        body.pop("extra_body", None)
    return body
