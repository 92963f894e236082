"""A PostgreSQL cache outlives a restart of its server: a lost connection is made again with
backoff for up to `llm.cache_reconnect_s`, for claims, reads and writes; past it the job stops
with `CacheUnavailable` (`CacheUnreachable`) naming the server. Against a real server of this
module's own (stopped and started again on the same folder and socket), calls counted at a
loopback OpenAI-compatible server; the backoff itself with a fake clock."""

import collections
import json
import os
import threading
import time

import pytest

psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL backend needs psycopg")

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm import cache_pg, pg_connection
from rubriclab.llm.cache_pg import PostgresCache
from rubriclab.llm.cache_records import CacheUnavailable, CacheUnreachable, make_answer
from rubriclab.llm.pg_connection import Connection, Outage, server_name
from rubriclab.llm.ledger import Ledger, database_ledger_rows

from . import postgres_server
from .openai_stub import ScriptedOpenAIServer
from .restartable_postgres import RestartablePostgresServer

MODEL = "openai/stub-model"
EVENT_WAIT_S = 120  # a generous bound on every event waited for


def ask(text):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


@pytest.fixture(scope="module")
def restartable():
    why = postgres_server.missing()
    if why is not None:
        if os.environ.get("RUBRICLAB_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"RUBRICLAB_REQUIRE_POSTGRES=1, but {why}")
        pytest.skip(f"the PostgreSQL restart tests need a server: {why}")
    server = RestartablePostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


_databases = iter(range(1, 1000))


@pytest.fixture
def server(restartable):
    """The module's server, running, with a fresh database for this test; `url` reaches it
    (with a password the socket's trust login ignores, so that errors can be seen not to
    name it)."""
    if not restartable.running():
        restartable.resume()
    name = f"restart{next(_databases)}"
    with psycopg.connect(restartable.url(), autocommit=True) as db:
        db.execute(f"CREATE DATABASE {name}")
    restartable.test_url = (f"postgresql://{postgres_server.SUPERUSER}:pw-s3cret-9@/{name}"
                            f"?host={restartable.folder}")
    yield restartable
    if not restartable.running():
        restartable.resume()


def stored_keys(url):
    with psycopg.connect(url, autocommit=True) as db:
        return {key for (key,) in db.execute("SELECT key FROM answers")}


def journal_files(cfg):
    return list(cache_pg.journal_dir(cfg.cache_url, cfg.local_dir).glob("*.jsonl"))


class ServerOutage:
    """Stops the server when the loopback server gets request `at`, for `down_s` (None: until
    the test starts it again); requests from `at` on are answered only once it is down, so
    that they are in flight while it goes."""

    def __init__(self, server, at, down_s):
        self.server, self.at, self.down_s = server, at, down_s
        self.halted, self.resumed = threading.Event(), threading.Event()
        self.resumed_at = None

    def on_request(self, number):
        if number == self.at:
            threading.Thread(target=self._run, daemon=True).start()
        if number >= self.at:
            assert self.halted.wait(EVENT_WAIT_S)

    def _run(self):
        self.server.halt()
        self.halted.set()
        if self.down_s is not None:
            time.sleep(self.down_s)  # the outage itself, as long as the scenario says
            self.server.resume()
            self.resumed_at = time.monotonic()
            self.resumed.set()


def settings(stub, concurrency):
    return ModelSettings(api_base=stub.api_base, placeholder_api_key=True, timeout_s=60,
                         num_retries=0, concurrency=concurrency)


# --- a job across a restart -----------------------------------------------------------------

@pytest.mark.long
def test_a_job_goes_on_across_a_ten_second_restart_and_pays_each_request_once(server, tmp_path):
    requests = [ask(f"question {i}?") for i in range(40)]
    outage = ServerOutage(server, at=10, down_s=10)
    with ScriptedOpenAIServer([], then="Yes", delay_s=0.02, on_request=outage.on_request) as stub:
        cfg = LLMConfig(cache_dir=tmp_path / "cache", cache_url=server.test_url,
                        defaults=settings(stub, concurrency=4))
        ledger_path = tmp_path / "ledger" / "judge.jsonl"
        with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
            keys = [client.key_for(client.prepare(r)) for r in requests]
            answers = client.run(requests)
        assert outage.resumed.is_set()
        assert [a.outcome for a in answers] == ["ok"] * 40
        assert all(a.text == "Yes" and not a.cached for a in answers)
        # Each request reached the model once: none failed as CacheUnwritable, none paid twice.
        asked = collections.Counter(r["messages"][-1]["content"] for r in stub.requests)
        assert len(stub.requests) == 40 and set(asked.values()) == {1}
        # The claims waited for the server: the rest were sent after it was back.
        assert sum(t > outage.resumed_at for t in stub.times) >= 20
    # Every answer in the database (those in flight while it was down, journaled, included),
    # no journal left over, and every ledger row sent (those of the outage once it was back).
    assert stored_keys(server.test_url) == set(keys)
    assert journal_files(cfg) == []
    local = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    rows = database_ledger_rows(server.test_url)
    assert len(local) == 40 and [r["row"] for r in rows] == local


def test_a_server_down_past_the_window_stops_the_job_naming_it_and_loses_nothing_paid(
        server, tmp_path):
    requests = [ask(f"question {i}?") for i in range(30)]
    outage = ServerOutage(server, at=6, down_s=None)
    with ScriptedOpenAIServer([], then="Yes", delay_s=0.02, on_request=outage.on_request) as stub:
        cfg = LLMConfig(cache_dir=tmp_path / "cache", cache_url=server.test_url,
                        defaults=settings(stub, concurrency=3), cache_reconnect_s=3)
        started = time.monotonic()
        with pytest.raises(CacheUnavailable) as stopped:
            with LLMClient(cfg) as client:  # the window the config sets
                keys = [client.key_for(client.prepare(r)) for r in requests]
                client.run(requests, raise_on_failure=False)
        assert time.monotonic() - started < EVENT_WAIT_S
        message = str(stopped.value)
        assert isinstance(stopped.value, CacheUnreachable)
        assert f"the server on the socket in {server.folder} (port 5432)" in message
        assert "past llm.cache_reconnect_s (3 s)" in message and "pw-s3cret-9" not in message
        paid = len(stub.requests)
        assert 6 <= paid < 30
        # What was paid and not stored is in the answer journal.
        server.resume()
        key_of = {f"question {i}?": key for i, key in enumerate(keys)}
        paid_keys = {key_of[r["messages"][-1]["content"]] for r in stub.requests}
        assert paid_keys <= stored_keys(server.test_url) | journaled(cfg)
        # A rerun once it is back pays only for what was never asked.
        with LLMClient(LLMConfig(cache_dir=cfg.cache_dir, cache_url=cfg.cache_url,
                                 defaults=cfg.defaults)) as rerun:
            again = rerun.run(requests)
        assert [a.outcome for a in again] == ["ok"] * 30
        assert sum(a.cached for a in again) == paid
        asked = collections.Counter(r["messages"][-1]["content"] for r in stub.requests)
        assert len(stub.requests) == 30 and set(asked.values()) == {1}
    assert stored_keys(server.test_url) == set(keys)
    assert journal_files(cfg) == []


def journaled(cfg):
    from rubriclab.llm.journal import read_records

    keys = set()
    for path in journal_files(cfg):
        keys |= {r["row"]["key"] for r in read_records(path.read_bytes(), path)
                 if r["t"] == "answer"}
    return keys


def test_a_cache_waits_for_a_restarted_server_and_keeps_what_it_cannot_store(server, tmp_path):
    """Reads and claims wait for the server; a write does not, its answer journaled and
    served meanwhile, and stored once the server is back."""
    request = ask("q")
    local = tmp_path / "local"
    with PostgresCache(server.test_url, local_dir=local, reconnect_s=EVENT_WAIT_S) as cache:
        cache.put(make_answer("stored", request, "Yes", 1, 1, 0.0, "fake-v1"))
        server.halt()
        cache.put(make_answer("during", request, "No", 1, 1, 0.0, "fake-v1"))
        assert cache.get("during").text == "No"  # from the journal, at once
        back = threading.Timer(1.0, server.resume)  # the restart, as the scenario has it
        back.start()
        try:
            assert cache.get("stored").text == "Yes"  # waited for the server
            assert cache.claim("new", "me", lease_s=30).claimed
        finally:
            back.join()
        assert stored_keys(server.test_url) == {"stored"}
        cache.put(make_answer("after", request, "Yes", 1, 1, 0.0, "fake-v1"))  # the next write
    assert stored_keys(server.test_url) == {"stored", "during", "after"}


def test_a_claim_while_the_server_stays_down_raises_cache_unreachable(server, tmp_path):
    with PostgresCache(server.test_url, local_dir=tmp_path / "local", reconnect_s=1) as cache:
        server.halt()
        started = time.monotonic()
        with pytest.raises(CacheUnreachable, match="past llm.cache_reconnect_s"):
            cache.claim("k", "me", lease_s=30)
        assert time.monotonic() - started >= 1
        with pytest.raises(CacheUnreachable):  # and at once from then on
            cache.get("k")


# --- the backoff, with a fake clock ---------------------------------------------------------

class FakeClock:
    def __init__(self):
        self.now = 0.0
        self.sleeps = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.sleeps.append(round(seconds, 3))
        self.now += seconds


class FakeDB:
    """A connection whose statements play a script: an exception class, or a result."""

    def __init__(self, script):
        self.script = script
        self.broken = self.closed = False

    def execute(self, *args):
        step = self.script.pop(0)
        if isinstance(step, type) and issubclass(step, Exception):
            if issubclass(step, psycopg.errors.AdminShutdown):
                self.broken = self.closed = True
            raise step("scripted")
        return step

    def close(self):
        self.closed = True


URL = "postgresql://lab:pw-s3cret-9@db.example:6543/cache"


def fake_connection(monkeypatch, connects, window_s=10.0):
    """A Connection whose connects play `connects` (a FakeDB, or None: the server is down)."""
    clock = FakeClock()
    made = []

    def connect(url, read_only=False, failed=CacheUnavailable):
        made.append(clock.now)
        db = connects.pop(0)
        if db is None:
            raise failed("cannot reach the cache database: connection refused")
        return db

    monkeypatch.setattr(pg_connection, "connect", connect)
    conn = Connection(URL, window_s, sleep=clock.sleep, clock=clock, connect_now=False)
    return conn, clock, made


def test_a_lost_connection_is_made_again_with_backoff_and_the_operation_asked_again(monkeypatch):
    first = FakeDB(["before", psycopg.errors.AdminShutdown])
    conn, clock, made = fake_connection(monkeypatch, [first, None, None, None,
                                                      FakeDB(["after"])])
    assert conn.call(lambda: conn.db.execute()) == "before"
    assert conn.call(lambda: conn.db.execute()) == "after"
    # Lost, then three refused connects: waits of 0.1, 0.2, 0.4, 0.8 s between the tries.
    assert clock.sleeps == [0.1, 0.2, 0.4, 0.8] and len(made) == 5
    assert not conn.outage.ongoing


def test_the_backoff_doubles_up_to_its_longest_wait_and_ends_with_the_window():
    clock = FakeClock()
    outage = Outage(window_s=10, clock=clock)
    waits = []
    while not outage.expired():
        outage.lost()
        waits.append(round(outage.wait_s(), 3))
        clock.now += outage.wait_s()
    assert waits[:6] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0] and max(waits) == 2.0
    assert clock.now == pytest.approx(10)  # the last wait stops at the window's end
    outage.over()
    assert not outage.ongoing and outage.wait_s() == 0


def test_past_the_window_the_server_is_named_without_its_password(monkeypatch):
    conn, clock, made = fake_connection(monkeypatch, [None] * 100, window_s=5)
    with pytest.raises(CacheUnreachable) as unreachable:
        conn.call(lambda: conn.db.execute())
    message = str(unreachable.value)
    assert "the server at db.example:6543" in message and "pw-s3cret-9" not in message
    assert "out of reach for 5 s, past llm.cache_reconnect_s (5 s)" in message
    assert "connection refused" in message
    assert clock.now == pytest.approx(5) and sum(clock.sleeps) <= 5


def test_a_refused_statement_is_not_waited_for(monkeypatch):
    conn, clock, _ = fake_connection(monkeypatch, [FakeDB([psycopg.errors.LockNotAvailable])])
    with pytest.raises(psycopg.errors.LockNotAvailable):
        conn.call(lambda: conn.db.execute())
    assert clock.sleeps == [] and not conn.outage.ongoing


def test_a_write_that_does_not_wait_is_told_at_once_and_tries_no_connection_early(monkeypatch):
    conn, clock, made = fake_connection(monkeypatch, [None, None, FakeDB(["stored"])])
    with pytest.raises(CacheUnavailable) as refused:
        conn.call(lambda: conn.db.execute(), wait=False)
    assert not isinstance(refused.value, CacheUnreachable)
    assert "out of reach, reconnecting" in str(refused.value)
    with pytest.raises(CacheUnavailable):  # before the backoff's next try: no connect
        conn.call(lambda: conn.db.execute(), wait=False)
    assert len(made) == 1 and clock.sleeps == []
    clock.now += 0.1
    with pytest.raises(CacheUnavailable):
        conn.call(lambda: conn.db.execute(), wait=False)
    clock.now += 0.2
    assert conn.call(lambda: conn.db.execute(), wait=False) == "stored" and len(made) == 3


def test_a_window_of_zero_fails_at_the_first_loss(monkeypatch):
    conn, clock, made = fake_connection(monkeypatch, [None], window_s=0)
    with pytest.raises(CacheUnreachable):
        conn.call(lambda: conn.db.execute())
    assert clock.sleeps == [] and len(made) == 1


def test_the_server_is_named_by_host_and_port_or_socket_folder():
    assert server_name(URL) == "the server at db.example:6543"
    assert server_name("postgresql://lab@db.example/cache") == "the server at db.example:5432"
    assert (server_name("postgresql://lab:pw@/cache?host=/run/pg&port=5433")
            == "the server on the socket in /run/pg (port 5433)")


def test_the_reconnect_window_is_a_setting():
    assert LLMConfig.from_dict({}).cache_reconnect_s == 60
    assert LLMConfig.from_dict({"cache_reconnect_s": 5}).cache_reconnect_s == 5
    for bad in (-1, "60", True, None):
        with pytest.raises(ValueError, match=r"llm.cache_reconnect_s: expected a number of "
                                             r"seconds >= 0"):
            LLMConfig.from_dict({"cache_reconnect_s": bad})
