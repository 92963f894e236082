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

**A lost server is waited for** (a restart, a failover, a cut network): `Connection` makes the
connection again with backoff (`Outage`) for up to `llm.cache_reconnect_s` (60 s) from the
moment the server was lost. Claims and reads wait that long, then raise `CacheUnreachable` (a
`CacheUnavailable` naming the server), which stops the job rather than failing each request;
writes of journaled answers and ledger rows do not wait (they are kept and sent at the next
write, or at close, which waits the window). The first connection, when a cache is opened, is
not waited for: a job that starts while the server is down stops at once, having paid nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .cache import (BUSY_TIMEOUT_S, CachedAnswer, CacheUnavailable, CacheUnreachable, Claim,
                    AnswerStore, CACHE_KEY_VERSION)
from .settings import CACHE_RECONNECT_S, shown_url

T = TypeVar("T")

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


def connect(url: str, read_only: bool = False,
            failed: type[CacheUnavailable] = CacheUnavailable):
    """An autocommit connection to the cache database at `url`; CacheUnavailable (`failed`)
    naming the URL (without its password) when there is none."""
    psycopg = _psycopg()
    options = {"application_name": "rubriclab", "connect_timeout": CONNECT_TIMEOUT_S}
    if read_only:  # beside the URL's own options (a search_path, say)
        own = psycopg.conninfo.conninfo_to_dict(url).get("options") or ""
        options["options"] = f"{own} -c default_transaction_read_only=on".strip()
    try:
        return psycopg.connect(url, autocommit=True, **options)
    except psycopg.Error as exc:
        raise failed(f"cannot reach the cache database {shown_url(url)}: "
                     f"{str(exc).strip()}") from None


def server_name(url: str) -> str:
    """The server a cache URL reaches, as named in errors: host and port, or the socket
    folder; never its credentials."""
    info = _psycopg().conninfo.conninfo_to_dict(url)
    host = info.get("host") or info.get("hostaddr") or ""
    port = info.get("port") or "5432"
    if not host or host.startswith("/") or host.startswith("@"):
        folder = host or "the default socket folder"
        return f"the server on the socket in {folder} (port {port})"
    return f"the server at {host}:{port}"


# SQLSTATEs of a connection that is gone: class 08 (connection exception), and the server
# ending its sessions: admin_shutdown, crash_shutdown, cannot_connect_now (starting up).
_GONE_STATES = ("57P01", "57P02", "57P03")


def connection_lost(exc: BaseException, db: Any = None) -> bool:
    """Whether `exc` says the server is gone (a restart, a cut network, a connection it ended),
    as opposed to a refusal of the statement (a lock held past the busy timeout, a constraint)."""
    if isinstance(exc, CacheUnavailable):
        return isinstance(exc, _ConnectFailed)
    state = getattr(exc, "sqlstate", None) or ""
    if state.startswith("08") or state in _GONE_STATES:
        return True
    return (isinstance(exc, _psycopg().OperationalError) and db is not None
            and (db.broken or db.closed))


class _ConnectFailed(CacheUnavailable):
    """A connection that could not be made (the server down, starting, or unreachable)."""


class Outage:
    """Since when a server has been out of reach, and when to try it again: backoff from
    `first_wait_s`, doubling up to `longest_wait_s`, for at most `window_s` from the moment the
    server was lost."""

    def __init__(self, window_s: float, first_wait_s: float = 0.1, longest_wait_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        self.window_s = window_s
        self.first_wait_s = first_wait_s
        self.longest_wait_s = longest_wait_s
        self.clock = clock
        self.since: float | None = None
        self.next_try = 0.0
        self._wait_s = first_wait_s

    @property
    def ongoing(self) -> bool:
        return self.since is not None

    def lost(self) -> None:
        """A try failed: the next one after the current wait, which then doubles."""
        now = self.clock()
        if self.since is None:
            self.since = now
        self.next_try = now + self._wait_s
        self._wait_s = min(self.longest_wait_s, self._wait_s * 2)

    def over(self) -> None:
        """The server answered again."""
        self.since = None
        self.next_try = 0.0
        self._wait_s = self.first_wait_s

    def expired(self) -> bool:
        return self.since is not None and self.clock() - self.since >= self.window_s

    def due(self) -> bool:
        """Whether the next try may be made now."""
        return self.clock() >= self.next_try

    def wait_s(self) -> float:
        """How long until the next try, within what is left of the window (0: now)."""
        if self.since is None:
            return 0.0
        now = self.clock()
        return max(0.0, min(self.next_try, self.since + self.window_s) - now)

    def lasted_s(self) -> float:
        return 0.0 if self.since is None else self.clock() - self.since


class Connection:
    """One connection to a cache database that is made again when its server is lost.

    `call(operation)` runs `operation` (statements on `db`, a transaction or one statement)
    under the lock; where the server is gone, the connection is made again and the whole
    operation asked again, with backoff (`Outage`), until `reconnect_s` have passed since the
    server was lost; then `CacheUnreachable` naming the server. With `wait=False` a lost server
    is reported at once (a plain `CacheUnavailable`), and no connection is tried before the
    backoff allows. An operation called inside another one (by the same thread) runs as part
    of it, its errors left to the outer call. `setup` is run on each new connection."""

    def __init__(self, url: str, reconnect_s: float = CACHE_RECONNECT_S, read_only: bool = False,
                 setup: Callable[[Any], None] | None = None,
                 lock: threading.RLock | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic, connect_now: bool = True):
        self.url = url
        self.location = shown_url(url)
        self.read_only = read_only
        self.setup = setup
        self.outage = Outage(reconnect_s, clock=clock)
        self.lock = lock if lock is not None else threading.RLock()
        self._sleep = sleep
        self._depth = 0
        self._last_error = ""
        self.db = None
        if connect_now:  # not waited for (see the module docstring)
            self.db = connect(url, read_only=read_only)
            if setup is not None:
                setup(self.db)

    @property
    def reconnect_s(self) -> float:
        return self.outage.window_s

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None

    @contextlib.contextmanager
    def held(self) -> Iterator[Any]:
        """The connection for statements run as one operation, not asked again here (a
        transaction under way cannot be): a lost server raises a `CacheUnavailable` at once."""
        with self.lock:
            self._depth += 1
            try:
                if self._depth == 1:
                    try:
                        self._ensure(wait=False)
                    except _ConnectFailed as exc:
                        self._lost(exc)
                        raise self._unavailable(final=False) from None
                yield self.db
            finally:
                self._depth -= 1

    def call(self, operation: Callable[[], T], wait: bool = True) -> T:
        with self.lock:
            if self._depth:  # this thread's: the lock is held from the outer call on
                return operation()
        psycopg = _psycopg()
        while True:
            with self.lock:
                self._depth += 1
                try:
                    self._ensure(wait)
                    result = operation()
                except (psycopg.Error, CacheUnavailable) as exc:
                    if not connection_lost(exc, self.db):
                        raise
                    self._lost(exc)
                    if not wait or self.outage.expired():
                        raise self._unavailable(final=wait) from None
                else:
                    self.outage.over()
                    return result
                finally:
                    self._depth -= 1
            self._sleep(self.outage.wait_s())  # without the lock: others may go on meanwhile

    def _ensure(self, wait: bool) -> None:
        db = self.db
        if db is not None and not db.broken and not db.closed:
            return
        if self.outage.ongoing and not (wait or self.outage.due()):
            raise self._unavailable(final=False)
        if db is not None:
            db.close()
            self.db = None
        self.db = connect(self.url, read_only=self.read_only, failed=_ConnectFailed)
        try:
            if self.setup is not None:
                self.setup(self.db)
        except _psycopg().Error:
            self.db.close()
            raise
        if self.outage.ongoing:
            log.warning("%s: connected to the cache database again after %.1f s",
                        self.location, self.outage.lasted_s())

    def _lost(self, exc: BaseException) -> None:
        if not self.outage.ongoing:
            log.warning("%s: lost the cache database (%s); reconnecting for up to %g s "
                        "(llm.cache_reconnect_s)", self.location, str(exc).strip(),
                        self.outage.window_s)
        self._last_error = str(exc).strip().removeprefix(
            f"cannot reach the cache database {self.location}: ")
        if self.db is not None and not self.db.closed:
            self.db.close()
        self.outage.lost()

    def _unavailable(self, final: bool) -> CacheUnavailable:
        server = server_name(self.url)
        if final or self.outage.expired():
            return CacheUnreachable(
                f"the cache database {self.location} ({server}) has been out of reach for "
                f"{self.outage.lasted_s():.0f} s, past llm.cache_reconnect_s "
                f"({self.outage.window_s:g} s); the answers paid for are kept in the answer "
                f"journal and stored by the next job once it is back: {self._last_error}")
        return CacheUnavailable(f"the cache database {self.location} ({server}) is out of "
                                f"reach, reconnecting: {self._last_error}")


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

    # Its claims may wait out a lost server (`reconnect_s`): the client asks for them from a
    # thread, so that its calls in flight are answered meanwhile.
    claims_wait_for_server = True

    def __init__(self, url: str, local_dir: str | Path, busy_timeout_s: float = BUSY_TIMEOUT_S,
                 reconnect_s: float = CACHE_RECONNECT_S):
        psycopg = _psycopg()
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
        psycopg = _psycopg()
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
        psycopg = _psycopg()
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
        psycopg = _psycopg()
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
        psycopg = _psycopg()
        from psycopg.types.json import Jsonb

        rows = [(host, ledger, attempt, Jsonb(row)) for host, ledger, attempt, row in self._unsent]

        def insert() -> None:
            db = self._conn.db
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
