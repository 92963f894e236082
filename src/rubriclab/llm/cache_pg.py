"""The call cache on a PostgreSQL server, for runs whose jobs are spread over several hosts.

`PostgresCache` is `SQLiteCache`'s interface (`rubriclab.llm.cache.AnswerStore`) on a server
named by a postgresql:// URL (`RUBRICLAB_CACHE`, `cache_dir` or `llm.cache_url`; see
`LLMConfig.from_dict`); `open_cache` picks it. What differs from SQLite, and why:

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
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .cache import (BUSY_TIMEOUT_S, CachedAnswer, CacheUnavailable, Claim, AnswerStore,
                    CACHE_KEY_VERSION)
from .settings import shown_url

log = logging.getLogger("rubriclab.llm")

_NOW = "extract(epoch from clock_timestamp())"
_COLUMNS = ("key, model, text, prompt_tokens, completion_tokens, cost_usd, request_json,"
            " created_at, model_fingerprint, key_version")
# Every table of a rubriclab cache database: answers and claims, the batch store
# (rubriclab.llm.batch_pg) and the ledger's rows (rubriclab.llm.ledger). Created once, under an
# advisory lock (two processes creating one table at once would otherwise collide).
SCHEMA = [
    """CREATE TABLE IF NOT EXISTS answers (
        key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        text TEXT NOT NULL,
        prompt_tokens BIGINT NOT NULL,
        completion_tokens BIGINT NOT NULL,
        cost_usd DOUBLE PRECISION,
        request_json TEXT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL,
        model_fingerprint TEXT,
        key_version INTEGER)""",
    "CREATE SEQUENCE IF NOT EXISTS claim_tokens",
    """CREATE TABLE IF NOT EXISTS claims (
        key TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        token BIGINT NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS claims_owner ON claims (owner)",
    """CREATE TABLE IF NOT EXISTS batch_jobs (
        job_key TEXT PRIMARY KEY,
        model TEXT NOT NULL,
        requests INTEGER NOT NULL,
        input_file_id TEXT,
        batch_id TEXT,
        status TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS batch_requests (
        job_key TEXT NOT NULL,
        request_key TEXT NOT NULL,
        PRIMARY KEY (job_key, request_key))""",
    """CREATE TABLE IF NOT EXISTS batch_answers (
        request_key TEXT NOT NULL,
        model TEXT NOT NULL,
        job_key TEXT NOT NULL,
        batch_id TEXT,
        answer TEXT NOT NULL,
        PRIMARY KEY (request_key, model))""",
    """CREATE TABLE IF NOT EXISTS ledger_rows (
        id BIGSERIAL PRIMARY KEY,
        written_at DOUBLE PRECISION NOT NULL DEFAULT extract(epoch from clock_timestamp()),
        host TEXT NOT NULL,
        ledger TEXT NOT NULL,
        attempt BOOLEAN NOT NULL,
        row JSONB NOT NULL)""",
]
_SCHEMA_LOCK = 0x7275627269636C61  # pg_advisory_xact_lock key: "rubricla"
CONNECT_TIMEOUT_S = 10


def _psycopg():
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - a dependency of rubriclab
        raise CacheUnavailable("a postgresql:// cache needs psycopg (pip install "
                               "'psycopg[binary]')") from exc
    return psycopg


def connect(url: str, read_only: bool = False):
    """An autocommit connection to the cache database at `url`; CacheUnavailable naming the
    URL (without its password) when there is none."""
    psycopg = _psycopg()
    options = {"application_name": "rubriclab", "connect_timeout": CONNECT_TIMEOUT_S}
    if read_only:  # beside the URL's own options (a search_path, say)
        own = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
        options["options"] = f"{own} -c default_transaction_read_only=on".strip()
    try:
        return psycopg.connect(url, autocommit=True, **options)
    except psycopg.Error as exc:
        raise CacheUnavailable(f"cannot reach the cache database {shown_url(url)}: "
                               f"{str(exc).strip()}") from None


_TABLES = ("answers", "claims", "batch_jobs", "batch_requests", "batch_answers", "ledger_rows")


def create_schema(db: Any) -> None:
    """Every table of a rubriclab cache, where missing (idempotent, safe concurrently). Where
    they all exist, only looked at: no lock is taken (a cache opened while another process
    holds a table's lock does not wait for it)."""
    found = db.execute("SELECT " + ", ".join(f"to_regclass('{t}')" for t in _TABLES)).fetchone()
    if all(found):
        return
    with db.transaction():
        db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
        for statement in SCHEMA:
            db.execute(statement)


def database_id(url: str) -> str:
    """A short name of the database a URL reaches (credentials left out), for local folders
    kept per database (its answer journals)."""
    psycopg = _psycopg()
    info = psycopg.conninfo.conninfo_to_dict(url)
    named = {k: v for k, v in info.items() if k not in ("password", "user", "passfile")}
    return hashlib.sha256(repr(sorted(named.items())).encode()).hexdigest()[:12]


def journal_dir(url: str, local_dir: Path) -> Path:
    """The folder of this host's answer journals of the cache at `url`."""
    return Path(local_dir) / f"llm_cache-{database_id(url)}.answers"


class PostgresCache(AnswerStore):
    """The cache in a PostgreSQL database (see the module docstring)."""

    def __init__(self, url: str, local_dir: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S):
        psycopg = _psycopg()
        self.url = url
        self.location = shown_url(url)
        self.busy_timeout_s = busy_timeout_s
        self._refusals = (psycopg.Error, CacheUnavailable)
        self._local_dir = Path(local_dir)
        # made now, as a SQLite cache's folder is: the free-space check before a paid call
        # looks at it, the journal of each answer is written there
        self._local_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # (key, owner) -> the fencing token of the claim this cache made for that owner.
        self._tokens: dict[tuple[str, str], int] = {}
        self._db = connect(url)
        try:
            self._set_timeout(busy_timeout_s)
            create_schema(self._db)
        except psycopg.Error as exc:
            self._db.close()
            raise CacheUnavailable(f"{self.location}: cannot set up the cache tables: "
                                   f"{str(exc).strip()}") from None
        self._start_journal()

    @classmethod
    def read_only(cls, url: str) -> PostgresCache:
        """The cache at `url` for reading (counts, get, export) in read-only transactions,
        creating nothing; FileNotFoundError where the database holds no cache."""
        psycopg = _psycopg()
        cache = cls.__new__(cls)
        cache.url, cache.location = url, shown_url(url)
        cache.busy_timeout_s = BUSY_TIMEOUT_S
        cache._refusals = (psycopg.Error, CacheUnavailable)
        cache._lock = threading.RLock()
        cache._tokens = {}
        cache._db = connect(url, read_only=True)
        (table,) = cache._db.execute("SELECT to_regclass('answers')").fetchone()
        if table is None:
            cache._db.close()
            raise FileNotFoundError(f"no cache at {cache.location} (its database has no "
                                    "answers table)")
        cache._pending, cache._warned, cache._journal = {}, set(), None
        cache._read_only = True
        return cache

    @property
    def journal_dir(self) -> Path:
        return journal_dir(self.url, self._local_dir)

    def _close_db(self) -> None:
        # Claims still held end with their cache (a job that stops on an error frees its keys
        # now, not when their leases run out; only a killed one leaves them to lapse).
        if self._tokens and not self._read_only:
            try:
                self._run("DELETE FROM claims WHERE token = ANY(%s)", (list(self._tokens.values()),))
            except self._refusals as exc:
                log.warning("%s: claims left to lapse: %s", self.location, exc)
            self._tokens.clear()
        self._db.close()

    def __enter__(self) -> PostgresCache:
        return self

    def _ensure(self) -> None:
        """Reconnect once the connection broke (a restarted server, a cut network)."""
        if self._db.broken or self._db.closed:
            self._db = connect(self.url, read_only=self._read_only)
            self._set_timeout(self.busy_timeout_s)

    def _set_timeout(self, seconds: float) -> None:
        self._db.execute("SELECT set_config('lock_timeout', %s, false)",
                         (f"{max(1, int(seconds * 1000))}ms",))

    _depth = 0  # transactions open on this connection

    def _run(self, sql: str, params: Any = None) -> Any:
        """One statement; outside a transaction, asked once more on a new connection where
        the old one broke (a restarted server, a connection the server ended)."""
        with self._lock:
            self._ensure()
            try:
                return self._db.execute(sql, params)
            except _psycopg().OperationalError:
                if self._depth or not self._db.broken:
                    raise
                log.warning("%s: the connection to the cache database broke; reconnecting",
                            self.location)
                self._ensure()
                return self._db.execute(sql, params)

    @contextlib.contextmanager
    def _transaction(self, immediate: bool = False) -> Iterator[None]:
        with self._lock:
            self._ensure()
            self._depth += 1
            try:
                with self._db.transaction():
                    yield
            finally:
                self._depth -= 1

    @contextlib.contextmanager
    def _busy_timeout(self, seconds: float) -> Iterator[None]:
        if seconds == self.busy_timeout_s:
            yield
            return
        with self._lock:
            self._ensure()
            self._set_timeout(seconds)
            try:
                yield
            finally:
                if not self._db.broken:
                    self._set_timeout(self.busy_timeout_s)

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
        transaction."""
        with self._lock:  # _tokens is read by the thread that renews the claims too
            held = {owner: token for (key, owner), token in self._tokens.items()
                    if key == answer.key}
            with self._transaction():
                self._insert(answer)
                if held:
                    self._run("DELETE FROM claims WHERE key = %s AND token = ANY(%s)",
                              (answer.key, list(held.values())))
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
                      (fingerprint, CACHE_KEY_VERSION, key))
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
        A claim whose lease ran out is taken over with a new fencing token.
        """
        pending = self._pending.get(key)
        if pending is not None:
            return Claim(answer=pending)
        psycopg = _psycopg()
        try:
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
        except psycopg.Error as exc:
            raise CacheUnavailable(f"{self.location}: could not claim {key}: "
                                   f"{str(exc).strip()}") from None
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
                        (float(lease_s), owner, list(mine))).fetchall()}
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
                self._run("DELETE FROM claims WHERE key = %s AND token = %s", (key, token))
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


class LedgerRows:
    """The rows of one ledger file, written to the `ledger_rows` table as they are recorded."""

    def __init__(self, url: str, ledger: str):
        self.url, self.ledger = url, ledger
        self.location = shown_url(url)
        self._db = None
        self._warned = False

    def add(self, row: dict[str, Any], attempt: bool) -> None:
        psycopg = _psycopg()
        from psycopg.types.json import Jsonb

        try:
            if self._db is None or self._db.broken or self._db.closed:
                self._db = connect(self.url)
                create_schema(self._db)
            self._db.execute("INSERT INTO ledger_rows (host, ledger, attempt, row)"
                             " VALUES (%s, %s, %s, %s)",
                             (socket.gethostname(), self.ledger, attempt, Jsonb(row)))
        except (psycopg.Error, CacheUnavailable) as exc:
            if not self._warned:  # the ledger file has the row; the database misses it
                self._warned = True
                log.warning("%s: could not write ledger rows of %s (they are in the file): "
                            "%s", self.location, self.ledger, exc)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


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
