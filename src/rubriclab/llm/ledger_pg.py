"""A ledger's rows in the PostgreSQL cache database (`ledger_rows`), where the rows of every
host of a run meet: written as they are recorded (`LedgerRows`, beside the ledger file), and
read back (`read_ledger_rows`; the paid calls of some stages, `read_stage_attempts`). A lost server is waited for at close only
(`rubriclab.llm.pg_connection.Connection`)."""

from __future__ import annotations

import contextlib
import logging
import socket
from typing import Any

from .cache_records import CacheUnavailable
from .pg_connection import Connection, connect, create_schema, psycopg_module
from .settings import CACHE_RECONNECT_S, shown_url

log = logging.getLogger("rubriclab.llm")


class LedgerRows:
    """The rows of one ledger file, written to the `ledger_rows` table as they are recorded.
    Rows the server cannot take now (it was lost: a restart) are kept, in order, and sent with
    the next row, or at close, which waits up to `reconnect_s` for the server."""

    def __init__(self, url: str, ledger: str, reconnect_s: float = CACHE_RECONNECT_S):
        self.url, self.ledger = url, ledger
        self.location = shown_url(url)
        self.reconnect_s = reconnect_s
        self._conn: Connection | None = None
        self._unsent: list[tuple[str, str, bool, dict[str, Any]]] = []
        self._warned = False

    def add(self, row: dict[str, Any], attempt: bool) -> None:
        self._unsent.append((socket.gethostname(), self.ledger, attempt, row))
        self._send(wait=False)

    def _send(self, wait: bool) -> None:
        psycopg = psycopg_module()
        from psycopg.types.json import Jsonb

        rows = [(host, ledger, attempt, Jsonb(row)) for host, ledger, attempt, row in self._unsent]

        def insert() -> None:
            assert self._conn is not None  # made below, before it runs this
            db = self._conn.connected
            with db.transaction(), db.cursor() as cursor:
                cursor.executemany("INSERT INTO ledger_rows (host, ledger, attempt, row)"
                                   " VALUES (%s, %s, %s, %s)", rows)

        if self._conn is None:
            self._conn = Connection(self.url, self.reconnect_s, setup=create_schema,
                                    connect_now=False)
        try:
            self._conn.call(insert, wait=wait)
        except CacheUnavailable as exc:  # the server lost: kept for the next row or close
            if not self._warned:
                self._warned = True
                log.warning("%s: could not write ledger rows of %s (they are in the file; "
                            "sent once the server is back): %s", self.location, self.ledger, exc)
            return
        except psycopg.Error as exc:  # refused: the ledger file has them, the database not
            log.warning("%s: the database refused %d ledger row(s) of %s (they are in the "
                        "file): %s", self.location, len(rows), self.ledger, exc)
        self._unsent.clear()

    def close(self) -> None:
        if self._unsent:
            self._send(wait=True)
        if self._unsent:
            log.warning("%s: %d ledger row(s) of %s did not reach the database (they are in "
                        "the file)", self.location, len(self._unsent), self.ledger)
            self._unsent.clear()
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def read_ledger_rows(url: str, ledger: str | None = None) -> list[dict[str, Any]]:
    with contextlib.closing(connect(url, read_only=True)) as db:
        (table,) = db.execute("SELECT to_regclass('ledger_rows')").fetchone()
        if table is None:
            return []
        where, params = ("WHERE ledger = %s", (ledger,)) if ledger is not None else ("", ())
        rows = db.execute("SELECT host, ledger, attempt, written_at, row FROM ledger_rows "
                          f"{where} ORDER BY id", params).fetchall()
    return [{"host": h, "ledger": lg, "attempt": a, "written_at": w, "row": r}
            for h, lg, a, w, r in rows]


def _like_tail(name: str) -> str:
    """A LIKE pattern of every path that ends in /`name` (its wildcards taken literally)."""
    escaped = name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "%/" + escaped


def read_stage_attempts(url: str, stages: list[str]) -> list[dict[str, Any]]:
    """The rows of calls that reached a model (`attempt`) of the ledgers named by `stages`,
    oldest first: a row's ledger is a stage's name or ends in "/" + it (the same file in each
    job folder of another host, `rubriclab.llm.bill.stage_name`)."""
    if not stages:
        return []
    with contextlib.closing(connect(url, read_only=True)) as db:
        (table,) = db.execute("SELECT to_regclass('ledger_rows')").fetchone()
        if table is None:
            return []
        rows = db.execute("SELECT row FROM ledger_rows WHERE attempt AND (ledger = ANY(%s)"
                          " OR ledger LIKE ANY(%s)) ORDER BY id",
                          (stages, [_like_tail(s) for s in stages])).fetchall()
    return [row for (row,) in rows]
