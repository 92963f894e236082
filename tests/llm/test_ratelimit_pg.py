"""One set of rate limits per run, whatever the hosts: with a PostgreSQL cache the models'
schedule is a row per model in the cache database (rubriclab.llm.ratelimit_pg), so that jobs on
different hosts (each its own folder, so its own local files) send one limit's worth together,
counted at the loopback server by arrival; it books as the SQLite store does, in the server's
clock (a host whose clock is off neither overshoots nor waits for nothing); a 429 one host met
holds the other; a lost server stops the job rather than let a request go out unbooked."""

from __future__ import annotations

import json
import logging
import multiprocessing
import time

import pytest

psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL rate limits need psycopg")

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.cache_records import CacheUnreachable
from rubriclab.llm.ratelimit import BURST_S, RateLimitWait, SQLiteRateLimiter
from rubriclab.llm.ratelimit_pg import PostgresRateLimiter, RateLimitsUnreachable
from rubriclab.llm.storage import open_rate_limiter

from .jobs import WARM_UP, run_job
from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


# --- the schedule: the same bookings as SQLite, in the server's clock ----------------------

def bookings(limiter) -> list[float | None]:
    """A sequence of bookings, settlements and pauses: each start from the first (None: one
    refused at its deadline)."""
    far, soon = time.time() + 3600, time.time() + 5
    rpm = ModelSettings(requests_per_minute=12)  # one every 5 s
    tpm = ModelSettings(tokens_per_minute=60_000, input_tokens_per_minute=30_000,
                        output_tokens_per_minute=12_000)
    starts: list[float | None] = []

    def book(model, settings, tokens, latest, **apart):
        try:
            booking = limiter.book(model, settings, tokens, latest, **apart)
        except RateLimitWait:
            starts.append(None)
            return None
        starts.append(booking.start)
        return booking

    book("openai/rpm", rpm, 1, far)
    book("openai/rpm", rpm, 1, far)
    book("openai/rpm", rpm, 1, soon)  # 9 s away: refused, nothing booked
    book("openai/rpm", rpm, 1, far)
    first = book("openai/tpm", tpm, 1_500, far, input_tokens=1_000, output_tokens=500)
    book("openai/tpm", tpm, 1_500, far, input_tokens=1_000, output_tokens=500)
    limiter.settle(first, tpm, 300, used_input=250, used_output=50)
    book("openai/tpm", tpm, 1_500, far, input_tokens=1_000, output_tokens=500)
    limiter.pause("openai/paused", 20)
    book("openai/paused", ModelSettings(), 1, far)
    book("openai/paused", rpm, 1, soon)  # the pause is past its deadline
    t0 = next(s for s in starts if s is not None)
    return [None if s is None else s - t0 for s in starts]


def test_postgresql_books_what_sqlite_books(tmp_path, pg_backend):
    sqlite = SQLiteRateLimiter(tmp_path / "rate_limits.sqlite")
    pg = PostgresRateLimiter(pg_backend.url(tmp_path / "db"))
    took = []
    try:
        for limiter in (sqlite, pg):
            started = time.monotonic()
            took.append((bookings(limiter), time.monotonic() - started))
    finally:
        sqlite.close()
        pg.close()
    (on_sqlite, took_sqlite), (on_pg, took_pg) = took
    assert [s is None for s in on_pg] == [s is None for s in on_sqlite] == [
        False, False, True, False, False, False, False, False, True]
    # A start set from "now" (the pause's end) moves with how long the sequence took to ask:
    # the slack is that time, not a guess at the machine's speed (the steps are seconds apart).
    assert on_pg == pytest.approx(on_sqlite, abs=0.05 + max(took_sqlite, took_pg))
    assert on_sqlite[1] == pytest.approx(5 - BURST_S, abs=0.05)  # the algorithm, not only alike


def test_a_host_whose_clock_is_off_waits_by_the_servers(tmp_path, pg_backend, monkeypatch):
    """Host b's clock is 100 s ahead of host a's: its second request still waits its 5 s less
    the burst after a's (not 0, as its own clock would have it: past the limit), and a pause
    set by host a ends for b when it ends for a (not 100 s early)."""
    url = pg_backend.url(tmp_path / "db")
    a, b = PostgresRateLimiter(url), PostgresRateLimiter(url)
    rpm = ModelSettings(requests_per_minute=12)
    started = time.monotonic()
    a.book(MODEL, rpm, 1, time.time() + 3600)
    a.pause("openai/paused", 30)
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 100)
    booking = b.book(MODEL, rpm, 1, time.time() + 3600)
    paused_for = b.not_before("openai/paused") - time.time()
    monkeypatch.setattr(time, "time", real)
    wait = booking.wait_s(real() + 100)
    # what the steps took (a busy machine's) comes off both waits, never on them
    elapsed = time.monotonic() - started + 0.05
    assert 5 - BURST_S - elapsed <= wait <= 5 - BURST_S + 0.05
    assert wait > 0 or elapsed > 5 - BURST_S  # b's own clock, 100 s on, would say 0
    assert 30 - elapsed - 0.5 <= paused_for <= 30 + 0.5
    a.close()
    b.close()


def test_the_limiter_is_chosen_by_the_cache_and_connects_at_its_first_booking(tmp_path,
                                                                             pg_backend):
    url = pg_backend.url(tmp_path / "db")
    on_sqlite = open_rate_limiter(LLMConfig(cache_dir=tmp_path / "cache"))
    assert isinstance(on_sqlite, SQLiteRateLimiter)
    assert on_sqlite.location == str(tmp_path / "cache" / "rate_limits.sqlite")
    config = LLMConfig(cache_dir=tmp_path / "cache", cache_url=url)
    # a run served without a paid call (a free model) never connects for the limiter
    with LLMClient(config) as client:
        assert isinstance(client.limiter, PostgresRateLimiter)
        client.run([Request.chat("fake/hash", [{"role": "user", "content": "q"}],
                                 response_format="yes_no")])
        assert client.limiter._conn.db is None
        client.limiter.book(MODEL, ModelSettings(requests_per_minute=60), 1, time.time() + 60)
        assert client.limiter._conn.db is not None
    assert not list(tmp_path.rglob("rate_limits.sqlite"))


# --- a lost server --------------------------------------------------------------------------

def terminate_sessions(url):
    """End the server's other sessions of this database (as a restart or failover does)."""
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                   " WHERE datname = current_database() AND pid <> pg_backend_pid()")


def test_a_booking_the_server_cannot_take_stops_the_job_and_nothing_is_sent(tmp_path):
    gone = f"postgresql://lab:s3cret@/cache?host={tmp_path}/no-server"
    limiter = PostgresRateLimiter(gone, reconnect_s=0.5)
    started = time.monotonic()
    with pytest.raises(RateLimitsUnreachable, match=r"could not book a request to "
                       r"'openai/stub-model' in the shared rate limits .* within "
                       r"0.5 s, so the job stops") as refused:
        limiter.book(MODEL, ModelSettings(requests_per_minute=60), 1, time.time() + 60)
    assert time.monotonic() - started < 15
    assert isinstance(refused.value, CacheUnreachable)
    assert f"the server on the socket in {tmp_path}/no-server" in str(refused.value)
    assert "s3cret" not in str(refused.value)
    limiter.close()

    # Through the client: the request is not sent, and the job stops with that error.
    with ScriptedOpenAIServer([], then="Yes") as server:
        config = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(
            api_base=server.api_base, requests_per_minute=60, num_retries=0))
        with LLMClient(config) as client:
            client.limiter = PostgresRateLimiter(gone, reconnect_s=0.3)
            with pytest.raises(RateLimitsUnreachable, match="so the job stops"):
                client.run([Request.chat(MODEL, [{"role": "user", "content": "q"}],
                                         response_format="yes_no", max_tokens=4)])
        assert server.requests == []


def test_a_dropped_connection_is_made_again_and_settlements_are_kept_until_it_is(
        tmp_path, pg_backend, caplog):
    url = pg_backend.url(tmp_path / "db")
    limiter, reader = PostgresRateLimiter(url), PostgresRateLimiter(url)
    tpm = ModelSettings(tokens_per_minute=60_000)  # 1,000 tokens a second
    far = time.time() + 3600
    first = limiter.book(MODEL, tpm, 10_000, far)
    terminate_sessions(url)
    with caplog.at_level(logging.WARNING, logger="rubriclab.llm"):
        limiter.settle(first, tpm, 3_000)  # the connection is gone: kept, not lost
        limiter.pause("openai/paused", 30)
    assert "could not write to the shared rate limits (kept" in caplog.text
    assert reader.not_before("openai/paused") == 0.0  # not there yet
    # The next booking connects again and sends both before it books: 3 s after the first
    # less the burst, not 10 s.
    second = limiter.book(MODEL, tpm, 100, far)
    assert second.start - first.start == pytest.approx(3.0 - BURST_S, abs=0.05)
    assert reader.not_before("openai/paused") - time.time() == pytest.approx(30, abs=1)
    # At close, what is kept is sent (the server waited for within llm.cache_reconnect_s).
    terminate_sessions(url)
    limiter.pause("openai/later", 30)
    limiter.close()
    assert reader.not_before("openai/later") > time.time() + 25
    reader.close()


# --- the case: two hosts, one database, one limit -----------------------------------

def host_job(config: dict, ledger_path: str, requests: list[tuple[str, str]], out: str,
             ready, go, skew_s: float = 0.0, per_host: bool = False) -> None:
    """`jobs.run_job` on a "host" whose wall clock is `skew_s` off; `per_host`: with the SQLite
    schedule in its own folder, as before the schedule was shared (the control)."""
    if skew_s:
        real = time.time
        time.time = lambda: real() + skew_s  # type: ignore[assignment]
    if per_host:
        from rubriclab.llm import client

        client.open_rate_limiter = lambda cfg: SQLiteRateLimiter(  # type: ignore[assignment]
            cfg.local_dir / SQLiteRateLimiter.FILE_NAME)
    run_job(config, ledger_path, requests, out, ready, go)


def start_hosts(tmp_path, config: dict, texts: dict[str, list[str]],
                skews: dict[str, float] | None = None, per_host: bool = False) -> dict:
    """One process per host (named by `texts`' keys), each ready (warmed up) and waiting."""
    spawn = multiprocessing.get_context("spawn")
    hosts = {}
    for name, asked in texts.items():
        ready, go = spawn.Event(), spawn.Event()
        folder = tmp_path / name  # its cache folder (so its local files) and its ledger
        out = folder / "outcome.json"
        process = spawn.Process(target=host_job, args=(
            {**config, "cache_dir": str(folder / "cache")},
            str(folder / "results" / "ledger" / "job.jsonl"), [(MODEL, t) for t in asked],
            str(out), ready, go, (skews or {}).get(name, 0.0), per_host))
        process.start()
        hosts[name] = (process, out, ready, go)
    for process, _, ready, _ in hosts.values():
        assert ready.wait(120), "a host's job did not start"
    return hosts


def finish_hosts(hosts: dict, timeout_s: float) -> dict:
    results = {}
    for name, (process, out, _, _) in hosts.items():
        process.join(timeout_s)
        assert process.exitcode == 0, f"host {name}'s job exited with {process.exitcode}"
        results[name] = json.loads(out.read_text())
    return results


def arrivals(server) -> list[float]:
    """When the server received each request to MODEL (its clock), in order."""
    warm_up = WARM_UP.split("/", 1)[1]
    return sorted(t for t, body in zip(server.times, server.requests)
                  if body["model"] != warm_up)


def most_in_a_window(times: list[float], window_s: float) -> int:
    """The most arrivals in any window of `window_s` (the busiest one starts at an arrival)."""
    return max(sum(1 for t in times if start <= t < start + window_s) for start in times)


def allowed(window_s: float, rpm: float) -> int:
    """What the schedule lets through in a window: its rate, plus one burst (BURST_S worth of
    requests, and the one at its edge)."""
    interval = 60.0 / rpm
    return int(window_s / interval) + int(BURST_S / interval) + 1


def run_two_hosts(tmp_path, url: str, rpm: float, per_host_requests: int, deadline_s: float,
                  skews: dict[str, float] | None = None, per_host: bool = False,
                  timeout_s: float = 120) -> tuple[dict, list[float]]:
    with ScriptedOpenAIServer([], then="Yes") as server:
        config = {"cache_url": url, "defaults": {
            "api_base": server.api_base, "timeout_s": 10.0, "num_retries": 0,
            "concurrency": per_host_requests, "deadline_s": deadline_s,
            "requests_per_minute": rpm}}
        hosts = start_hosts(tmp_path, config, {
            name: [f"host {name} question {i}" for i in range(per_host_requests)]
            for name in ("host-a", "host-b")}, skews, per_host)
        for _, _, _, go in hosts.values():
            go.set()
        results = finish_hosts(hosts, timeout_s)
        return results, arrivals(server)


def test_two_hosts_on_one_database_stay_within_one_limit(tmp_path, pg_backend):
    """120 requests a minute (one every 0.5 s), two hosts of 8 requests each, host a's clock
    15 s ahead: at the server, no window of 1, 2 or 4 s holds more than the limit allows (its
    rate plus one burst), and the 16 requests take the time the limit asks, no longer (a host
    trusting its own clock would send at once, or wait 15 s). Not faster: a host's event loop
    can be held a few tenths of a second (the answer journal's fsync before each send), and
    the requests due meanwhile then go together, which at one every 0.1 s would be counted
    here, not the limiter. With a SQLite schedule per host the server saw 10 in a second, 14
    in 2 s and 16 in 4 s (allowed: 5, 7 and 11); with each host booking in its own clock,
    9 in a second."""
    rpm = 120.0
    results, times = run_two_hosts(tmp_path, pg_backend.url(tmp_path / "db"), rpm, 8,
                                   deadline_s=60, skews={"host-a": 15.0})
    assert [r["outcomes"] for r in results.values()] == [["ok"] * 8] * 2, results
    assert len(times) == 16
    for window_s in (1.0, 2.0, 4.0):
        assert most_in_a_window(times, window_s) <= allowed(window_s, rpm), (window_s, times)
    took = times[-1] - times[0]
    least = (len(times) - 1) * 60.0 / rpm - BURST_S
    assert least - 0.2 <= took <= least + 3.0, took


def test_a_429_one_host_met_holds_the_other(tmp_path, pg_backend):
    """Host a's request meets a 429 with Retry-After: 3; host b (its clock 20 s behind), let
    go once the pause is in the database, sends nothing before the pause ends (with a SQLite
    schedule per host it sent 0.02 s after the 429)."""
    retry_after = 3
    url = pg_backend.url(tmp_path / "db")
    # the two hosts' warm-up calls first, then host a's request meets the 429
    with ScriptedOpenAIServer(["Yes", "Yes", f"429:{retry_after}"], then="Yes") as server:
        config = {"cache_url": url, "defaults": {
            "api_base": server.api_base, "timeout_s": 5.0, "num_retries": 3,
            "backoff_s": 0.01, "max_backoff_s": 0.05, "deadline_s": 60.0}}
        hosts = start_hosts(tmp_path, config, {
            "host-a": ["host a question"],
            "host-b": [f"host b question {i}" for i in range(3)]}, {"host-b": -20.0})
        hosts["host-a"][-1].set()
        schedule = PostgresRateLimiter(url)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not schedule.not_before(MODEL):
            time.sleep(0.02)
        assert schedule.not_before(MODEL), "the 429 set no pause"
        schedule.close()
        hosts["host-b"][-1].set()
        results = finish_hosts(hosts, 120)
        asked = arrivals(server)
    assert [r["outcomes"] for r in results.values()] == [["ok"], ["ok"] * 3]
    rate_limited_at, later = asked[0], asked[1:]
    assert len(later) == 4
    assert min(later) >= rate_limited_at + retry_after - 0.1, (rate_limited_at, later)


@pytest.mark.long
def test_sixty_requests_a_minute_on_two_hosts_is_sixty_a_minute_at_the_server(tmp_path,
                                                                              pg_backend):
    """The issue's case: `requests_per_minute: 60`, two hosts asking 75 requests each, every
    request's deadline 70 s away: what each host could not start by then is refused (not sent).
    In every 60 s window the server sees at most 60 and one burst."""
    rpm = 60.0
    results, times = run_two_hosts(tmp_path, pg_backend.url(tmp_path / "db"), rpm, 75,
                                   deadline_s=70, timeout_s=180)
    outcomes = [o for r in results.values() for o in r["outcomes"]]
    assert len(outcomes) == 150 and outcomes.count("ok") == len(times)
    assert 60 <= len(times) <= 70 + allowed(0, rpm), len(times)  # stopped by the deadline
    assert times[-1] - times[0] >= 60  # a little over a minute
    assert most_in_a_window(times, 60.0) <= allowed(60.0, rpm) == 62, times
    assert most_in_a_window(times, 10.0) <= allowed(10.0, rpm), times


@pytest.mark.long
def test_with_a_sqlite_schedule_per_host_the_two_hosts_send_twice_the_limit(tmp_path,
                                                                           pg_backend):
    """The control: the count at the server catches a limit per host (as before the schedule
    was shared), which sends nearly twice what one limit allows."""
    rpm = 120.0
    results, times = run_two_hosts(tmp_path, pg_backend.url(tmp_path / "db"), rpm, 8,
                                   deadline_s=60, per_host=True)
    assert len(times) == 16
    assert most_in_a_window(times, 2.0) > allowed(2.0, rpm) + 3, times
