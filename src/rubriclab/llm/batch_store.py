"""The batch store: the batches a cache has submitted, the request keys of each, and the
answers a collected batch gave to requests its run did not ask (paid for, so kept for a later
run). `BatchStoreBase` holds every method once, its statements written in SQLite's dialect with
`?` placeholders; a backend gives how a statement runs: `BatchStore` in a SQLite file beside
the cache (`llm_batches.sqlite`), `rubriclab.llm.batch_pg.PostgresBatchStore` in the
PostgreSQL cache database. `rubriclab.llm.storage.open_batch_store` picks one for a config."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import TypeVar

from .backends import RawAnswer
from .batch_records import UNFINISHED, BatchJob, BatchOutcome
from .sqlite_files import Transaction, open_wal_database

T = TypeVar("T")

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
_JOB_COLUMNS = "job_key, model, requests, input_file_id, batch_id, status, updated_at"
# Keys looked up or removed per statement (SQLite allows a few thousand parameters).
_KEYS_PER_STATEMENT = 500


class BatchStoreBase:
    """The batches submitted against one cache, one row per job key. A backend gives
    `location` (the store as named in messages), `close`, and how statements run: `_query`
    (the rows), `_execute` (the rows changed), `_execute_many` (one statement per row, in one
    transaction), `_in_transaction` (an operation's statements as one transaction) and
    `_among` (a condition that a column is one of some values)."""

    location: str

    def close(self) -> None:
        raise NotImplementedError

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        raise NotImplementedError

    def _execute(self, sql: str, params: tuple = ()) -> int:
        raise NotImplementedError

    def _execute_many(self, sql: str, rows: list[tuple]) -> None:
        raise NotImplementedError

    def _in_transaction(self, operation: Callable[[], T]) -> T:
        raise NotImplementedError

    def _among(self, column: str, values: list[str]) -> tuple[str, tuple]:
        raise NotImplementedError

    def get(self, key: str) -> BatchJob | None:
        rows = self._query(f"SELECT {_JOB_COLUMNS} FROM batch_jobs WHERE job_key = ?", (key,))
        return BatchJob(*rows[0]) if rows else None

    def save(self, job: BatchJob) -> BatchJob:
        job = replace(job, updated_at=time.time())
        self._execute(f"INSERT INTO batch_jobs ({_JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)"
                      " ON CONFLICT (job_key) DO UPDATE SET model = excluded.model,"
                      " requests = excluded.requests, input_file_id = excluded.input_file_id,"
                      " batch_id = excluded.batch_id, status = excluded.status,"
                      " updated_at = excluded.updated_at",
                      (job.job_key, job.model, job.requests, job.input_file_id, job.batch_id,
                       job.status, job.updated_at))
        return job

    def all(self) -> list[BatchJob]:
        return [BatchJob(*row) for row in self._query(
            f"SELECT {_JOB_COLUMNS} FROM batch_jobs ORDER BY updated_at")]

    def save_requests(self, key: str, request_keys: list[str]) -> None:
        self._execute_many("INSERT INTO batch_requests (job_key, request_key) VALUES (?, ?)"
                           " ON CONFLICT DO NOTHING", [(key, k) for k in request_keys])

    def requests_of(self, key: str) -> set[str]:
        return {k for (k,) in self._query(
            "SELECT request_key FROM batch_requests WHERE job_key = ?", (key,))}

    def save_answers(self, job: BatchJob, answers: dict[str, RawAnswer]) -> None:
        self._execute_many(
            "INSERT INTO batch_answers (request_key, model, job_key, batch_id, answer)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (request_key, model) DO UPDATE SET"
            " job_key = excluded.job_key, batch_id = excluded.batch_id,"
            " answer = excluded.answer",
            [(k, job.model, job.job_key, job.batch_id, json.dumps(asdict(answer)))
             for k, answer in answers.items()])

    def kept_answers(self, model: str, keys: list[str]) -> dict[str, BatchOutcome]:
        """The kept answers of `keys`. They stay stored until `forget_answers` (once the
        caller has cached and billed them), so that a job killed in between loses none; two
        hosts never serve one at once, since each request is claimed before it is looked up."""
        if not keys or not self._has_answers(model):
            return {}  # the usual case
        found: dict[str, tuple[str | None, str]] = {}
        for chunk in _chunks(keys):
            among, params = self._among("request_key", chunk)
            for key, batch_id, answer in self._query(
                    "SELECT request_key, batch_id, answer FROM batch_answers"
                    f" WHERE model = ? AND {among}", (model, *params)):
                found[key] = (batch_id, answer)
        return {k: BatchOutcome(RawAnswer(**json.loads(found[k][1])), batch_id=found[k][0])
                for k in keys if k in found}

    def _has_answers(self, model: str | None = None) -> bool:
        if model is None:
            return bool(self._query("SELECT 1 FROM batch_answers LIMIT 1"))
        return bool(self._query("SELECT 1 FROM batch_answers WHERE model = ? LIMIT 1",
                                (model,)))

    def forget_answers(self, model: str, keys: list[str]) -> int:
        """Remove the kept answers of `keys` (served: cached and billed, or answered
        otherwise); how many there were. No write lock where none is kept."""
        if not keys or not self._has_answers(model):
            return 0

        def forget() -> int:
            removed = 0
            for chunk in _chunks(keys):
                among, params = self._among("request_key", chunk)
                removed += self._execute(f"DELETE FROM batch_answers WHERE model = ? AND {among}",
                                         (model, *params))
            return removed

        return self._in_transaction(forget)

    def clean_answers(self, cached: Callable[[str], bool]) -> int:
        """Remove every kept answer whose request the cache answers already (another job, an
        import, or a run killed after caching it and before forgetting it): none would be
        asked for again. How many were removed."""
        if not self._has_answers():
            return 0
        done: dict[str, list[str]] = {}
        for key, model in self._query("SELECT request_key, model FROM batch_answers"):
            if cached(key):
                done.setdefault(model, []).append(key)
        return sum(self.forget_answers(model, keys) for model, keys in done.items())

    def kept_count(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM batch_answers")[0][0])

    def open_jobs(self, model: str) -> dict[str, set[str]]:
        """Request keys of this model's jobs that may still answer (submitting, or submitted
        and not known to have ended), by job key."""
        ended, params = self._among("j.status", [*sorted(UNFINISHED), "collected"])
        rows = self._query(
            "SELECT r.job_key, r.request_key FROM batch_requests r JOIN batch_jobs j"
            f" ON r.job_key = j.job_key WHERE j.model = ? AND NOT ({ended})", (model, *params))
        jobs: dict[str, set[str]] = {}
        for job, request in rows:
            jobs.setdefault(job, set()).add(request)
        return jobs


def _chunks(keys: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(keys), _KEYS_PER_STATEMENT):
        yield keys[start:start + _KEYS_PER_STATEMENT]


class BatchStore(BatchStoreBase):
    """The batch store in a SQLite file beside the cache (`FILE_NAME` in the cache folder)."""

    FILE_NAME = "llm_batches.sqlite"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.location = str(self.path)
        self._db = open_wal_database(self.path, _SCHEMA)
        self._db.execute(_REQUESTS_SCHEMA)
        self._db.execute(_ANSWERS_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._db.execute(sql, params).fetchall()

    def _execute(self, sql: str, params: tuple = ()) -> int:
        return self._db.execute(sql, params).rowcount

    def _execute_many(self, sql: str, rows: list[tuple]) -> None:
        with Transaction(self._db):
            self._db.executemany(sql, rows)

    def _in_transaction(self, operation: Callable[[], T]) -> T:
        with Transaction(self._db, immediate=True):
            return operation()

    def _among(self, column: str, values: list[str]) -> tuple[str, tuple]:
        return f"{column} IN ({', '.join('?' * len(values))})", tuple(values)
