"""The batch store (`rubriclab.llm.batch_store.BatchStoreBase`) in the PostgreSQL cache
database, so that every host of a run sees the batches any of them submitted, and the answers
a batch gave to requests its run did not ask. Same methods, same meaning, same statements (their
`?` placeholders become psycopg's `%s`); the tables are created with the cache's
(`rubriclab.llm.pg_connection.SCHEMA`). A lost server is waited for as the cache waits for it
(`rubriclab.llm.pg_connection.Connection`: up to `reconnect_s`, then `CacheUnreachable`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .batch_store import BatchStoreBase
from .pg_connection import Connection, create_schema
from .settings import CACHE_RECONNECT_S, shown_url

T = TypeVar("T")


class PostgresBatchStore(BatchStoreBase):
    """The batches submitted against one cache database, one row per job key."""

    def __init__(self, url: str, reconnect_s: float = CACHE_RECONNECT_S):
        self.url = url
        self.location = shown_url(url)
        self._lock = threading.RLock()
        self._conn = Connection(url, reconnect_s, lock=self._lock)
        create_schema(self._conn.db)

    def close(self) -> None:
        self._conn.close()

    def _run(self, sql: str, params: tuple) -> Any:
        """A statement on the connection now (inside `Connection.call`); its cursor."""
        return self._conn.connected.execute(sql.replace("?", "%s"), params)

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._conn.call(lambda: self._run(sql, params).fetchall())

    def _execute(self, sql: str, params: tuple = ()) -> int:
        return self._conn.call(lambda: self._run(sql, params).rowcount)

    def _execute_many(self, sql: str, rows: list[tuple]) -> None:
        """One statement for each row, in one transaction (asked again whole where the server
        was lost)."""
        def run() -> None:
            db = self._conn.connected
            with db.transaction(), db.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)

        self._conn.call(run)

    def _in_transaction(self, operation: Callable[[], T]) -> T:
        def run() -> T:
            with self._conn.connected.transaction():
                return operation()

        return self._conn.call(run)

    def _among(self, column: str, values: list[str]) -> tuple[str, tuple]:
        return f"{column} = ANY(?)", (list(values),)
