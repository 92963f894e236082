"""One bill after crashes: with a PostgreSQL cache the cost report bills every call each
process of a stage paid for, on every host, from the database (and the journals, each call
once); a process whose ledger and journal never reached the run's store stays on the bill."""

import json
import shutil

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.bill import cost_report, merge_attempts, paid_attempts, stage_name
from rubriclab.llm.ledger import (attempts_path, ledger_frame, read_earlier_attempts,
                                  read_ledgers, summarize)

from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/gpt-4o-mini"  # priced in litellm's map: the bill has a cost to check
STORED = "fs/store/results/ledger/judge.jsonl"  # the ledger's name under each host's copies


def ask(text):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def local_root(host):
    """The folder a host (a job's folder) keeps its local copies of the store's files in."""
    return host / ".snakemake" / "storage"


def run_stage(host, url, server, questions):
    """One process of the stage `judge` on `host`, its ledger where the store's copy goes."""
    ledger_path = local_root(host) / STORED
    cfg = LLMConfig(cache_dir=host / "cache", cache_url=url,
                    defaults=ModelSettings(api_base=server.api_base))
    with LLMClient(cfg, ledger=Ledger(ledger_path, "judge[x]")) as client:
        client.run([ask(q) for q in questions])
    return ledger_path


def billed(summary):
    calls = int(summary["uncached_calls"].sum() + summary["earlier_calls"].sum())
    return calls, float(summary["cost_usd"].sum() + summary["earlier_cost_usd"].sum())


def test_an_orphaned_process_on_another_host_stays_on_the_bill(pg_backend, tmp_path):
    url = pg_backend.url(tmp_path / "db")
    with ScriptedOpenAIServer([], then="Yes") as server:
        # The first host's job pays for four answers, then its head is killed: its folder, with
        # its ledger and attempts journal, never reaches the store.
        run_stage(tmp_path / "host1", url, server, [f"q{i}" for i in range(4)])
        shutil.rmtree(tmp_path / "host1")
        # The rerun, on another host, finds those four in the cache and pays for two more.
        rerun = run_stage(tmp_path / "host2", url, server, [f"q{i}" for i in range(6)])
        answered = len(server.requests)
    assert answered == 6
    rows = [json.loads(line) for line in rerun.read_text().splitlines()]
    assert [r["cached"] for r in rows] == [True] * 4 + [False] * 2
    each = rows[-1]["cost_usd"]
    assert each > 0 and all(r["cost_usd"] == each for r in rows)  # same usage for every answer
    # The head reads the rerun's ledger from the store, into its own copies.
    head = tmp_path / "head"
    ledger_path = local_root(head) / STORED
    ledger_path.parent.mkdir(parents=True)
    shutil.copy(rerun, ledger_path)
    ledger = read_ledgers([ledger_path])
    # The journals alone (what the report billed before): the rerun's two calls only.
    assert billed(summarize(ledger, read_earlier_attempts([ledger_path])))[0] == 2
    calls, cost = billed(summarize(ledger, paid_attempts([ledger_path], url,
                                                         local_root(head))))
    assert calls == answered and cost == pytest.approx(answered * each)
    # Read straight from the store, named as each job's local copy names it.
    straight = paid_attempts([rerun], url, stages=[STORED])
    assert billed(summarize(ledger, straight)) == (calls, cost)
    _, markdown = cost_report([ledger_path], url, local_root(head))
    assert "Calls made / distinct requests: 6 / 6 = 1.000" in markdown
    lines = markdown.splitlines()
    header = next(line for line in lines if line.startswith("| rule |"))
    total = next(line for line in lines if line.startswith("| **total**"))
    cells = dict(zip((c.strip() for c in header.split("|")), (c.strip() for c in total.split("|"))))
    assert (cells["uncached"], cells["earlier runs' calls"]) == ("2", "4")
    assert cells["cost"] == f"${2 * each:,.4f}" and cells["their cost"] == f"${4 * each:,.4f}"


def test_a_call_in_the_journal_and_the_database_is_billed_once(pg_backend, tmp_path):
    """On a filesystem every host shares, a stage's journal and the database hold the same
    calls; another run's stage of the same name in another store is no part of this bill."""
    url = pg_backend.url(tmp_path / "db")
    host = tmp_path / "shared"
    with ScriptedOpenAIServer([], then="Yes") as server:
        first = run_stage(host, url, server, ["a", "b"])
        kept = first.read_text()
        run_stage(host, url, server, ["a", "b", "c"])  # replaces the ledger: a, b cached
        # Another run (another store) with a stage of the same name, on the same database.
        other = tmp_path / "other" / ".snakemake" / "storage" / "fs" / "elsewhere"
        run_stage(other, url, server, ["x", "y"])
        assert len(server.requests) == 5
    ledger_path = local_root(host) / STORED
    assert len(attempts_path(ledger_path).read_text().splitlines()) == 3
    assert kept.count('"cached": false') == 2
    attempts = paid_attempts([ledger_path], url)  # no store: known by its absolute path
    assert sorted(attempts["key"]) == sorted(read_earlier_attempts([ledger_path])["key"])
    calls, _ = billed(summarize(read_ledgers([ledger_path]), attempts))
    assert calls == 3
    _, markdown = cost_report([ledger_path], url, local_root(tmp_path / "head"))
    assert "Calls made / distinct requests: 3 / 3 = 1.000" in markdown


def test_rows_written_before_the_later_columns_are_billed(pg_backend, tmp_path):
    """A row an older version wrote to the table (no batch or prompt-cache columns) reads
    with their old meaning."""
    import psycopg

    url = pg_backend.url(tmp_path / "db")
    with ScriptedOpenAIServer([], then="Yes") as server:
        ledger_path = run_stage(tmp_path / "host", url, server, ["a"])
    old = {"rule": "judge[x]", "model": MODEL, "key": "k-old", "cached": False, "outcome": "ok",
           "prompt_tokens": 5, "completion_tokens": 1, "cost_usd": 0.25, "latency_s": 0.1,
           "attempts": 1, "reasks": 0, "error": None, "run": "an-older-run"}
    with psycopg.connect(url, autocommit=True) as db:
        db.execute("INSERT INTO ledger_rows (host, ledger, attempt, row) VALUES (%s, %s, true,"
                   " %s)", ("old-host", f"/elsewhere/job/.snakemake/storage/{STORED}",
                            json.dumps(old)))
    summary = summarize(read_ledgers([ledger_path]),
                        paid_attempts([ledger_path], url, local_root(tmp_path / "host")))
    row = summary.iloc[0]
    assert (row.uncached_calls, row.earlier_calls) == (1, 1)
    assert row.earlier_cost_usd == pytest.approx(0.25)


def test_a_stage_is_named_by_its_path_under_the_hosts_local_copies(tmp_path, monkeypatch):
    monkeypatch.setenv("JOB_TMP", str(tmp_path / "job7"))
    job = tmp_path / "job7" / "storage" / STORED
    assert stage_name(job, "$JOB_TMP/storage") == STORED
    assert stage_name(job, tmp_path / "elsewhere") == str(job)
    monkeypatch.chdir(tmp_path)
    assert stage_name("results/ledger/a.jsonl") == str(tmp_path / "results/ledger/a.jsonl")


def test_merged_attempts_count_each_call_once_and_keep_repeated_askings():
    def row(run, key, cost=0.1):
        return {"rule": "r", "model": "m", "key": key, "cached": False, "outcome": "ok",
                "cost_usd": cost, "attempts": 1, "reasks": 0, "run": run}

    journal = ledger_frame([row("A", "k"), row("A", "k"), row("A", "j")])
    database = ledger_frame([row("A", "k"), row("A", "k"), row("B", "k"), row("A", "k")])
    merged = merge_attempts(journal, database)
    counted = sorted(zip(merged["run"], merged["key"]))
    # A's three askings of k (a model not cached), j only in the journal, B's k only in the
    # database.
    assert counted == [("A", "j"), ("A", "k"), ("A", "k"), ("A", "k"), ("B", "k")]
    assert merge_attempts(ledger_frame([]), ledger_frame([])).empty
