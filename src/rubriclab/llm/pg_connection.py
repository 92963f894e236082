"""Connections to a rubriclab cache database on a PostgreSQL server, shared by the cache
(`rubriclab.llm.cache_pg`), the batch store (`rubriclab.llm.batch_pg`), the ledger's rows
(`rubriclab.llm.ledger_pg`) and the rate limits (`rubriclab.llm.ratelimit_pg`): connecting,
naming the server in errors, telling a lost server from a refused statement, and every table
of such a database (`SCHEMA`, `create_schema`).

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
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from .cache_records import CacheUnavailable, CacheUnreachable
from .settings import CACHE_RECONNECT_S, shown_url

T = TypeVar("T")

# How long a step on the client's event loop (booking a paid call on the run's bill or in the
# shared rate limits) tries to reach a lost server again, in seconds: it holds up the reading of
# the answers of the calls in flight, so it is short; a job stops rather than wait longer.
EVENT_LOOP_WAIT_S = 5.0

log = logging.getLogger("rubriclab.llm")

# Every table of a rubriclab cache database: answers and claims, the batch store
# (rubriclab.llm.batch_pg), the ledger's rows (rubriclab.llm.ledger) and the runs' bills
# (rubriclab.llm.budget_pg). Created once, under an advisory lock (two processes creating one
# table at once would otherwise collide).
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
    # The bill of each run (rubriclab.llm.budget_pg), by the run's name ("": the unnamed run).
    """CREATE TABLE IF NOT EXISTS run_bills (
        run TEXT PRIMARY KEY,
        settled_usd DOUBLE PRECISION NOT NULL,
        in_flight_usd DOUBLE PRECISION NOT NULL,
        calls BIGINT NOT NULL)""",
    # The models' rate-limit schedule (rubriclab.llm.ratelimit_pg), one row per model, its
    # times in the server's clock.
    """CREATE TABLE IF NOT EXISTS rate_schedule (
        model TEXT PRIMARY KEY,
        requests_at DOUBLE PRECISION NOT NULL,
        tokens_at DOUBLE PRECISION NOT NULL,
        input_at DOUBLE PRECISION NOT NULL,
        output_at DOUBLE PRECISION NOT NULL,
        not_before DOUBLE PRECISION NOT NULL)""",
]
_SCHEMA_LOCK = 0x7275627269636C61  # pg_advisory_xact_lock key: "rubricla"
CONNECT_TIMEOUT_S = 10


def psycopg_module():
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
    psycopg = psycopg_module()
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
    info = psycopg_module().conninfo.conninfo_to_dict(url)
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
    return (isinstance(exc, psycopg_module().OperationalError) and db is not None
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

    @property
    def connected(self) -> Any:
        """The connection, for an operation run by `call` (which connects before it runs it)."""
        assert self.db is not None, "Connection.connected is for an operation Connection.call runs"
        return self.db

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
        psycopg = psycopg_module()
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

    def call_within(self, operation: Callable[[], T], seconds: float) -> T:
        """`operation` (under the lock), trying a lost server again for at most `seconds`
        (and never past the reconnect window): for a step on the client's event loop, where a
        long wait would hold up the answers of the calls in flight. CacheUnavailable when the
        server stayed lost."""
        until = time.monotonic() + min(self.reconnect_s, seconds)
        while True:
            try:
                with self.lock:
                    return self.call(operation, wait=False)
            except CacheUnavailable:
                left = until - time.monotonic()
                if left <= 0:
                    raise
                self._sleep(min(max(self.outage.wait_s(), 0.0), left))

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
        except psycopg_module().Error:
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


_TABLES = ("answers", "claims", "batch_jobs", "batch_requests", "batch_answers", "ledger_rows",
           "run_bills", "rate_schedule")


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

