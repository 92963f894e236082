"""SQLite files that several processes of one machine read and write at once (WAL mode): how
one is opened, and an explicit transaction on an autocommit connection. Used by the SQLite
cache, batch store, rate limiter, spend record and embedding cache (SQLite must not live on
NFS)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

from .cache_records import BUSY_TIMEOUT_S


def open_wal_database(path: Path, schema: str, busy_timeout_s: float = BUSY_TIMEOUT_S,
                      **connect: Any) -> sqlite3.Connection:
    """A SQLite file in WAL mode, safe for several processes at once, with `schema` applied.

    Autocommit: every write is its own transaction, so a killed process loses no stored row.
    A write waits up to `busy_timeout_s` for another process's write lock.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None, **connect)
    _switch_to_wal(db, path)
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
    db.execute(schema)
    return db


class LazyWalFile:
    """A WAL SQLite file (`open_wal_database`) opened at its first use, not when the object is
    made: a run served from the cache never creates it. `_opened` runs once after the open
    (more schema, a first row)."""

    def __init__(self, path: str | Path, schema: str):
        self.path = Path(path)
        self.location = str(self.path)
        self._schema = schema
        self._db: sqlite3.Connection | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = open_wal_database(self.path, self._schema)
            self._opened(self._db)
        return self._db

    def _opened(self, db: sqlite3.Connection) -> None:
        pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def _switch_to_wal(db: sqlite3.Connection, path: Path, wait_s: float = 120.0) -> None:
    """Put a database in WAL mode. Switching a new file's journal mode takes an exclusive
    lock, and SQLite answers "database is locked" at once (its busy handler is not asked)
    while another process creates the same file, so the switch is retried, within a bound."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise sqlite3.OperationalError(f"{path}: {exc}") from exc
            time.sleep(0.05)


class Transaction:
    """BEGIN ... COMMIT on an autocommit connection; ROLLBACK if the block raises."""

    def __init__(self, db: sqlite3.Connection, immediate: bool = False):
        self.db = db
        self.immediate = immediate

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE" if self.immediate else "BEGIN")

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.db.execute("ROLLBACK" if exc_type is not None else "COMMIT")
