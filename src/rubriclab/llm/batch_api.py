"""The common base of the provider batch adapters (`rubriclab.llm.batch_openai`,
`batch_gemini`, `batch_anthropic`): the calls each one makes (`BatchAPI`), a provider's batch
as the runner sees it (`ProviderBatch`), a result file read line by line (`ResultLines`), and
the helpers they share: litellm's connection and parameter mapping, pricing an answer, reading
result lines. `rubriclab.llm.batch_providers` picks the adapter of a model.

A result file is read line by line (`ResultLines`): a request answered by identical lines
takes the answer once; one answered by lines that differ takes none (no answer is cached, the
request follows `batch_fallback`, and every answer is on the bill, since the provider may have
billed each).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from .backends import RawAnswer, api_key_to_send, prompt_cache_tokens
from .batch_records import BatchJob, BatchOutcome
from .litellm_import import import_litellm
from .pricing import price
from .request import Request
from .settings import ModelSettings

# Uploading a batch's input, creating a batch of inline requests, downloading its results:
# hundreds of megabytes may take longer than one model call's timeout_s.
TRANSFER_TIMEOUT_S = 600.0

T = TypeVar("T")


class ResultLines:
    """A batch's result lines, read one by one (`add`), by request key. A request answered by
    several lines with the same outcome takes it once; one answered by lines that differ takes
    none of them (`conflicting`): which would be the provider's answer cannot be told, and
    caching either could replace one answer with another. Lines with no request id are
    counted, by where they are (`without_id`)."""

    def __init__(self, job: BatchJob, id_name: str):
        self.job = job
        self.id_name = id_name  # what the provider calls a line's request id
        self.outcomes: dict[str, BatchOutcome] = {}
        self.conflicting: dict[str, list[BatchOutcome]] = {}
        self.where: dict[str, list[str]] = {}  # request key -> where its lines are
        self.repeated = 0  # lines that repeat an earlier line's outcome
        self.without_id: list[str] = []

    def __len__(self) -> int:
        return len(self.outcomes) + len(self.conflicting)

    def add(self, key: Any, outcome: Callable[[], BatchOutcome], where: str) -> None:
        """The line at `where` gave request `key` (its id as read) what `outcome` reads."""
        if not isinstance(key, str) or not key:
            self.without_id.append(where)
            return
        read = outcome()
        self.where.setdefault(key, []).append(where)
        seen = self.conflicting.get(key)
        if seen is None and key in self.outcomes:
            if self.outcomes[key] == read:
                self.repeated += 1
                return
            seen = self.conflicting[key] = [self.outcomes.pop(key)]
        if seen is None:
            self.outcomes[key] = read
        elif read in seen:
            self.repeated += 1
        else:
            seen.append(read)

    def refused(self, key: str) -> BatchOutcome:
        """What the batch gave a request with conflicting lines: no answer, and each of its
        different answers spent (the provider may have billed every one)."""
        seen = self.conflicting[key]
        answers = tuple(o.answer for o in seen if o.answer is not None)
        shown = "; ".join(repr(o.answer.text[:40]) if o.answer is not None else o.error[:80]
                          for o in seen)
        return BatchOutcome(None, f"batch {self.job.batch_id} of {self.job.model} gave this "
                                  f"request {len(seen)} different results ({shown}; "
                                  f"{', '.join(self.where[key])}): none is taken",
                            self.job.batch_id, spent=answers)


@dataclass(frozen=True)
class ProviderBatch:
    """A provider's batch as the runner sees it. `status`: DONE, one of UNFINISHED, or the
    provider's word for a batch still running; `handle`: what the provider returned."""

    id: str
    status: str
    completed: int | str = "?"
    failed: int | str = "?"
    errors: str = ""
    handle: Any = None


class BatchAPI(Protocol):
    """One provider's batch calls (batch_openai.OpenAIBatchAPI, batch_gemini.GeminiBatchAPI,
    batch_anthropic.AnthropicBatchAPI). Each raises the provider's errors as they come.
    `MAX_REQUESTS` and `MAX_BYTES`: the provider's limits on one batch (None: no limit)."""

    MAX_REQUESTS: int | None
    MAX_BYTES: int | None

    def body(self, request: Request, messages: list[dict[str, Any]]) -> dict[str, Any]: ...

    async def upload(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> str | None: ...

    async def create(self, job: BatchJob, bodies: dict[str, dict[str, Any]],
                     settings: ModelSettings) -> ProviderBatch: ...

    async def find(self, job: BatchJob, settings: ModelSettings,
                   taken: set[str]) -> ProviderBatch | None: ...

    async def retrieve(self, job: BatchJob, settings: ModelSettings) -> ProviderBatch: ...

    async def results(self, job: BatchJob, batch: ProviderBatch, settings: ModelSettings,
                      retrying: Retrying) -> ResultLines: ...


class Retrying(Protocol):
    async def __call__(self, settings: ModelSettings, what: str,
                       call: Callable[[], Awaitable[T]]) -> T: ...


def is_not_found(exc: BaseException) -> bool:
    """A 404: litellm's and the SDKs' NotFoundError, or an HTTP error carrying the status."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status == 404 or "NotFoundError" in {c.__name__ for c in type(exc).__mro__}


def transfer_timeout_s(settings: ModelSettings) -> float:
    return max(settings.timeout_s, TRANSFER_TIMEOUT_S)


def litellm_connection(settings: ModelSettings, provider: str, transfer: bool = False
                       ) -> dict[str, Any]:
    """The endpoint, key and timeout of one of litellm's file or batch calls. The key is
    always given (`api_key_to_send`), so litellm never falls back on the environment's for a
    server that needs none."""
    connection: dict[str, Any] = {"max_retries": 0, "timeout": transfer_timeout_s(settings)
                                  if transfer else settings.timeout_s}
    if settings.api_base:
        connection["api_base"] = settings.api_base
    key = api_key_to_send(provider, settings)
    if key is not None:
        connection["api_key"] = key
    return connection


def answer_of(job: BatchJob, text: str, prompt_tokens: int, completion_tokens: int,
              finish_reason: str, usage: Any, settings: ModelSettings) -> BatchOutcome:
    """A batch's answer to one request, priced as a batch request at the model's configured
    price or litellm's map (prompt-cache tokens at the batch cache rates where the usage
    reports them)."""
    read, written = prompt_cache_tokens(usage)
    return BatchOutcome(RawAnswer(
        text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
        cost_usd=price(job.model, prompt_tokens, completion_tokens, batch=True,
                       cache_read_tokens=read, cache_write_tokens=written,
                       configured=settings.price),
        finish_reason=finish_reason or "stop", cache_read_tokens=read,
        cache_write_tokens=written), batch_id=job.batch_id)


def error_of(job: BatchJob, status: Any, message: str) -> BatchOutcome:
    return BatchOutcome(None, f"batch {job.batch_id} of {job.model} answered this request "
                              f"with an error (status {status}): {message}", job.batch_id)


def parse_lines(job: BatchJob, where: str, text: str) -> list[tuple[str, Any]]:
    """Each line of a result file as read, with where it is ("file F line N")."""
    rows = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((f"{where} line {line_no}", json.loads(line)))
        except json.JSONDecodeError as exc:
            raise ValueError(f"batch {job.batch_id}, {where}, line {line_no}: not JSON "
                             f"({exc})") from exc
    return rows


def request_id(row: Any, name: str) -> Any:
    """A result line's request id (None where the line is no JSON object)."""
    return row.get(name) if isinstance(row, dict) else None


async def litellm_file_text(provider: str, file_id: str, settings: ModelSettings) -> str:
    content = await import_litellm().afile_content(
        file_id=file_id, custom_llm_provider=provider,
        **litellm_connection(settings, provider, transfer=True))
    raw = getattr(content, "content", content)
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


def batch_errors(batch: Any) -> str:
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict)
                                             else None) or []
    messages = [str(e.get("message") if isinstance(e, dict) else getattr(e, "message", e))
                for e in data]
    return f" ({'; '.join(messages[:3])})" if messages else ""


def litellm_params(request: Request, provider: str) -> tuple[str, dict[str, Any]]:
    """The model name and the optional parameters litellm maps a request's settings to for
    the provider, as an ordinary call (Backends._complete_with_litellm) passes them."""
    import_litellm()
    from litellm.utils import get_optional_params

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
    return model, dict(get_optional_params(model=model, custom_llm_provider=provider, **params))
