"""The run's bill (`rubriclab.llm.budget.SpendRecordBase`) in the PostgreSQL cache database: one
row per run (`run_bills`, keyed by the run's name), so that every job of the run, on every
host, books against one bill. Same methods, same statements as the SQLite spend record (their
`?` placeholders become psycopg's `%s`); a reservation reads the row with FOR UPDATE inside its
transaction, so two hosts never both pass the budget. The table is created with the cache's
(`rubriclab.llm.pg_connection.SCHEMA`).

**A lost server.** A reservation waits for it only briefly (`EVENT_LOOP_WAIT_S`: it runs on the
client's event loop, where the answers of the calls in flight are read): where the server
cannot be reached by then, or refuses, it raises `BillUnreachable` (a `BudgetExceeded`), naming
the server, so that no paid call goes out unbooked and the job stops as at its budget, its
calls in flight answered and cached. What a finished call changes on the bill (`settle`,
`release`, `add`) is kept, in order, where the server cannot take it now, and sent before the
next booking or change, or at close, which waits up to `reconnect_s` for the server; what still
cannot be sent then is named in a warning (a settlement left unsent keeps its call's worst case
on the bill: the bill errs high, as it does for a killed job's calls in flight)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from .budget import BillUnreachable, SpendRecordBase
from .cache_records import CacheUnavailable
from .pg_connection import (EVENT_LOOP_WAIT_S, Connection, create_schema, psycopg_module,
                            server_name)
from .settings import CACHE_RECONNECT_S, shown_url

T = TypeVar("T")

log = logging.getLogger("rubriclab.llm")

def _dialect(sql: str) -> str:
    """A statement of `SpendRecordBase` (SQLite's `?` placeholders) as psycopg takes it."""
    return sql.replace("?", "%s")


def run_label(run: str) -> str:
    """A run's name as messages give it ("" is the unnamed run)."""
    return f"run {run!r}" if run else "the unnamed run"


class PostgresSpendRecord(SpendRecordBase):
    """The bill of the run named `run` (None or "": the unnamed run) in the cache database at
    `url`. Connected at its first use, not when the client is made (a run served from the cache
    never reads it)."""

    _TABLE = "run_bills"
    _KEY = "run"
    _LOCK_ROW = " FOR UPDATE"

    def __init__(self, url: str, run: str | None, reconnect_s: float = CACHE_RECONNECT_S):
        self.url = url
        self.run = self._row = run or ""
        self.location = f"{shown_url(url)} ({run_label(self.run)})"
        self._conn = Connection(url, reconnect_s, setup=self._setup, connect_now=False)
        self._unsent: list[tuple[str, tuple]] = []  # changes the server could not take yet
        self._warned = False

    def _setup(self, db: Any) -> None:
        create_schema(db)
        sql, params = self._new_row()
        db.execute(_dialect(sql), params)

    def close(self) -> None:
        with self._conn.lock:
            if self._unsent:
                try:
                    self._conn.call(self._send_unsent, wait=True)
                except (CacheUnavailable, psycopg_module().Error) as exc:
                    log.warning("%s: %d change(s) to the run's bill were never recorded (a "
                                "settlement left out keeps its call's worst case on the bill; "
                                "a batch answer's cost left out is missing from it): %s",
                                self.location, len(self._unsent), exc)
                    self._unsent.clear()
            self._conn.close()

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self._conn.call(lambda: self._conn.connected.execute(_dialect(sql), params).fetchall())

    def _send_unsent(self) -> None:
        """The changes kept, in order, as one transaction (inside `Connection.call`)."""
        if not self._unsent:
            return
        db = self._conn.connected
        with db.transaction():
            for sql, params in self._unsent:
                db.execute(_dialect(sql), params)
        self._unsent.clear()

    def _write(self, sql: str, params: tuple) -> None:
        """Sent now with any kept before it, or kept (the server lost) for the next write."""
        with self._conn.lock:
            self._unsent.append((sql, params))
            try:
                self._conn.call(self._send_unsent, wait=False)
            except CacheUnavailable as exc:
                if not self._warned:
                    self._warned = True
                    log.warning("%s: could not write to the run's bill (kept, and sent once "
                                "the server is back): %s", self.location, exc)
            except psycopg_module().Error as exc:  # refused, not lost: asking again won't do
                log.error("%s: the database refused %d change(s) to the run's bill, which "
                          "are not recorded: %s (%s)", self.location, len(self._unsent),
                          str(exc).strip(), self._unsent)
                self._unsent.clear()

    def _booking(self, operation: Callable[[], T]) -> T:
        def book() -> T:
            self._send_unsent()  # what is booked is read with every change before it
            with self._conn.connected.transaction():
                return operation()

        try:
            return self._conn.call_within(book, EVENT_LOOP_WAIT_S)
        except CacheUnavailable as exc:
            waited = min(self._conn.reconnect_s, EVENT_LOOP_WAIT_S)
            raise self._unbooked(f"could not be booked within {waited:g} s: "
                                 f"{str(exc).strip()}") from None
        except psycopg_module().Error as exc:
            raise self._unbooked(
                f"in the cache database {shown_url(self.url)} ({server_name(self.url)}) "
                f"was refused: {str(exc).strip()}") from None

    def _unbooked(self, why: str) -> BillUnreachable:
        return BillUnreachable(
            f"the bill of {run_label(self.run)} {why}; so no paid call goes out unbooked and "
            "the run stops before it; every answer paid for is cached: run again once the "
            "database is back")
