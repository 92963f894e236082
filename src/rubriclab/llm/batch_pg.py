"""The batch store (`rubriclab.llm.batch.BatchStore`) in the PostgreSQL cache database, so
that every host of a run sees the batches any of them submitted, and the answers a batch gave
to requests its run did not ask. Same methods, same meaning; the tables are created with the
cache's (`rubriclab.llm.cache_pg.SCHEMA`). A lost server is waited for as the cache waits for
it (`rubriclab.llm.cache_pg.Connection`: up to `reconnect_s`, then `CacheUnreachable`)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import asdict, replace
from collections.abc import Callable
from typing import Any

from .backends import RawAnswer
from .batch import UNFINISHED, BatchJob, BatchOutcome
from .cache_pg import Connection, create_schema
from .settings import CACHE_RECONNECT_S, shown_url

_JOB_COLUMNS = "job_key, model, requests, input_file_id, batch_id, status, updated_at"


class PostgresBatchStore:
    """The batches submitted against one cache database, one row per job key."""

    def __init__(self, url: str, reconnect_s: float = CACHE_RECONNECT_S):
        self.url = url
        self.location = shown_url(url)
        self._lock = threading.RLock()
        self._conn = Connection(url, reconnect_s, lock=self._lock)
        create_schema(self._conn.db)

    def close(self) -> None:
        self._conn.close()

    def _run(self, sql: str, params: Any = None) -> Any:
        return self._conn.call(lambda: self._conn.db.execute(sql, params))

    def _run_many(self, sql: str, rows: list[tuple]) -> None:
        """One statement for each row, in one transaction (asked again whole where the server
        was lost)."""
        def run() -> None:
            db = self._conn.db
            with db.transaction(), db.cursor() as cursor:
                cursor.executemany(sql, rows)

        self._conn.call(run)

    def get(self, key: str) -> BatchJob | None:
        row = self._run(f"SELECT {_JOB_COLUMNS} FROM batch_jobs WHERE job_key = %s",
                        (key,)).fetchone()
        return BatchJob(*row) if row else None

    def save(self, job: BatchJob) -> BatchJob:
        job = replace(job, updated_at=time.time())
        self._run(f"INSERT INTO batch_jobs ({_JOB_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s)"
                  " ON CONFLICT (job_key) DO UPDATE SET model = EXCLUDED.model,"
                  " requests = EXCLUDED.requests, input_file_id = EXCLUDED.input_file_id,"
                  " batch_id = EXCLUDED.batch_id, status = EXCLUDED.status,"
                  " updated_at = EXCLUDED.updated_at",
                  (job.job_key, job.model, job.requests, job.input_file_id, job.batch_id,
                   job.status, job.updated_at))
        return job

    def all(self) -> list[BatchJob]:
        rows = self._run(f"SELECT {_JOB_COLUMNS} FROM batch_jobs ORDER BY updated_at").fetchall()
        return [BatchJob(*row) for row in rows]

    def save_requests(self, key: str, request_keys: list[str]) -> None:
        self._run_many("INSERT INTO batch_requests VALUES (%s, %s) ON CONFLICT DO NOTHING",
                       [(key, k) for k in request_keys])

    def requests_of(self, key: str) -> set[str]:
        return {k for (k,) in self._run(
            "SELECT request_key FROM batch_requests WHERE job_key = %s", (key,)).fetchall()}

    def save_answers(self, job: BatchJob, answers: dict[str, RawAnswer]) -> None:
        self._run_many(
            "INSERT INTO batch_answers VALUES (%s, %s, %s, %s, %s)"
            " ON CONFLICT (request_key, model) DO UPDATE SET job_key = EXCLUDED.job_key,"
            " batch_id = EXCLUDED.batch_id, answer = EXCLUDED.answer",
            [(k, job.model, job.job_key, job.batch_id, json.dumps(asdict(answer)))
             for k, answer in answers.items()])

    def kept_answers(self, model: str, keys: list[str]) -> dict[str, BatchOutcome]:
        """The kept answers of `keys`. They stay stored until `forget_answers` (once the
        caller has cached and billed them), so that a job killed in between loses none; two
        hosts never serve one at once, since each request is claimed before it is looked up."""
        if not keys or not self._has_answers(model):
            return {}  # the usual case
        rows = self._run("SELECT request_key, batch_id, answer FROM batch_answers"
                         " WHERE model = %s AND request_key = ANY(%s)",
                         (model, list(keys))).fetchall()
        return {k: BatchOutcome(RawAnswer(**json.loads(answer)), batch_id=batch_id)
                for k, batch_id, answer in rows}

    def _has_answers(self, model: str | None = None) -> bool:
        if model is None:
            return self._run("SELECT 1 FROM batch_answers LIMIT 1").fetchone() is not None
        return self._run("SELECT 1 FROM batch_answers WHERE model = %s LIMIT 1",
                         (model,)).fetchone() is not None

    def forget_answers(self, model: str, keys: list[str]) -> int:
        """Remove the kept answers of `keys` (served: cached and billed, or answered
        otherwise); how many there were."""
        if not keys:
            return 0
        return self._run("DELETE FROM batch_answers WHERE model = %s AND request_key = ANY(%s)",
                         (model, list(keys))).rowcount

    def clean_answers(self, cached: Callable[[str], bool]) -> int:
        """Remove every kept answer whose request the cache answers already; how many."""
        if not self._has_answers():
            return 0
        done: dict[str, list[str]] = {}
        for key, model in self._run("SELECT request_key, model FROM batch_answers").fetchall():
            if cached(key):
                done.setdefault(model, []).append(key)
        return sum(self.forget_answers(model, keys) for model, keys in done.items())

    def kept_count(self) -> int:
        return self._run("SELECT COUNT(*) FROM batch_answers").fetchone()[0]

    def open_jobs(self, model: str) -> dict[str, set[str]]:
        """Request keys of this model's jobs that may still answer, by job key."""
        rows = self._run(
            "SELECT r.job_key, r.request_key FROM batch_requests r JOIN batch_jobs j"
            " ON r.job_key = j.job_key WHERE j.model = %s AND NOT (j.status = ANY(%s))",
            (model, [*sorted(UNFINISHED), "collected"])).fetchall()
        jobs: dict[str, set[str]] = {}
        for job, request in rows:
            jobs.setdefault(job, set()).add(request)
        return jobs
