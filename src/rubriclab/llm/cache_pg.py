"""The call cache on a PostgreSQL server, for runs whose jobs are spread over several hosts.

`PostgresCache` is `SQLiteCache`'s interface (`rubriclab.llm.answer_store.AnswerStore`) on a
server named by a postgresql:// URL (`RUBRICLAB_CACHE`, `cache_dir` or `llm.cache_url`; see
`LLMConfig.from_dict`); `rubriclab.llm.storage.open_cache` picks it. What differs from SQLite,
and why:

- **Claims have leases and fencing tokens, not pid checks.** A process on another host cannot
  be seen, so a claim is live while its lease runs (renewed by the client's heartbeat every
  third of it) and is taken over only once the lease has run out. Every claim made or taken
  over gets a new token from one sequence (`claim_tokens`); a holder renews and releases only
  the claim carrying its token, so a holder whose lease lapsed (a paused or cut-off host) can
  neither revive nor release its successor's claim, and is told at its next renewal. Lease
  times are the server's clock (`clock_timestamp()`), so hosts' clocks need not agree.
- **An answer and its claim's release are one transaction**: no other process sees the key
  answered and still claimed, or released and not yet answered. The answer is accepted from
  whoever brings it, fenced-off holder included (answers are addressed by their key: first
  writer wins, a later one is ignored); the fence guards the claim only.
- **The answer journal stays on local disk** (`LLMConfig.local_dir`: a folder per host): it
  must survive the server being unreachable, and it is locked with flock and taken over by a
  later process of the same host. So is the rate-limit schedule (see docs/cache.md).

Errors of the server (unreachable, a refused write) are raised as `CacheUnavailable`, a
subclass of SQLite's `OperationalError`, so the client handles them as it handles a locked
SQLite file: a claim that fails fails its request before anything is paid; an answer the
server refuses stays journaled and served, and is stored at the next write.

A lost server is waited for, within `llm.cache_reconnect_s`: see `rubriclab.llm.pg_connection`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .answer_store import AnswerStore
from .cache_records import BUSY_TIMEOUT_S, CachedAnswer, CacheUnavailable, Claim
from .pg_connection import Connection, create_schema, psycopg_module
from .request import CACHE_KEY_VERSION
from .settings import CACHE_RECONNECT_S, shown_url

T = TypeVar("T")

log = logging.getLogger("rubriclab.llm")

_NOW = "extract(epoch from clock_timestamp())"
_COLUMNS = ("key, model, text, prompt_tokens, completion_tokens, cost_usd, request_json,"
            " created_at, model_fingerprint, key_version")


def database_id(url: str) -> str:
    """A short name of the database a URL reaches (credentials left out), for local folders
    kept per database (its answer journals)."""
    psycopg = psycopg_module()
    info = psycopg.conninfo.conninfo_to_dict(url)
    named = {k: v for k, v in info.items() if k not in ("password", "user", "passfile")}
    return hashlib.sha256(repr(sorted(named.items())).encode()).hexdigest()[:12]


def journal_dir(url: str, local_dir: Path) -> Path:
    """The folder of this host's answer journals of the cache at `url`."""
    return Path(local_dir) / f"llm_cache-{database_id(url)}.answers"


class PostgresCache(AnswerStore):
    """The cache in a PostgreSQL database (see the module docstring)."""

    # Its claims may wait out a lost server (`reconnect_s`): the client asks for them from a
    # thread, so that its calls in flight are answered meanwhile.
    claims_wait_for_server = True

    def __init__(self, url: str, local_dir: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S,
                 reconnect_s: float = CACHE_RECONNECT_S):
        psycopg = psycopg_module()
        self.url = url
        self.location = shown_url(url)
        self.busy_timeout_s = busy_timeout_s
        self._timeout_s = busy_timeout_s  # the lock timeout set now (see _busy_timeout)
        self._refusals = (psycopg.Error, CacheUnavailable)
        self._local_dir = Path(local_dir)
        # made now, as a SQLite cache's folder is: the free-space check before a paid call
        # looks at it, the journal of each answer is written there
        self._local_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # (key, owner) -> the fencing token of the claim this cache made for that owner.
        self._tokens: dict[tuple[str, str], int] = {}
        # Whether writes wait for a lost server (at close: nothing else is left to do).
        self._writes_wait = False
        self._conn = Connection(url, reconnect_s, setup=self._set_up, lock=self._lock)
        try:
            create_schema(self._db)
        except psycopg.Error as exc:
            self._conn.close()
            raise CacheUnavailable(f"{self.location}: cannot set up the cache tables: "
                                   f"{str(exc).strip()}") from None
        self._start_journal()

    @classmethod
    def read_only(cls, url: str) -> PostgresCache:
        """The cache at `url` for reading (counts, get, export) in read-only transactions,
        creating nothing; FileNotFoundError where the database holds no cache."""
        psycopg = psycopg_module()
        cache = cls.__new__(cls)
        cache.url, cache.location = url, shown_url(url)
        cache.busy_timeout_s = cache._timeout_s = BUSY_TIMEOUT_S
        cache._refusals = (psycopg.Error, CacheUnavailable)
        cache._lock = threading.RLock()
        cache._tokens = {}
        cache._writes_wait = False
        cache._conn = Connection(url, read_only=True, setup=cache._set_up, lock=cache._lock)
        (table,) = cache._db.execute("SELECT to_regclass('answers')").fetchone()
        if table is None:
            cache._conn.close()
            raise FileNotFoundError(f"no cache at {cache.location} (its database has no "
                                    "answers table)")
        cache._pending, cache._warned, cache._journal = {}, set(), None
        cache._read_only = True
        return cache

    @property
    def journal_dir(self) -> Path:
        return journal_dir(self.url, self._local_dir)

    @property
    def reconnect_s(self) -> float:
        return self._conn.reconnect_s

    @property
    def _db(self) -> Any:
        """The connection now (made again after a lost server): for statements of an
        operation run by `_call` or inside `_transaction`."""
        return self._conn.db

    def close(self) -> None:
        # The last write waits for a lost server (within llm.cache_reconnect_s): what it
        # cannot store stays in the journal for the next job.
        self._writes_wait = True
        super().close()

    def _close_db(self) -> None:
        # Claims still held end with their cache (a job that stops on an error frees its keys
        # now, not when their leases run out; only a killed one leaves them to lapse).
        if self._tokens and not self._read_only:
            try:
                self._run("DELETE FROM claims WHERE token = ANY(%s)",
                          (list(self._tokens.values()),), wait=False)
            except self._refusals as exc:
                log.warning("%s: claims left to lapse: %s", self.location, exc)
            self._tokens.clear()
        self._conn.close()

    def __enter__(self) -> PostgresCache:
        return self

    def _set_up(self, db: Any) -> None:
        """A new connection's settings: the lock timeout in force."""
        db.execute("SELECT set_config('lock_timeout', %s, false)",
                   (f"{max(1, int(self._timeout_s * 1000))}ms",))

    def _call(self, operation: Callable[[], T], wait: bool = True) -> T:
        """`operation` on the connection, asked again on a new one where the server was lost
        (`Connection.call`)."""
        return self._conn.call(operation, wait=wait)

    def _run(self, sql: str, params: Any = None, wait: bool = True) -> Any:
        """One statement; on its own, asked again on a new connection where the server was
        lost (waiting up to llm.cache_reconnect_s with `wait`); inside a transaction or an
        operation, part of it."""
        return self._call(lambda: self._db.execute(sql, params), wait=wait)

    @contextlib.contextmanager
    def _transaction(self, immediate: bool = False) -> Iterator[None]:
        with self._conn.held() as db, db.transaction():
            yield

    @contextlib.contextmanager
    def _busy_timeout(self, seconds: float) -> Iterator[None]:
        if seconds == self._timeout_s:
            yield
            return
        with self._lock:
            before, self._timeout_s = self._timeout_s, seconds
            try:
                self._set_timeout_now()
                yield
            finally:
                self._timeout_s = before
                self._set_timeout_now()

    def _set_timeout_now(self) -> None:
        """The lock timeout in force on the connection there is; a lost server is left to the
        statements that follow (a new connection gets it from `_set_up`)."""
        try:
            self._call(lambda: self._set_up(self._db), wait=False)
        except self._refusals:
            pass

    # --- answers ----------------------------------------------------------------------------

    def _fetch(self, key: str) -> CachedAnswer | None:
        row = self._run(f"SELECT {_COLUMNS} FROM answers WHERE key = %s", (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    def _insert(self, answer: CachedAnswer) -> None:
        # First writer wins: an entry, once written, never changes.
        self._run(
            f"INSERT INTO answers ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (key) DO NOTHING",
            (answer.key, answer.model, answer.text, answer.prompt_tokens,
             answer.completion_tokens, answer.cost_usd, answer.request_json, answer.created_at,
             answer.model_fingerprint, answer.key_version))

    def _store(self, answer: CachedAnswer) -> None:
        """The answer, and the release of the claims this cache holds on its key, in one
        transaction (not waiting for a lost server but at close: the answer is journaled)."""
        with self._lock:  # _tokens is read by the thread that renews the claims too
            held = {owner: token for (key, owner), token in self._tokens.items()
                    if key == answer.key}

            def store() -> None:
                with self._transaction():
                    self._insert(answer)
                    if held:
                        self._run("DELETE FROM claims WHERE key = %s AND token = ANY(%s)",
                                  (answer.key, list(held.values())))

            self._call(store, wait=self._writes_wait)
            for owner in held:
                self._tokens.pop((answer.key, owner), None)

    def _stored_fingerprints(self) -> Iterator[tuple[str, str]]:
        yield from self._run("SELECT DISTINCT model, model_fingerprint FROM answers"
                             " WHERE model_fingerprint IS NOT NULL").fetchall()

    @contextlib.contextmanager
    def _all_answers(self) -> Iterator[Iterator[CachedAnswer]]:
        with self._transaction():
            self._db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            cursor = self._db.cursor(name="rubriclab_export")
            cursor.itersize = 500
            cursor.execute(f"SELECT {_COLUMNS} FROM answers ORDER BY key")
            try:
                yield (CachedAnswer(*row) for row in cursor)
            finally:
                cursor.close()

    def record_fingerprint(self, key: str, fingerprint: str) -> None:
        """Fill in the fingerprint of an entry stored before fingerprints were recorded."""
        try:
            self._run("UPDATE answers SET model_fingerprint = %s, key_version = %s"
                      " WHERE key = %s AND model_fingerprint IS NULL",
                      (fingerprint, CACHE_KEY_VERSION, key), wait=False)
        except self._refusals as exc:  # recorded at a later hit
            log.info("%s: could not record the fingerprint of %s: %s", self.location, key, exc)

    def earlier_version_entry(self, key: str) -> CachedAnswer | None:
        """The entry stored under `key` if an earlier key version stored it."""
        row = self._run(f"SELECT {_COLUMNS} FROM answers WHERE key = %s AND"
                        " model_fingerprint IS NULL AND key_version IS NULL", (key,)).fetchone()
        return CachedAnswer(*row) if row else None

    # --- in-flight claims -------------------------------------------------------------------

    def claim(self, key: str, owner: str, lease_s: float, held_by_owner: bool = False) -> Claim:
        """Claim `key` for `owner` unless it is answered or another's lease on it still runs.

        `held_by_owner`: another task of the same owner is answering it (wait for that one).
        A claim whose lease ran out is taken over with a new fencing token. Where the server
        was lost, waits for it (up to llm.cache_reconnect_s; then `CacheUnreachable`); a claim
        the server refuses (a lock held past the busy timeout) is a `CacheUnavailable` at once.
        """
        pending = self._pending.get(key)
        if pending is not None:
            return Claim(answer=pending)
        psycopg = psycopg_module()
        try:
            found = self._call(lambda: self._claim_once(key, owner, lease_s, held_by_owner))
        except psycopg.Error as exc:
            raise CacheUnavailable(f"{self.location}: could not claim {key}: "
                                   f"{str(exc).strip()}") from None
        if isinstance(found, Claim):
            return found
        taken, holder, answered = found
        if answered is not None:
            return Claim(answer=answered)
        if taken is None:
            if holder is None:  # released between the two statements: ask again
                return Claim(holder="another process (its claim just ended)")
            host, pid, token = holder
            return Claim(holder=f"process {pid} on {host} (claim {token})")
        with self._lock:
            self._tokens[(key, owner)] = taken[0]
        return Claim(claimed=True, token=taken[0])

    def _claim_once(self, key: str, owner: str, lease_s: float, held_by_owner: bool
                    ) -> Claim | tuple[Any, Any, CachedAnswer | None]:
        """One try of `claim`: its answer, or (the token taken, the holder's row, an answer
        stored meanwhile); asked again whole where the server was lost."""
        psycopg = psycopg_module()
        answer = self._fetch(key)
        if answer is not None:
            return Claim(answer=answer)
        taken = holder = answered = None
        with self._transaction():
            taken = self._run(
                "INSERT INTO claims (key, owner, host, pid, token, expires_at) VALUES"
                f" (%(key)s, %(owner)s, %(host)s, %(pid)s, nextval('claim_tokens'),"
                f" {_NOW} + %(lease)s)"
                " ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner,"
                " host = EXCLUDED.host, pid = EXCLUDED.pid, token = EXCLUDED.token,"
                " expires_at = EXCLUDED.expires_at"
                f" WHERE claims.expires_at <= {_NOW}"
                " OR (claims.owner = EXCLUDED.owner AND NOT %(held)s)"
                " RETURNING token",
                {"key": key, "owner": owner, "host": socket.gethostname(),
                 "pid": os.getpid(), "lease": float(lease_s),
                 "held": held_by_owner}).fetchone()
            if taken is None:
                holder = self._run("SELECT host, pid, token FROM claims WHERE key = %s",
                                   (key,)).fetchone()
            else:
                # Answered since the look above (its claim released with it): not ours.
                answered = self._fetch(key)
                if answered is not None:
                    raise psycopg.Rollback()
        return taken, holder, answered

    def renew_claims(self, owner: str, lease_s: float) -> None:
        """Extend the leases of `owner`'s claims that still carry its tokens; a claim taken
        over meanwhile (its lease had run out) is not revived, and is dropped with a warning.

        Called from the client's heartbeat thread: the connection and _tokens are used under
        the cache's lock."""
        with self._lock:
            mine = {token: key for (key, o), token in self._tokens.items() if o == owner}
            if not mine:
                return
            try:
                with self._busy_timeout(min(5.0, self.busy_timeout_s)):
                    renewed = {token for (token,) in self._run(
                        f"UPDATE claims SET expires_at = {_NOW} + %s WHERE owner = %s"
                        " AND token = ANY(%s) RETURNING token",
                        (float(lease_s), owner, list(mine)), wait=False).fetchall()}
            except self._refusals as exc:  # renewed at the next beat, or the lease lapses
                log.warning("%s: could not renew this process's claims: %s", self.location,
                            exc)
                return
            lost = [(token, key) for token, key in mine.items()
                    if token not in renewed and self._tokens.get((key, owner)) == token]
            for token, key in lost:
                del self._tokens[(key, owner)]
        for token, key in lost:
            log.warning("%s: the claim of %s (token %d) was taken over after its lease ran "
                        "out; its answer, if this process gets it first, is still stored",
                        self.location, key, token)

    def release(self, key: str, owner: str) -> None:
        """Drop `owner`'s claim on `key`, only if it still carries the token this cache got."""
        with self._lock:
            token = self._tokens.pop((key, owner), None)
        if token is None:
            return  # released with its answer, taken over, or never this cache's
        try:
            with self._busy_timeout(min(5.0, self.busy_timeout_s)):
                self._run("DELETE FROM claims WHERE key = %s AND token = %s", (key, token),
                          wait=False)
        except self._refusals as exc:
            # Left to lapse: its answer (if any) is served before any claim is looked at.
            log.warning("%s: could not release the claim of %s: %s", self.location, key, exc)

    # --- counts -----------------------------------------------------------------------------

    def counts_by_model(self) -> list[tuple[str, int]]:
        return [(m, int(n)) for m, n in self._run(
            "SELECT model, COUNT(*) FROM answers GROUP BY model ORDER BY model").fetchall()]

    def __len__(self) -> int:
        return int(self._run("SELECT COUNT(*) FROM answers").fetchone()[0])

    def paid_requests(self) -> tuple[int, int]:
        """(requests that reached a model, distinct requests among them) over the ledger rows
        every host wrote here: equal when no request was paid for twice (as
        `ledger.calls_per_distinct_request` counts a run's ledgers)."""
        calls, distinct = self._run("SELECT COUNT(*), COUNT(DISTINCT row->>'key')"
                                    " FROM ledger_rows WHERE attempt").fetchone()
        return int(calls), int(distinct)

    def models_without_fingerprint(self) -> list[str]:
        return [m for (m,) in self._run(
            "SELECT DISTINCT model FROM answers WHERE model_fingerprint IS NULL ORDER BY model")]
