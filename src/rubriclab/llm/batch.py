"""Batch mode: a run's cache misses for a model sent to its provider's batch API.

Half the price of ordinary calls, answered within the provider's 24-hour window. Three
providers, each through its own module: OpenAI here and Gemini (`batch_gemini`) through
litellm's file and batch calls, Anthropic's Message Batches (`batch_anthropic`) through the
official anthropic SDK. Every batch is stored beside the cache (`llm_batches.sqlite` in the
cache directory) under a key over its model and request keys, before it is submitted and again
once the provider names it, so a killed or restarted job polls the batch it already paid for
instead of submitting another. A job killed between the provider creating the batch and the id
being stored finds it among the provider's recent batches: by the key in the batch's metadata
(OpenAI) or display name (Gemini); Anthropic's batches carry neither (see `batch_anthropic`).

A request a stored batch holds that has not ended is never sent again before that batch is
collected, whatever else the run asks: a rerun with other misses (a config edit, a neighbour
that answered some, a run that gave up waiting) collects each stored batch its misses overlap,
and only the misses no stored batch holds go into a new one; a rerun whose model is no longer
batched collects it too (`run(..., submit=False)`) and submits nothing. The answers such a batch
gives to requests the run no longer asks are kept in the store and serve them when a later run
does (batched or not); each is removed once it is served, or once the cache holds its request.
A batch the provider no longer knows (404 on its poll or on its results) is marked "gone" and
its requests follow `batch_fallback`.

Credentials follow the rule of ordinary calls (`backends.api_key_to_send`): an `api_base` that
is not the provider's own API never gets the environment's provider key, on any batch call
(the key `api_key_env` names, else the placeholder), nor does a server that needs no key
(`placeholder_api_key`); a batched model whose key is missing stops before the first call
(`BatchRunner.check_credentials`).

A result file is read line by line (`ResultLines`): a request answered by identical lines
takes the answer once; one answered by lines that differ takes none (no answer is cached, the
request follows `batch_fallback`, and every answer is on the bill, since the provider may have
billed each); lines without a request id, with one the batch did not hold, and requests a
completed batch gave no line are warnings naming the batch, counted on the job's last progress
line (`BatchOutcomes.unusable_lines`).

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
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypeVar

from .backends import (PROVIDER_KEY_VARIABLES, MissingAPIKey, RawAnswer, api_key_to_send,
                       is_retryable, prompt_cache_tokens)
from .budget import BudgetExceeded
from .cache import DiskSpaceLow, open_wal_database
from .litellm_import import import_litellm
from .pricing import price, provider_of
from .request import Request
from .settings import (BATCH_FALLBACKS, BATCH_PROVIDERS, BatchNotSupported, LLMConfig,
                       ModelSettings, check_batch_settings)

__all__ = ["BATCH_FALLBACKS", "BATCH_PROVIDERS", "BatchJob", "BatchNotSupported",
           "BatchOutcome", "BatchOutcomes", "BatchRunner", "BatchStore", "ProviderBatch",
           "ResultLines", "check_batch_settings", "job_key", "openai_body"]

log = logging.getLogger("rubriclab.llm.batch")

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
DONE = "completed"
# Ended without answering all; "gone": the provider no longer knows the batch (404); "lost":
# stored as being submitted by a job that was killed, and not found at the provider.
UNFINISHED = frozenset({"failed", "expired", "cancelled", "gone", "lost"})
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

# The request keys of each job, so that a rerun finds the jobs its requests were split into.
_REQUESTS_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_requests (
    job_key TEXT NOT NULL,
    request_key TEXT NOT NULL,
    PRIMARY KEY (job_key, request_key)
)
"""
# Answers a collected batch gave to requests the run that collected it did not ask (paid for,
# so kept): a later run that misses one of them takes it from here.
_ANSWERS_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_answers (
    request_key TEXT NOT NULL,
    model TEXT NOT NULL,
    job_key TEXT NOT NULL,
    batch_id TEXT,
    answer TEXT NOT NULL,
    PRIMARY KEY (request_key, model)
)
"""
# Of a provider's limit on one batch's input, what a batch here fills at most (the rest is room
# for what a row adds around its request body).
FILL = 0.8
# Uploading a batch's input, creating a batch of inline requests, downloading its results:
# hundreds of megabytes may take longer than one model call's timeout_s.
TRANSFER_TIMEOUT_S = 600.0

T = TypeVar("T")


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
        self._db.execute(_REQUESTS_SCHEMA)
        self._db.execute(_ANSWERS_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def get(self, key: str) -> BatchJob | None:
        row = self._db.execute(
            "SELECT job_key, model, requests, input_file_id, batch_id, status, updated_at"
            " FROM batch_jobs WHERE job_key = ?", (key,)).fetchone()
        return BatchJob(*row) if row else None

    def save(self, job: BatchJob) -> BatchJob:
        job = replace(job, updated_at=time.time())
        self._db.execute("INSERT OR REPLACE INTO batch_jobs VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (job.job_key, job.model, job.requests, job.input_file_id, job.batch_id,
                          job.status, job.updated_at))
        return job

    def all(self) -> list[BatchJob]:
        rows = self._db.execute(
            "SELECT job_key, model, requests, input_file_id, batch_id, status, updated_at"
            " FROM batch_jobs ORDER BY updated_at").fetchall()
        return [BatchJob(*row) for row in rows]

    def save_requests(self, key: str, request_keys: list[str]) -> None:
        self._db.execute("BEGIN")
        self._db.executemany("INSERT OR IGNORE INTO batch_requests VALUES (?, ?)",
                             [(key, k) for k in request_keys])
        self._db.execute("COMMIT")

    def requests_of(self, key: str) -> set[str]:
        return {k for (k,) in self._db.execute(
            "SELECT request_key FROM batch_requests WHERE job_key = ?", (key,))}

    def save_answers(self, job: BatchJob, answers: dict[str, RawAnswer]) -> None:
        self._db.execute("BEGIN")
        try:
            self._db.executemany(
                "INSERT OR REPLACE INTO batch_answers VALUES (?, ?, ?, ?, ?)",
                [(k, job.model, job.job_key, job.batch_id, json.dumps(asdict(answer)))
                 for k, answer in answers.items()])
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def kept_answers(self, model: str, keys: list[str]) -> dict[str, BatchOutcome]:
        """The kept answers of `keys`. They stay stored until `forget_answers` (once the
        caller has cached and billed them), so that a job killed in between loses none."""
        kept: dict[str, BatchOutcome] = {}
        if not self._has_answers(model):
            return kept  # the usual case
        for k in keys:
            row = self._db.execute("SELECT batch_id, answer FROM batch_answers WHERE"
                                   " request_key = ? AND model = ?", (k, model)).fetchone()
            if row is not None:
                kept[k] = BatchOutcome(RawAnswer(**json.loads(row[1])), batch_id=row[0])
        return kept

    def _has_answers(self, model: str | None = None) -> bool:
        where, args = (" WHERE model = ?", (model,)) if model is not None else ("", ())
        return self._db.execute(f"SELECT 1 FROM batch_answers{where} LIMIT 1",
                                args).fetchone() is not None

    def forget_answers(self, model: str, keys: list[str]) -> int:
        """Remove the kept answers of `keys` (served: cached and billed, or answered
        otherwise); how many there were. No write lock where none is kept."""
        if not keys or not self._has_answers(model):
            return 0
        self._db.execute("BEGIN IMMEDIATE")
        try:
            removed = sum(self._db.execute(
                "DELETE FROM batch_answers WHERE request_key = ? AND model = ?",
                (k, model)).rowcount for k in keys)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        return removed

    def clean_answers(self, cached: Callable[[str], bool]) -> int:
        """Remove every kept answer whose request the cache answers already (another job, an
        import, or a run killed after caching it and before forgetting it): none would be
        asked for again. How many were removed."""
        if not self._has_answers():
            return 0
        rows = self._db.execute("SELECT request_key, model FROM batch_answers").fetchall()
        done: dict[str, list[str]] = {}
        for key, model in rows:
            if cached(key):
                done.setdefault(model, []).append(key)
        return sum(self.forget_answers(model, keys) for model, keys in done.items())

    def kept_count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM batch_answers").fetchone()[0]

    def open_jobs(self, model: str) -> dict[str, set[str]]:
        """Request keys of this model's jobs that may still answer (submitting, or submitted
        and not known to have ended), by job key."""
        rows = self._db.execute(
            "SELECT r.job_key, r.request_key FROM batch_requests r JOIN batch_jobs j"
            " ON r.job_key = j.job_key WHERE j.model = ? AND j.status NOT IN"
            f" ({', '.join('?' * (len(UNFINISHED) + 1))})",
            (model, *sorted(UNFINISHED), "collected")).fetchall()
        jobs: dict[str, set[str]] = {}
        for job, request in rows:
            jobs.setdefault(job, set()).add(request)
        return jobs


def open_batch_store(config: LLMConfig) -> BatchStore:
    """The batch store beside the cache: on its PostgreSQL server, or a SQLite file."""
    if config.cache_url:
        from .batch_pg import PostgresBatchStore

        return PostgresBatchStore(config.cache_url, reconnect_s=config.cache_reconnect_s)
    return BatchStore(config.cache_dir / BatchStore.FILE_NAME)


@dataclass(frozen=True)
class BatchOutcome:
    """What a batch gave one request: an answer, or why not. `running`: the batch had not
    ended when this run stopped waiting; it stays stored, so asking elsewhere would pay twice."""

    answer: RawAnswer | None
    error: str = ""
    batch_id: str | None = None
    running: bool = False
    # Never submitted: its batch would have taken the run's bill past its budget.
    over_budget: bool = False
    # Never submitted: too little free disk space to store its answers (llm.min_free_disk_mb).
    disk_low: bool = False
    # Never in a batch, nor to be: the model is no longer batched and no stored batch holds
    # it, so it is asked as an ordinary call.
    unsent: bool = False
    # Answers the batch gave this request that cannot be used, each possibly billed: the
    # different answers of a request its result file answers more than once.
    spent: tuple[RawAnswer, ...] = ()


class BatchOutcomes(dict[str, BatchOutcome]):
    """`BatchRunner.run`'s outcomes by request key, with `unusable_lines`: how many result
    lines of its batches were of no use, by kind (`rubriclab.llm.progress.UNUSABLE_BATCH_LINES`,
    which `Progress` reports at the end of a job): requests answered more than
    once with different answers, lines without a request id, lines whose id the batch did not
    hold, and requests a completed batch gave no line."""

    def __init__(self, outcomes: dict[str, BatchOutcome] | None = None):
        super().__init__(outcomes or {})
        self.unusable_lines: Counter[str] = Counter()


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


# Called before a new batch is submitted, with its model, requests and messages: checks the
# free disk space (raising DiskSpaceLow to refuse it), books the batch's worst case on the
# run's bill (raising BudgetExceeded), journals its requests as sent, and returns what releases
# that booking once the batch's answers are read and billed one by one.
BeforeSubmit = Callable[[str, dict[str, Request], dict[str, list[dict[str, Any]]]],
                        Callable[[], None]]


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
    """One provider's batch calls (OpenAIBatchAPI, batch_gemini.GeminiBatchAPI,
    batch_anthropic.AnthropicBatchAPI). Each raises the provider's errors as they come."""

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


def api_for(model: str) -> BatchAPI:
    provider = provider_of(model)
    if provider == "openai":
        return OpenAIBatchAPI()
    if provider == "gemini":
        from .batch_gemini import GeminiBatchAPI

        return GeminiBatchAPI()
    if provider == "anthropic":
        from .batch_anthropic import AnthropicBatchAPI

        return AnthropicBatchAPI()
    raise BatchNotSupported(f"model {model!r}: no batch API for provider {provider!r}")


class BatchRunner:
    def __init__(self, config: LLMConfig, before_submit: BeforeSubmit | None = None):
        self.config = config
        self.before_submit = before_submit
        self._store: BatchStore | None = None

    @property
    def store(self) -> BatchStore:
        if self._store is None:
            self._store = open_batch_store(self.config)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    async def run(self, model: str, requests: dict[str, Request],
                  messages: dict[str, list[dict[str, Any]]] | None = None,
                  submit: bool = True) -> BatchOutcomes:
        """Answers (or reasons) for `requests` (key -> request), all of one model. `messages`:
        the messages to send for a key, where they differ from the request's own (prompt-cache
        marks); the key stays the request's.

        Requests a stored batch of an earlier run answered without being asked are served its
        answers (kept until the caller forgets them: `BatchStore.forget_answers`); those a
        stored batch that may still answer holds go to that batch (collected first, whichever
        other requests it holds); the others are split into new batches within the provider's
        limits (requests and bytes per batch). `submit` False (the model is no longer batched):
        stored batches are collected, and nothing is submitted; the requests none holds come
        back `unsent`, to be asked as ordinary calls. The outcomes count the result lines
        of the batches collected that were of no use (`BatchOutcomes.unusable_lines`)."""
        messages = messages or {}
        api = api_for(model)
        self.check_credentials(model)
        outcomes = BatchOutcomes(self.store.kept_answers(model, list(requests)))
        if outcomes:
            log.info("%s: %d requests answered by batches collected before", model,
                     len(outcomes))
        left = {k: r for k, r in requests.items() if k not in outcomes}
        groups = self._groups(api, model, left, messages)
        if not submit:
            for stored, group in groups:
                if stored is None:
                    outcomes.update({k: BatchOutcome(None, "held by no stored batch",
                                                     unsent=True) for k in group})
            groups = [(stored, group) for stored, group in groups if stored is not None]
            if groups:
                log.warning("%s: batch is off, but %d of its requests are held by %d batches "
                            "submitted before: collecting them first (polled for at most "
                            "batch_max_wait_s), so that none is paid for twice", model,
                            sum(len(g) for _, g in groups), len(groups))
        for part in await asyncio.gather(*(self._run_one(api, model, group, messages, stored,
                                                         submit)
                                           for stored, group in groups)):
            outcomes.update(part)
            if isinstance(part, BatchOutcomes):
                outcomes.unusable_lines.update(part.unusable_lines)
        return outcomes

    def stored_keys(self, model: str, keys: set[str]) -> set[str]:
        """Of `keys`, those a stored batch of the model may still answer or has answered
        (kept answers): without opening (or creating) the store where there is none."""
        if (provider_of(model) not in BATCH_PROVIDERS
                or (self._store is None
                    and not (self.config.cache_dir / BatchStore.FILE_NAME).exists())):
            return set()
        held: set[str] = set()
        for request_keys in self.store.open_jobs(model).values():
            held |= request_keys & keys
        return held | set(self.store.kept_answers(model, sorted(keys - held)))

    def check_credentials(self, model: str) -> None:
        """Raise MissingAPIKey, naming the variable, where a batched model's batch calls
        would have no key to send: before any call (`check_api_key: false` does not skip it,
        since every batch call sends the key itself)."""
        settings = self.config.settings_for(model)
        provider = provider_of(model)
        if api_key_to_send(provider, settings) is None:
            names = (f"{settings.api_key_env} (api_key_env)" if settings.api_key_env else
                     " or ".join(PROVIDER_KEY_VARIABLES.get(provider, ())) or "its key")
            raise MissingAPIKey(
                f"model {model!r} has batch: true, and its batch calls need the environment "
                f"variable {names}; set it before running (keys are read from the "
                "environment, never from config), or set placeholder_api_key: true for a "
                "server that needs no key")

    def _groups(self, api: BatchAPI, model: str, requests: dict[str, Request],
                messages: dict[str, list[dict[str, Any]]]
                ) -> list[tuple[str | None, dict[str, Request]]]:
        """(stored job key, requests) for each stored job that holds some of `requests`,
        then (None, requests) for each new batch of the rest."""
        left = dict(requests)
        groups: list[tuple[str | None, dict[str, Request]]] = []
        for stored, request_keys in self.store.open_jobs(model).items():
            held = sorted(request_keys & left.keys())
            if held:
                groups.append((stored, {k: left.pop(k) for k in held}))
        most = getattr(api, "MAX_REQUESTS", None) or len(left) or 1
        room = FILL * (getattr(api, "MAX_BYTES", None) or float("inf"))
        group: dict[str, Request] = {}
        size = 0
        for k, request in left.items():
            # The request's text, as JSON, stands for its row's size.
            chars = len(json.dumps(messages.get(k) or request.message_dicts())) + 512
            if group and (len(group) >= most or size + chars > room):
                groups.append((None, group))
                group, size = {}, 0
            group[k] = request
            size += chars
        if group:
            groups.append((None, group))
        return groups

    async def _run_one(self, api: BatchAPI, model: str, requests: dict[str, Request],
                       messages: dict[str, list[dict[str, Any]]], stored: str | None = None,
                       submit: bool = True) -> dict[str, BatchOutcome]:
        """`stored`: the key of the stored job that holds these requests (and maybe others);
        `submit` False: collect it, never submit one."""
        settings = self.config.settings_for(model)
        key = stored or job_key(model, list(requests))
        releases: list[Callable[[], None]] = []
        try:
            job = await self._submitted(api, model, key, requests, messages, settings, releases,
                                        submit)
            batch = await self._wait(api, job, settings)
            outcomes = await self._results(api, job, batch, requests, settings)
            for release in releases:  # each answer is on the bill now, at what it cost
                release()
            return outcomes
        except (BudgetExceeded, DiskSpaceLow) as exc:
            log.warning("batch of %s for %d requests not submitted: %s", model, len(requests),
                        exc)
            budget = isinstance(exc, BudgetExceeded)
            return {k: BatchOutcome(None, str(exc), over_budget=budget, disk_low=not budget)
                    for k in requests}
        except _GaveUp as exc:
            return {k: BatchOutcome(None, str(exc), exc.batch_id, running=exc.running)
                    for k in requests}
        except _NotSubmitted as exc:
            return {k: BatchOutcome(None, str(exc), unsent=True) for k in requests}
        except Exception as exc:  # noqa: BLE001 - reported per request, like a failed call
            row = self.store.get(key)
            if row is not None and row.status == "lost":  # submitted anew, on a key of its own
                row = self.store.get(job_key(model, list(requests)))
            # Submitted and not known to have ended: the provider may still answer it, so
            # the requests must not be paid for again elsewhere; a rerun polls it.
            running = bool(row and row.batch_id and row.status not in UNFINISHED
                           and row.status != "collected")
            error = (f"batch of {model} for {len(requests)} requests: "
                     f"{type(exc).__name__}: {exc}")
            if running:
                error += f" (batch {row.batch_id} is stored, so a rerun collects it)"
            elif settings.batch_fallback == "call":
                error += ("; its requests are asked as ordinary calls, at the full price "
                          "(batch_fallback: call)")
            log.warning("%s", error)
            return {k: BatchOutcome(None, error, row.batch_id if row else None,
                                    running=running) for k in requests}

    # --- submission ----------------------------------------------------------------------

    async def _submitted(self, api: BatchAPI, model: str, key: str,
                         requests: dict[str, Request], messages: dict[str, list[dict]],
                         settings: ModelSettings, releases: list[Callable[[], None]],
                         submit: bool = True) -> BatchJob:
        """The stored batch of this job if it can still answer (paid for already), else a new
        one, booked on the run's bill first (`before_submit`; its release goes to
        `releases`); `submit` False: _NotSubmitted instead of a new one."""
        job = self.store.get(key)
        if job is not None and job.batch_id and job.status not in UNFINISHED:
            log.info("[batch %s] %s: collecting the batch submitted before for %d of these "
                     "requests (of %d it holds; status %s)", job.batch_id, model,
                     len(requests), job.requests, job.status)
            return job
        if job is not None and not job.batch_id:
            found = await self._retrying(settings, "list", lambda: api.find(
                job, settings, self._taken(key)))
            if found is not None:
                log.info("[batch %s] %s: found the batch a killed job submitted for these %d "
                         "requests", found.id, model, len(requests))
                return self.store.save(BatchJob(key, model, job.requests, job.input_file_id,
                                                found.id, found.status, 0.0))
            if not submit or self.store.requests_of(key) != set(requests):
                # Never created (or not to be found): its requests this run asks go into a
                # batch of their own; the rest are free to be asked again.
                self.store.save(replace(job, status="lost"))
                key = job_key(model, list(requests))
        if not submit:
            raise _NotSubmitted(f"the batch stored for these requests of {model} was never "
                                "submitted (not found at the provider)")
        if self.before_submit is not None:
            releases.append(self.before_submit(model, requests, messages))
        return await self._submit(api, model, key, requests, messages, settings)

    def _taken(self, key: str) -> set[str]:
        """Batch ids other jobs of this store hold: never adopted as this job's."""
        return {j.batch_id for j in self.store.all() if j.batch_id and j.job_key != key}

    async def _submit(self, api: BatchAPI, model: str, key: str, requests: dict[str, Request],
                      messages: dict[str, list[dict]], settings: ModelSettings) -> BatchJob:
        bodies = {k: api.body(r, messages.get(k) or r.message_dicts())
                  for k, r in requests.items()}
        job = self.store.save(BatchJob(key, model, len(requests), None, None, "submitting", 0.0))
        self.store.save_requests(key, list(requests))
        file_id = await self._retrying(settings, "upload", lambda: api.upload(job, bodies,
                                                                              settings))
        job = self.store.save(BatchJob(key, model, len(requests), file_id, None, "submitting",
                                       0.0))
        batch = None
        for attempt in range(settings.num_retries + 1):
            try:
                batch = await api.create(job, bodies, settings)
                break
            except Exception as exc:  # noqa: BLE001 - classified, then retried or raised
                if not is_retryable(exc) or attempt == settings.num_retries:
                    raise
                # The provider may have created it before the connection failed: never twice.
                batch = await self._retrying(settings, "list", lambda: api.find(
                    job, settings, self._taken(key)))
                if batch is not None:
                    break
                await asyncio.sleep(_backoff(settings, attempt))
        job = self.store.save(BatchJob(key, model, len(requests), file_id, batch.id,
                                       batch.status, 0.0))
        log.info("[batch %s] %s: submitted %d requests", batch.id, model, len(requests))
        return job

    # --- waiting and results -------------------------------------------------------------

    async def _wait(self, api: BatchAPI, job: BatchJob, settings: ModelSettings
                    ) -> ProviderBatch:
        started = time.monotonic()
        while True:
            try:
                batch = await self._retrying(settings, "poll", lambda: api.retrieve(job,
                                                                                  settings))
            except Exception as exc:  # noqa: BLE001 - a batch the provider no longer knows
                if not is_not_found(exc):
                    raise
                log.warning("[batch %s] %s: the provider no longer knows this batch (%s); "
                            "marked gone, its requests follow batch_fallback (%s)",
                            job.batch_id, job.model, type(exc).__name__,
                            settings.batch_fallback)
                batch = ProviderBatch(job.batch_id or "", "gone",
                                      errors=f" (the provider answered 404: {exc})")
            waited = time.monotonic() - started
            log.info("[batch %s] %s: %s, %s of %d requests done (%s failed), waited %.0fs",
                     job.batch_id, job.model, batch.status, batch.completed, job.requests,
                     batch.failed, waited)
            if batch.status != job.status:
                job = self.store.save(BatchJob(job.job_key, job.model, job.requests,
                                               job.input_file_id, job.batch_id, batch.status,
                                               0.0))
            if batch.status == DONE or batch.status in UNFINISHED:
                return batch
            if waited + settings.batch_poll_s > settings.batch_max_wait_s:
                raise _GaveUp(
                    f"batch {job.batch_id} of {job.model} still {batch.status} after "
                    f"{waited:.0f}s (batch_max_wait_s {settings.batch_max_wait_s:g}); it is "
                    f"stored in {self.store.path}, so a rerun collects it without paying again",
                    job.batch_id, running=True)
            await asyncio.sleep(settings.batch_poll_s)

    async def _results(self, api: BatchAPI, job: BatchJob, batch: ProviderBatch,
                       requests: dict[str, Request], settings: ModelSettings
                       ) -> BatchOutcomes:
        status, errors = batch.status, batch.errors
        outcomes = BatchOutcomes()
        lines = ResultLines(job, "custom_id")
        if status != "gone":
            try:
                lines = await api.results(job, batch, settings, self._retrying)
            except Exception as exc:  # noqa: BLE001 - results the provider no longer has
                if not is_not_found(exc):
                    raise
                log.warning("[batch %s] %s: the provider no longer has this batch's results "
                            "(%s); marked gone, its requests follow batch_fallback (%s)",
                            job.batch_id, job.model, type(exc).__name__,
                            settings.batch_fallback)
                status, errors = "gone", f" (its results answered 404: {exc})"
        held = self.store.requests_of(job.job_key)
        unusable = outcomes.unusable_lines
        if lines.without_id:
            unusable["without_id"] += len(lines.without_id)
            log.warning("[batch %s] %s: %d result lines without a %s ignored (%s)",
                        job.batch_id, job.model, len(lines.without_id), lines.id_name,
                        _listed(lines.without_id))
        if lines.repeated:
            log.info("[batch %s] %s: %d result lines repeat an earlier line's result; each "
                     "taken once", job.batch_id, job.model, lines.repeated)
        results = dict(lines.outcomes)
        for key in lines.conflicting:
            results[key] = lines.refused(key)
            if key in held:
                unusable["conflicting"] += 1
                log.warning("[batch %s] %s: request %s: %s; %s", job.batch_id, job.model,
                            key, results[key].error,
                            f"it follows batch_fallback ({settings.batch_fallback})"
                            if key in requests else "nothing is kept for a later run")
        kept: dict[str, RawAnswer] = {}
        for key, outcome in results.items():
            if key in requests:
                outcomes[key] = outcome
            elif key in held and outcome.answer is not None:
                kept[key] = outcome.answer  # paid for: a later run that asks it takes it
            elif key not in held:
                unusable["unknown_id"] += 1
                log.warning("[batch %s] %s: result line(s) for request %r, which the batch "
                            "does not hold, ignored (%s)", job.batch_id, job.model, key,
                            ", ".join(lines.where.get(key, [])))
        if kept:
            self.store.save_answers(job, kept)
            log.info("[batch %s] %s: %d answers to requests this run does not ask kept in %s",
                     job.batch_id, job.model, len(kept), self.store.path)
        missing = BatchOutcome(None, f"batch {job.batch_id} of {job.model} ended {status} "
                                     f"without an answer to this request{errors}",
                               job.batch_id)
        unanswered = sorted(k for k in requests if k not in outcomes)
        if status == DONE and unanswered:
            # A completed batch gives every request a line: one without is the provider's
            # fault, not an ending that explains it.
            unusable["missing"] += len(unanswered)
            missing = replace(missing, error=f"batch {job.batch_id} of {job.model} completed "
                                             "without a result line for this request")
            log.warning("[batch %s] %s: completed without a result line for %d requests (%s); "
                        "they follow batch_fallback (%s)", job.batch_id, job.model,
                        len(unanswered), _listed(unanswered), settings.batch_fallback)
        self.store.save(BatchJob(job.job_key, job.model, job.requests, job.input_file_id,
                                 job.batch_id, status if status in UNFINISHED else "collected",
                                 0.0))
        answered = sum(o.answer is not None for o in outcomes.values())
        log.info("[batch %s] %s: %s, %d of %d requests answered", job.batch_id, job.model,
                 status, answered, len(requests))
        outcomes.update({k: missing for k in unanswered})
        return outcomes

    # --- plumbing ------------------------------------------------------------------------

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


class _NotSubmitted(Exception):
    """A new batch would be needed, and the run submits none (its model is not batched)."""


class _GaveUp(Exception):
    def __init__(self, message: str, batch_id: str | None, running: bool):
        super().__init__(message)
        self.batch_id = batch_id
        self.running = running


def is_not_found(exc: BaseException) -> bool:
    """A 404: litellm's and the SDKs' NotFoundError, or an HTTP error carrying the status."""
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status == 404 or "NotFoundError" in {c.__name__ for c in type(exc).__mro__}


def _backoff(settings: ModelSettings, attempt: int) -> float:
    delay = min(settings.max_backoff_s, settings.backoff_s * 2**attempt)
    return delay * (0.5 + random.random() / 2)


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


def _listed(items: list[str], most: int = 10) -> str:
    shown = ", ".join(items[:most])
    return shown + (f" and {len(items) - most} more" if len(items) > most else "")


# --- OpenAI ------------------------------------------------------------------------------

class OpenAIBatchAPI:
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
                text = await retrying(settings, "download", lambda: _litellm_file_text(
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


async def _litellm_file_text(provider: str, file_id: str, settings: ModelSettings) -> str:
    content = await import_litellm().afile_content(
        file_id=file_id, custom_llm_provider=provider,
        **litellm_connection(settings, provider, transfer=True))
    raw = getattr(content, "content", content)
    return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)


def _openai_batch(batch: Any) -> ProviderBatch:
    counts = getattr(batch, "request_counts", None)
    return ProviderBatch(str(batch.id), str(batch.status),
                         getattr(counts, "completed", "?"), getattr(counts, "failed", "?"),
                         _batch_errors(batch), batch)


def _batch_errors(batch: Any) -> str:
    errors = getattr(batch, "errors", None)
    data = getattr(errors, "data", None) or (errors.get("data") if isinstance(errors, dict)
                                             else None) or []
    messages = [str(e.get("message") if isinstance(e, dict) else getattr(e, "message", e))
                for e in data]
    return f" ({'; '.join(messages[:3])})" if messages else ""


def _openai_outcome(job: BatchJob, result: dict[str, Any], settings: ModelSettings
                    ) -> BatchOutcome:
    response = result.get("response") or {}
    error = result.get("error")
    body = response.get("body") or {}
    if error or response.get("status_code") != 200:
        detail = error or body.get("error") or body
        message = detail.get("message") if isinstance(detail, dict) else str(detail)
        return error_of(job, response.get("status_code"), message)
    choice = (body.get("choices") or [{}])[0]
    usage = body.get("usage") or {}
    return answer_of(job, (choice.get("message") or {}).get("content") or "",
                     int(usage.get("prompt_tokens") or 0),
                     int(usage.get("completion_tokens") or 0),
                     str(choice.get("finish_reason") or "stop"), usage, settings)


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


def openai_body(request: Request, messages: list[dict[str, Any]] | None = None
                ) -> dict[str, Any]:
    """The /v1/chat/completions body litellm would send for this request (an openai/ model),
    with the same parameter mapping (max_completion_tokens for reasoning models, ...)."""
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    model, optional = litellm_params(request, "openai")
    config = ProviderConfigManager.get_provider_chat_config(model=model,
                                                            provider=LlmProviders.OPENAI)
    body = dict(config.transform_request(model=model,
                                         messages=messages or request.message_dicts(),
                                         optional_params=optional, litellm_params={},
                                         headers={}))
    body.pop("stream", None)
    if not body.get("extra_body"):
        body.pop("extra_body", None)
    return body
