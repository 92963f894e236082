"""The cache's two backends for the tests: `backend` runs a test once on SQLite files and once on
a real PostgreSQL server, which the session starts itself (`postgres_server`: one per session,
a fresh schema per cache of each test) and stops at its end."""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
from pathlib import Path

import pytest

from rubriclab.llm import LLMConfig
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.storage import open_cache

from . import postgres_server

TEST_DATABASE = "rubriclab_tests"
_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def pg_server():
    """The URL of the session's PostgreSQL server (its test database); skips, saying what is
    missing, where no server can be started (fails instead under RUBRICLAB_REQUIRE_POSTGRES=1)."""
    why = postgres_server.missing()
    if why is not None:
        if os.environ.get("RUBRICLAB_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"RUBRICLAB_REQUIRE_POSTGRES=1, but {why}")
        pytest.skip(f"the PostgreSQL cache tests need a server: {why}")
    import psycopg

    server = postgres_server.PostgresServer()
    try:
        server.start()
        with psycopg.connect(server.url(), autocommit=True) as db:
            db.execute(f"CREATE DATABASE {TEST_DATABASE}")
        yield server
    finally:
        server.stop()


class Backend:
    """One backend of the cache. A cache is named by a folder (or, on SQLite, a file ending in
    .sqlite) as the SQLite tests always named it; on PostgreSQL each such name gets a schema of
    its own in the session's database, so that every cache of every test starts empty."""

    def __init__(self, kind: str, server: postgres_server.PostgresServer | None = None):
        self.kind = kind
        self.server = server
        self._schemas: dict[Path, str] = {}

    def __repr__(self) -> str:
        return self.kind

    def url(self, where: str | Path) -> str | None:
        """The cache URL for `where` (None on SQLite); its schema is made on first use."""
        if self.server is None:
            return None
        where = Path(where)
        if where not in self._schemas:
            import psycopg

            schema = f"t{next(_schemas)}"
            with psycopg.connect(self.server.url(TEST_DATABASE), autocommit=True) as db:
                db.execute(f"CREATE SCHEMA {schema}")
            self._schemas[where] = schema
        return self.server.url(TEST_DATABASE, self._schemas[where])

    def config(self, cache_dir: str | Path, **settings) -> LLMConfig:
        """An LLMConfig whose cache is `cache_dir`'s (the folder keeps the per-host files)."""
        return LLMConfig(cache_dir=Path(cache_dir), cache_url=self.url(cache_dir), **settings)

    def _sqlite_path(self, where: str | Path) -> Path:
        where = Path(where)
        return where if where.suffix == ".sqlite" else where / "llm_cache.sqlite"

    def open(self, where: str | Path, busy_timeout_s: float | None = None):
        """The cache named by `where`, open for writing."""
        timeout = {} if busy_timeout_s is None else {"busy_timeout_s": busy_timeout_s}
        if self.server is None:
            return SQLiteCache(self._sqlite_path(where), **timeout)
        from rubriclab.llm.cache_pg import PostgresCache

        where = Path(where)
        local = where.parent if where.suffix == ".sqlite" else where
        cfg = LLMConfig(cache_dir=local, cache_url=self.url(where))
        return PostgresCache(cfg.cache_url, local_dir=cfg.local_dir, **timeout)

    def read_only(self, where: str | Path):
        return open_cache(self.config(where), read_only=True)

    def location(self, where: str | Path) -> str:
        """What RUBRICLAB_CACHE / --cache-dir names this cache by: its folder or its URL."""
        return self.url(where) or str(where)

    def journal_dir(self, where: str | Path) -> Path:
        if self.server is None:
            from rubriclab.llm.journal import journal_dir

            return journal_dir(self._sqlite_path(where))
        from rubriclab.llm.cache_pg import journal_dir

        where = Path(where)
        local = where.parent if where.suffix == ".sqlite" else where
        return journal_dir(self.url(where), LLMConfig(cache_dir=local, cache_url="x").local_dir)

    def stored_keys(self, where: str | Path) -> set[str]:
        """The keys in the database itself (not those a cache serves from its journal)."""
        if self.server is None:
            db = sqlite3.connect(self._sqlite_path(where))
            try:
                return {key for (key,) in db.execute("SELECT key FROM answers")}
            finally:
                db.close()
        import psycopg

        with psycopg.connect(self.url(where), autocommit=True) as db:
            return {key for (key,) in db.execute("SELECT key FROM answers")}

    @contextlib.contextmanager
    def write_lock(self, where: str | Path):
        """Another process's write lock on the cache, held until the block ends (SQLite:
        BEGIN EXCLUSIVE; PostgreSQL: its answers and claims tables locked EXCLUSIVE, which
        lets reads through, as SQLite's WAL mode does)."""
        lock = self.take_write_lock(where)
        try:
            yield
        finally:
            lock()

    def take_write_lock(self, where: str | Path):
        """`write_lock` taken now; returns what releases it."""
        self.open(where).close()  # the tables exist
        if self.server is None:
            db = sqlite3.connect(self._sqlite_path(where), isolation_level=None,
                                 check_same_thread=False)
            db.execute("BEGIN EXCLUSIVE")

            def release():
                db.execute("ROLLBACK")
                db.close()
            return release
        import psycopg

        db = psycopg.connect(self.url(where), autocommit=True)
        db.execute("BEGIN")
        db.execute("LOCK TABLE answers, claims IN EXCLUSIVE MODE")

        def release():
            db.execute("ROLLBACK")
            db.close()
        return release


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request) -> Backend:
    if request.param == "sqlite":
        return Backend("sqlite")
    return Backend("postgresql", request.getfixturevalue("pg_server"))


@pytest.fixture
def pg_backend(pg_server) -> Backend:
    """The PostgreSQL backend alone, for what only it does (fencing tokens, server clock)."""
    return Backend("postgresql", pg_server)
