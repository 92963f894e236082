"""One bill per run, whatever the hosts: with a PostgreSQL cache the run's spend record is its
row in the cache database (rubriclab.llm.budget_pg), keyed by the run's name, so that jobs on
different hosts (their own folders, ledgers and local files) stop together before
`llm.budget_usd`; concurrent bookings never pass the budget (on both backends); a lost server
stops the run before a call it could not book."""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL spend record needs psycopg")

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm import budget_pg
from rubriclab.llm.budget import BillUnreachable, BudgetExceeded, worst_cost
from rubriclab.llm.budget_pg import PostgresSpendRecord
from rubriclab.llm.pricing import price
from rubriclab.llm.ratelimit import estimate_prompt_tokens
from rubriclab.llm.settings import ModelPrice
from rubriclab.llm.storage import open_spend_record
from rubriclab.model_job import model_client

from .jobs import finish, run_job
from .openai_stub import ScriptedOpenAIServer

PRICED = "openai/gpt-4o-mini"  # answered by the loopback server
# A price that makes a few dozen stub answers (11 prompt and 2 completion tokens) cost $0.50.
DEAR = {"input": 2000.0, "output": 2000.0}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def book_until_refused(record, worst, budget, settle_every=0):
    """Reservations of `worst` until the budget refuses one; how many were booked (every
    `settle_every`-th settled at its worst case at once, which keeps the bill the same)."""
    booked = 0
    while True:
        try:
            reservation = record.reserve(worst, budget, "a call")
        except BudgetExceeded:
            return booked
        booked += 1
        if settle_every and booked % settle_every == 0:
            record.settle(reservation, worst)


def test_concurrent_bookings_never_pass_the_budget(tmp_path, backend):
    """Eight processes' worth of records (each its own connection) booking at once: exactly
    as many worst cases as the budget holds, never one more."""
    cfg = backend.config(tmp_path / "cache")
    worst, budget, threads = 1 / 64, 1.0, 8  # exact in binary: 64 bookings fill the budget
    counts = [0] * threads
    start = threading.Barrier(threads)

    def host(n):
        record = open_spend_record(cfg, tmp_path / "ledger" / f"job{n}.jsonl", "burst")
        try:
            start.wait(30)
            counts[n] = book_until_refused(record, worst, budget, settle_every=n % 3)
        finally:
            record.close()

    workers = [threading.Thread(target=host, args=(n,)) for n in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert not worker.is_alive(), "a booking thread did not finish"
    assert sum(counts) == 64
    reader = open_spend_record(cfg, tmp_path / "ledger" / "x.jsonl", "burst")
    bill = reader.bill()
    reader.close()
    assert bill.total_usd == budget
    assert bill.calls == sum(c // (n % 3) for n, c in enumerate(counts) if n % 3)


def test_the_bill_is_the_runs_on_every_host_and_a_run_names_it(tmp_path, pg_backend):
    url = pg_backend.url(tmp_path / "db")
    host_a = LLMConfig(cache_dir=tmp_path / "a" / "cache", cache_url=url)
    host_b = LLMConfig(cache_dir=tmp_path / "b" / "cache", cache_url=url)
    a = open_spend_record(host_a, tmp_path / "a" / "results" / "ledger" / "j.jsonl", "baseline")
    b = open_spend_record(host_b, tmp_path / "b" / "results" / "ledger" / "j.jsonl", "baseline")
    other = open_spend_record(host_b, tmp_path / "b" / "results" / "ledger" / "j.jsonl", "ablate")
    unnamed = open_spend_record(host_a, tmp_path / "a" / "results" / "ledger" / "j.jsonl", None)
    assert isinstance(a, PostgresSpendRecord) and "run 'baseline'" in a.location
    a.settle(a.reserve(0.25, 1.0, "a call"), 0.2)
    assert b.bill().settled_usd == pytest.approx(0.2)  # another host, the same run
    with pytest.raises(BudgetExceeded, match=r"\$0\.20 so far \(1 paid calls\)"):
        b.reserve(0.9, 1.0, "a call")
    other.reserve(0.9, 1.0, "a call")  # another run's bill is its own
    assert other.bill().in_flight_usd == pytest.approx(0.9)
    assert unnamed.bill().total_usd == 0 and "the unnamed run" in unnamed.location
    unnamed.add(0.5)
    assert open_spend_record(host_b, tmp_path / "ledger.jsonl", "").bill().settled_usd == 0.5
    assert not list(tmp_path.rglob("spend.sqlite"))  # nothing beside the ledgers
    for record in (a, b, other, unnamed):
        record.close()


def test_a_job_client_books_on_its_runs_bill(tmp_path, pg_backend):
    """model_client hands the workflow config's `run` to the client: a named run's jobs share
    its row; the unnamed run has its own."""
    url = pg_backend.url(tmp_path / "db")
    # the cache as a cluster run names it (RUBRICLAB_CACHE or cache_dir), a folder for the rest
    config = {"llm": {"cache_dir": str(tmp_path / "cache")}, "cache_dir": url,
              "run": "ablation-1"}
    with model_client(config, tmp_path / "results" / "ledger" / "j.jsonl", "rule",
                      "judge") as client:
        assert client.spend is not None
        client.spend.add(0.125)
    with model_client({**config, "run": None}, tmp_path / "l.jsonl", "rule", "judge") as client:
        assert client.spend is not None and client.spend.bill().settled_usd == 0
    with psycopg.connect(url, autocommit=True) as db:
        rows = db.execute("SELECT run, settled_usd FROM run_bills ORDER BY run").fetchall()
    assert rows == [("", 0.0), ("ablation-1", 0.125)]


def test_a_booking_the_server_cannot_take_stops_the_run_before_the_call(tmp_path, pg_backend,
                                                                        monkeypatch):
    monkeypatch.setattr(budget_pg, "EVENT_LOOP_WAIT_S", 0.3)
    gone = f"postgresql://lab:s3cret@/cache?host={tmp_path}/no-server"
    record = PostgresSpendRecord(gone, "r")
    started = time.monotonic()
    with pytest.raises(BillUnreachable, match=r"the bill of run 'r' could not be booked within "
                       r"0\.3 s: the cache database postgresql://lab:\*\*\*@/cache") as refused:
        record.reserve(0.1, 1.0, "a call")
    assert time.monotonic() - started < 10
    assert isinstance(refused.value, BudgetExceeded)
    assert "so no paid call goes out unbooked and the run stops before it" in str(refused.value)
    assert f"the server on the socket in {tmp_path}/no-server" in str(refused.value)
    assert "s3cret" not in str(refused.value)
    record.close()

    # Through the client: the request is not sent, and the job stops as at its budget.
    with ScriptedOpenAIServer([], then="Yes") as server:
        cfg = LLMConfig(cache_dir=tmp_path / "cache", cache_url=pg_backend.url(tmp_path / "db"),
                        budget_usd=1.0, defaults=ModelSettings(api_base=server.api_base))
        with LLMClient(cfg, ledger=Ledger(tmp_path / "l" / "j.jsonl", rule="j")) as client:
            client.spend = PostgresSpendRecord(gone, None)
            with pytest.raises(BudgetExceeded, match="no paid call goes out unbooked"):
                client.run([Request.chat(PRICED, [{"role": "user", "content": "q"}],
                                         response_format="yes_no", max_tokens=4)])
        assert server.requests == []


def terminate_sessions(url):
    """End the server's other sessions of this database (a dropped connection, as a restart,
    a failover or an idle timeout ends them)."""
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                   " WHERE datname = current_database() AND pid <> pg_backend_pid()")


def test_changes_the_server_cannot_take_are_kept_and_sent_before_the_next_booking(
        tmp_path, pg_backend, caplog):
    url = pg_backend.url(tmp_path / "db")
    record = PostgresSpendRecord(url, "r")
    first = record.reserve(0.4, 1.0, "a call")
    terminate_sessions(url)
    with caplog.at_level(logging.WARNING, logger="rubriclab.llm"):
        record.settle(first, 0.1)  # the connection is gone: kept, not lost, not raised
    assert "could not write to the run's bill (kept" in caplog.text
    reader = PostgresSpendRecord(url, "r")
    assert reader.bill().in_flight_usd == pytest.approx(0.4)  # not there yet
    # The next booking reconnects, sends the settlement first, then books against it.
    record.reserve(0.8, 1.0, "a call")
    bill = reader.bill()
    assert (bill.settled_usd, bill.in_flight_usd, bill.calls) == pytest.approx((0.1, 0.8, 1))
    # At close, what is kept is sent (waiting for the server within llm.cache_reconnect_s).
    terminate_sessions(url)
    record.add(0.05)
    record.close()
    assert reader.bill().settled_usd == pytest.approx(0.15)
    reader.close()


# --- the case: two hosts, one database, one budget ---------------------------------

def start_host(spawn, folder: Path, llm: dict, n: int):
    """A job in a process of its own, in a working folder of its own (its cache folder, so its
    local files, and its ledger), as a job on another host of the run."""
    ready, go = spawn.Event(), spawn.Event()
    requests = [(PRICED, f"host {folder.name} question {i}") for i in range(n)]
    process = spawn.Process(target=run_job, args=(
        {**llm, "cache_dir": str(folder / "cache")},
        str(folder / "results" / "ledger" / "judge.jsonl"), requests,
        str(folder / "outcome.json"), ready, go, False))
    process.start()
    return process, folder / "outcome.json", ready, go


def run_on_two_hosts(tmp_path, llm, n):
    spawn = multiprocessing.get_context("spawn")
    hosts = [start_host(spawn, tmp_path / name, llm, n) for name in ("host-a", "host-b")]
    for _, _, ready, _ in hosts:
        assert ready.wait(120), "a host's job did not start"
    for _, _, _, go in hosts:
        go.set()
    return finish(hosts)


def test_two_hosts_on_one_database_stop_together_before_the_budget(tmp_path, pg_backend):
    """Two jobs of one run on two "hosts" (each its own folder, ledger and local files), one
    PostgreSQL cache, `budget_usd: 0.50`: both stop with BudgetExceeded, and what the model
    server answered, at its price, is under $0.50 and close to it. With a spend record per
    folder (SQLite, as before) the two spent $0.94 together (36 answers; one bill: 18, $0.47)."""
    budget = 0.50
    per_answer = price(PRICED, 11, 2, configured=ModelPrice(**DEAR))
    with ScriptedOpenAIServer([], then="Yes", delay_s=0.02) as server:
        llm = {"cache_url": pg_backend.url(tmp_path / "db"), "budget_usd": budget,
               "defaults": {"api_base": server.api_base, "timeout_s": 5.0, "num_retries": 2,
                            "backoff_s": 0.01, "concurrency": 2},
               "per_model": {PRICED: {"price": DEAR}}}
        # 2 x 40 answers would cost $2.08: neither host can finish
        outcomes = run_on_two_hosts(tmp_path, llm, 40)
        answered = len(server.requests)
    errors = [o["error"] for o in outcomes]
    assert all(e.startswith("BudgetExceeded: ") and "budget of $0.50" in e for e in errors), errors
    spent = answered * per_answer
    # Stopped at the budget, not before it: at the last refusal the bill (settled, and the
    # worst cases of the <= 4 calls in flight) was within one call's worst case of $0.50.
    longest = [{"role": "user", "content": "host host-b question 39"}]
    worst = worst_cost(PRICED, estimate_prompt_tokens(longest), 4,
                       ModelSettings(price=ModelPrice(**DEAR)), batch=False)
    assert budget - 5 * worst <= spent < budget, (answered, spent)
    record = PostgresSpendRecord(llm["cache_url"], None)
    bill = record.bill()
    record.close()
    assert bill.calls == answered and bill.settled_usd == pytest.approx(spent)
    assert bill.in_flight_usd == pytest.approx(0, abs=1e-9)
