"""The answer cache in a SQLite file (`SQLiteCache`): successful answers only, keyed by
`request.cache_key`, never expiring, in WAL mode so that several Snakemake jobs on one machine
can read and write at once (SQLite must not live on NFS). Its shared part (the answer journal,
export, import) is `rubriclab.llm.answer_store.AnswerStore`; `rubriclab.llm.storage.open_cache`
picks this backend or the PostgreSQL one (`rubriclab.llm.cache_pg`) for a config.

Beside the answers it keeps in-flight claims: the process about to pay for a request claims its
key for a lease it renews while it works; another process that needs the same answer waits for
it instead of paying again. A claim whose holder died (its process is gone, or its lease ran
out) is taken over. See docs/cache.md.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from rubriclab.processes import process_running
from . import journal as answer_journal
from .answer_store import AnswerStore
from .cache_records import BUSY_TIMEOUT_S, PUT_WAIT_S, CachedAnswer, Claim
from .request import CACHE_KEY_VERSION
from .sqlite_files import Transaction, open_wal_database

log = logging.getLogger("rubriclab.llm")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL,
    request_json TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
# Added after the first version: NULL in entries made before it (see `export_to`).
_FINGERPRINT_COLUMN = "model_fingerprint"
# The key version an entry was stored under (`request.CACHE_KEY_VERSION`); NULL in entries
# made before versions were recorded, which are version 1's when they have no fingerprint.
_KEY_VERSION_COLUMN = "key_version"
_LATER_COLUMNS = {_FINGERPRINT_COLUMN: "TEXT", _KEY_VERSION_COLUMN: "INTEGER"}
_CLAIMS = """
CREATE TABLE IF NOT EXISTS claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires_at REAL NOT NULL
)
"""
_COLUMNS = ("key, model, text, prompt_tokens, completion_tokens, cost_usd, request_json,"
            " created_at, model_fingerprint, key_version")


def _process_alive(host: str, pid: int) -> bool:
    if host != socket.gethostname():
        return True  # another machine's process: only its lease can tell
    return process_running(pid)


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """An existing cache opened for reading only (SQLite URI mode=ro): nothing is created,
    migrated or written, so a read-only file or folder can be read. In WAL mode SQLite reads
    through the -shm file, which a read-only folder without one cannot get; with no -wal file
    beside it, every row is in the database file itself, so it is then read as immutable."""
    uri = path.resolve().as_uri() + "?mode=ro"
    db = sqlite3.connect(uri, uri=True, timeout=120, isolation_level=None)
    try:
        db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.OperationalError as exc:
        db.close()
        if Path(str(path) + "-wal").exists():
            raise sqlite3.OperationalError(
                f"{path}: {exc} (its -wal file holds rows not yet in the database file, and "
                "the folder is not writable for the -shm file that reading them needs; open "
                "it once where it can be written)") from exc
        db = sqlite3.connect(uri + "&immutable=1", uri=True, isolation_level=None)
    columns = {row[1] for row in db.execute("PRAGMA table_info(answers)")}
    if not columns:
        db.close()
        raise sqlite3.DatabaseError(f"{path} is not a rubriclab cache (it has no answers table)")
    if _FINGERPRINT_COLUMN not in columns:
        # A cache from before fingerprints were recorded, read as if the column were NULL
        # (a temporary view shadows the table; the file is not changed).
        db.execute(f"CREATE TEMP VIEW answers AS SELECT *, NULL AS {_FINGERPRINT_COLUMN}"
                   " FROM main.answers")
    return db


class SQLiteCache(AnswerStore):
    def __init__(self, path: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout_s = busy_timeout_s
        self._db = open_wal_database(self.path, _SCHEMA, busy_timeout_s)
        self._db.execute(_CLAIMS)
        # The client's heartbeat thread renews claims on a connection of its own (a SQLite
        # connection serves only the thread that made it).
        self._renewals: sqlite3.Connection | None = None
        self._renewals_lock = threading.Lock()
        if not self._has_columns():
            # Immediate: two processes opening a new cache at once would otherwise both read
            # the columns, and the second to add one fails at once ("database is locked").
            with self._transaction(immediate=True):
                columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
                for column, kind in _LATER_COLUMNS.items():
                    if column not in columns:
                        self._db.execute(f"ALTER TABLE answers ADD COLUMN {column} {kind}")
        self._start_journal()

    def _has_columns(self) -> bool:
        """Whether the answers table has every later column (read only: no write lock)."""
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(answers)")}
        return set(_LATER_COLUMNS) <= columns

    @property
    def journal_dir(self) -> Path:
        return answer_journal.journal_dir(self.path)

    def _close_db(self) -> None:
        with self._renewals_lock:
            if self._renewals is not None:
                self._renewals.close()
                self._renewals = None
        self._db.close()

    def __enter__(self) -> SQLiteCache:
        return self

    def _transaction(self, immediate: bool = False) -> Transaction:
        return Transaction(self._db, immediate)

    def _fetch(self, key: str) -> CachedAnswer | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM answers WHERE key = ?", (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    def _stored_fingerprints(self) -> Iterator[tuple[str, str]]:
        yield from self._db.execute("SELECT DISTINCT model, model_fingerprint FROM answers"
                                    " WHERE model_fingerprint IS NOT NULL").fetchall()

    @contextlib.contextmanager
    def _all_answers(self) -> Iterator[Iterator[CachedAnswer]]:
        with self._transaction():
            yield (CachedAnswer(*row) for row in
                   self._db.execute(f"SELECT {_COLUMNS} FROM answers ORDER BY key"))

    @contextlib.contextmanager
    def _busy_timeout(self, seconds: float) -> Iterator[None]:
        if seconds == self.busy_timeout_s:
            yield
            return
        self._db.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")
        try:
            yield
        finally:
            self._db.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_s * 1000)}")

    def _insert(self, answer: CachedAnswer) -> None:
        # First writer wins: an entry, once written, never changes.
        self._db.execute(
            f"INSERT OR IGNORE INTO answers ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (answer.key, answer.model, answer.text, answer.prompt_tokens,
             answer.completion_tokens, answer.cost_usd, answer.request_json, answer.created_at,
             answer.model_fingerprint, answer.key_version),
        )

    def record_fingerprint(self, key: str, fingerprint: str) -> None:
        """Fill in the fingerprint of an entry stored before fingerprints were recorded (its key
        is then known to be the current key version's too)."""
        try:
            self._db.execute("UPDATE answers SET model_fingerprint = ?, key_version = ?"
                             " WHERE key = ? AND model_fingerprint IS NULL",
                             (fingerprint, CACHE_KEY_VERSION, key))
        except sqlite3.OperationalError as exc:  # recorded at a later hit
            log.info("%s: could not record the fingerprint of %s: %s", self.path, key, exc)

    def earlier_version_entry(self, key: str) -> CachedAnswer | None:
        """The entry stored under `key` if an earlier key version stored it (none recorded:
        it predates key versions and fingerprints)."""
        row = self._db.execute(f"SELECT {_COLUMNS} FROM answers WHERE key = ? AND"
                               " model_fingerprint IS NULL AND key_version IS NULL",
                               (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    # --- in-flight claims -------------------------------------------------------------------

    def claim(self, key: str, owner: str, lease_s: float, held_by_owner: bool = False) -> Claim:
        """Claim `key` for `owner` unless it is answered or a live holder has it.

        `held_by_owner`: another task of the same owner is answering it (wait for that one).
        """
        now = time.time()
        pending = self._pending.get(key)
        if pending is not None:
            return Claim(answer=pending)
        with self._transaction(immediate=True):
            answer = self.get(key)
            if answer is not None:
                return Claim(answer=answer)
            row = self._db.execute("SELECT owner, host, pid, expires_at FROM claims WHERE key = ?",
                                   (key,)).fetchone()
            if row is not None:
                holder, host, pid, expires_at = row
                live = expires_at > now and _process_alive(host, pid)
                if live and (holder != owner or held_by_owner):
                    return Claim(holder=f"process {pid} on {host}")
            self._db.execute("INSERT OR REPLACE INTO claims VALUES (?, ?, ?, ?, ?)",
                             (key, owner, socket.gethostname(), os.getpid(), now + lease_s))
        return Claim(claimed=True)

    def renew_claims(self, owner: str, lease_s: float) -> None:
        """Extend the leases of `owner`'s claims (from any thread)."""
        try:
            with self._renewals_lock:
                if self._renewals is None:
                    self._renewals = sqlite3.connect(
                        self.path, timeout=min(PUT_WAIT_S, self.busy_timeout_s),
                        isolation_level=None, check_same_thread=False)
                self._renewals.execute("UPDATE claims SET expires_at = ? WHERE owner = ?",
                                       (time.time() + lease_s, owner))
        except sqlite3.OperationalError as exc:  # renewed at the next beat, or the lease lapses
            log.warning("%s: could not renew this process's claims: %s", self.path, exc)

    def release(self, key: str, owner: str) -> None:
        try:
            with self._busy_timeout(min(PUT_WAIT_S, self.busy_timeout_s)):
                self._db.execute("DELETE FROM claims WHERE key = ? AND owner = ?", (key, owner))
        except sqlite3.OperationalError as exc:
            # Left to lapse: its answer (if any) is served before any claim is looked at.
            log.warning("%s: could not release the claim of %s: %s", self.path, key, exc)

    @classmethod
    def read_only(cls, path: str | Path) -> SQLiteCache:
        """The cache at `path` for reading (counts, get, export) without writing anything to
        it or beside it; FileNotFoundError when there is none."""
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no cache at {path}")
        cache = cls.__new__(cls)
        cache.path = path
        cache.location = str(path)
        cache.busy_timeout_s = BUSY_TIMEOUT_S
        cache._db = _connect_read_only(path)
        cache._renewals, cache._renewals_lock = None, threading.Lock()
        # no journal is taken over or written: what it holds is stored by the next writer
        cache._pending, cache._warned, cache._journal = {}, set(), None
        cache._read_only = True
        return cache

    # --- counts -----------------------------------------------------------------------------

    def counts_by_model(self) -> list[tuple[str, int]]:
        return self._db.execute(
            "SELECT model, COUNT(*) FROM answers GROUP BY model ORDER BY model"
        ).fetchall()

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]

    def models_without_fingerprint(self) -> list[str]:
        return [m for (m,) in self._db.execute(
            "SELECT DISTINCT model FROM answers WHERE model_fingerprint IS NULL ORDER BY model")]
