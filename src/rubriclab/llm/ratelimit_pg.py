"""The models' rate-limit schedule (`rubriclab.llm.ratelimit.RateLimiter`) in the PostgreSQL
cache database: one row per model (`rate_schedule`, created with the cache's tables in
`rubriclab.llm.pg_connection.SCHEMA`), shared by every process of the run on every host, so
that N hosts send no more than one limit's worth, not N. The algorithm is the SQLite store's
(`ratelimit.next_start`); a booking locks the model's row (an INSERT ... ON CONFLICT DO UPDATE
... RETURNING, which waits for another host's booking of that model to commit), runs it, and
writes the row back, in one short transaction.

**Clocks.** Hosts' clocks differ, so the schedule is kept in the database server's clock:
every booking reads it (`clock_timestamp()`, after the row's lock is held) with the row, runs
the algorithm in it, and hands the caller its start in the caller's own clock (less the
difference between the two clocks, measured at that statement). A host whose clock is ahead
or behind neither sends early (past the limit) nor waits for nothing. The difference is taken
as the server's time less this host's once the answer is in, so it is off by the statement's
latency at most, and in the safe direction: a start is handed out that much later.

**A lost server** is tried again for a few seconds only (`pg_connection.EVENT_LOOP_WAIT_S`, as
the run's bill: a booking runs on the client's event loop, where the answers of the calls in
flight are read): a booking, or a look at a model's pause, that cannot reach the server in
that time raises `RateLimitsUnreachable` (a `CacheUnreachable`), which stops the job:
no request goes out unbooked. What a finished call gives back or takes (`settle`) and a 429's
pause are not waited for: kept where the server cannot take them now, and sent before the
next booking, or at close (which waits the window; what still cannot be sent is named in a
warning). Connected at the first paid call, not when the client is made: a run served from the
cache does not connect.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from .cache_records import CacheUnavailable, CacheUnreachable
from .pg_connection import (EVENT_LOOP_WAIT_S, Connection, create_schema, psycopg_module,
                            server_name)
from .ratelimit import CELLS, LIMITS, RateLimiter, next_start
from .settings import CACHE_RECONNECT_S, shown_url

T = TypeVar("T")

log = logging.getLogger("rubriclab.llm")

_CELL_COLUMNS = ", ".join(CELLS[name] for name in LIMITS)
_NOW = "extract(epoch from clock_timestamp())::float8"
# The model's row, made where missing and locked (ON CONFLICT DO UPDATE waits for a booking
# under way elsewhere), with the server's clock read once the lock is held. A new row's cells
# at 0 are "long ago": the same start as cells at now.
_LOCK_ROW = (f"INSERT INTO rate_schedule (model, {_CELL_COLUMNS}, not_before)"
             " VALUES (%s, 0, 0, 0, 0, 0) ON CONFLICT (model) DO UPDATE SET model = EXCLUDED.model"
             f" RETURNING {_CELL_COLUMNS}, not_before, {_NOW}")
_WRITE_CELLS = ("UPDATE rate_schedule SET "
                + ", ".join(f"{CELLS[name]} = %s" for name in LIMITS) + " WHERE model = %s")
_SHIFT = ("UPDATE rate_schedule SET "
          + ", ".join(f"{CELLS[name]} = {CELLS[name]} + %s" for name in LIMITS)
          + " WHERE model = %s")
_PAUSE = (f"INSERT INTO rate_schedule (model, {_CELL_COLUMNS}, not_before)"
          f" VALUES (%s, 0, 0, 0, 0, {_NOW} + %s)"
          " ON CONFLICT (model) DO UPDATE"
          " SET not_before = GREATEST(rate_schedule.not_before, EXCLUDED.not_before)")
_NOT_BEFORE = f"SELECT (SELECT not_before FROM rate_schedule WHERE model = %s), {_NOW}"


class RateLimitsUnreachable(CacheUnreachable):
    """The shared rate limits' server stayed out of reach while a booking waited for it (or
    refused the booking): the job stops rather than send a request unbooked."""


class PostgresRateLimiter(RateLimiter):
    """The schedule of every model in the cache database at `url`."""

    def __init__(self, url: str, reconnect_s: float = CACHE_RECONNECT_S):
        self.url = url
        self.location = shown_url(url)
        self._conn = Connection(url, reconnect_s, setup=create_schema, connect_now=False)
        # What the server could not take yet: cells' shifts by model (they add up) and
        # pauses' ends by model, in this host's clock (the latest kept).
        self._shifts: dict[str, dict[str, float]] = {}
        self._pauses: dict[str, float] = {}
        self._warned = False

    def close(self) -> None:
        with self._conn.lock:
            if self._shifts or self._pauses:
                try:
                    self._conn.call(self._send_unsent, wait=True)
                except (CacheUnavailable, psycopg_module().Error) as exc:
                    log.warning("%s: the shared rate limits never got %d model(s)' settlements "
                                "and %d pause(s) of a 429 (the next bookings start that much "
                                "earlier): %s", self.location, len(self._shifts),
                                len(self._pauses), str(exc).strip())
                    self._shifts.clear()
                    self._pauses.clear()
            self._conn.close()

    def _book(self, model: str, limits: dict[str, float | None], amounts: dict[str, float],
              latest: float) -> float:
        def book() -> float:
            self._send_unsent()  # the booking sees every settlement and pause before it
            db = self._conn.connected
            with db.transaction():
                row = db.execute(_LOCK_ROW, (model,)).fetchone()
                offset = row[-1] - time.time()  # the server's clock less this host's
                at = dict(zip(LIMITS, row[:len(LIMITS)]))
                start = next_start(model, at, row[len(LIMITS)], limits, amounts, row[-1],
                                   latest + offset)
                db.execute(_WRITE_CELLS, (*(at[name] for name in LIMITS), model))
            return start - offset

        return self._waiting(book, f"book a request to {model!r}")

    def not_before(self, model: str) -> float:
        def read() -> float:
            self._send_unsent()
            until, now = self._conn.connected.execute(_NOT_BEFORE, (model,)).fetchone()
            return until - (now - time.time()) if until else 0.0

        return self._waiting(read, f"read the pause of {model!r}")

    def _shift(self, model: str, shifts: dict[str, float]) -> None:
        with self._conn.lock:
            kept = self._shifts.setdefault(model, {})
            for name, seconds in shifts.items():
                kept[name] = kept.get(name, 0.0) + seconds
            self._send_now()

    def _pause(self, model: str, seconds: float) -> None:
        with self._conn.lock:
            self._pauses[model] = max(self._pauses.get(model, 0.0), time.time() + seconds)
            self._send_now()

    def _send_unsent(self) -> None:
        """The settlements and pauses kept, as one transaction (inside `Connection.call`)."""
        if not (self._shifts or self._pauses):
            return
        db = self._conn.connected
        with db.transaction():
            for model, shifts in self._shifts.items():
                db.execute(_SHIFT, (*(shifts.get(name, 0.0) for name in LIMITS), model))
            for model, until in self._pauses.items():
                # the pause's end in this host's clock, as seconds from now on the server's
                db.execute(_PAUSE, (model, until - time.time()))
        self._shifts.clear()
        self._pauses.clear()

    def _send_now(self) -> None:
        """What is kept, sent now if the server takes it; else kept for the next booking."""
        try:
            self._conn.call(self._send_unsent, wait=False)
        except CacheUnavailable as exc:  # lost: sent before the next booking
            if not self._warned:
                self._warned = True
                log.warning("%s: could not write to the shared rate limits (kept, and sent "
                            "before the next booking): %s", self.location, exc)
        except psycopg_module().Error as exc:  # refused, not lost: asking again won't do
            log.error("%s: the database refused the rate limits' settlements (%s) and pauses "
                      "(%s), which are not recorded: %s", self.location, self._shifts,
                      self._pauses, str(exc).strip())
            self._shifts.clear()
            self._pauses.clear()

    def _waiting(self, operation: Callable[[], T], what: str) -> T:
        """`operation`, trying a lost server again for a few seconds (`EVENT_LOOP_WAIT_S`: it
        runs on the client's event loop); RateLimitsUnreachable, naming the server, where it
        stayed lost or refused."""
        try:
            return self._conn.call_within(operation, EVENT_LOOP_WAIT_S)
        except (CacheUnavailable, psycopg_module().Error) as exc:
            waited = min(self._conn.reconnect_s, EVENT_LOOP_WAIT_S)
            raise RateLimitsUnreachable(
                f"could not {what} in the shared rate limits in the cache database "
                f"{self.location} ({server_name(self.url)}) within {waited:g} s, so the job "
                f"stops rather than send a request outside its limits: {str(exc).strip()}; "
                "every answer paid for is cached: run again once the database is back"
                ) from None
