"""The batch path pays as ordinary calls do (issue 24, item 3): no batch is submitted without
the free disk space its answers need (`llm.min_free_disk_mb`), and every request of a batch is
journaled as sent before the batch is paid for, so a job killed while the batch runs leaves
its requests on the stage's bill. Counted at the rehearsal server and in the journals."""

import dataclasses
import os
import subprocess
import sys
import textwrap

import pytest

from rubriclab.llm import Ledger, LLMClient
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import DiskSpaceLow
from rubriclab.llm.journal import journal_dir, read_records
from rubriclab.llm.ledger import (PAID_UNKNOWN, attempts_path, calls_per_distinct_request,
                                  read_earlier_attempts, read_ledgers, summarize)

from .batch_setup import env_keys, provider, server  # noqa: F401  (fixtures)
from .batch_setup import MODELS, config, kill_while_it_polls, paid, questions, stored_jobs


def test_no_batch_is_submitted_without_the_free_space_its_answers_need(tmp_path, server,
                                                                       provider):
    cache_dir = tmp_path / "cache"
    # More free space than any disk has: the check refuses before the batch is paid for.
    cfg = dataclasses.replace(config(cache_dir, server.url, provider), min_free_disk_mb=2.0**40)
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
        with pytest.raises(DiskSpaceLow) as refused:
            client.run(questions(provider, range(4)))
    api = server.batch_apis[provider]
    assert (api.calls["upload"], api.calls["create"], paid(server, provider)) == (0, 0, 0)
    assert stored_jobs(cache_dir) == []
    message = str(refused.value)
    assert "bytes free" in message and "llm.min_free_disk_mb" in message
    # Not asked as ordinary calls either (batch_fallback: call is for a batch that failed).
    rows = read_ledgers([ledger_path])
    assert list(rows["outcome"]) == ["failed"] * 4 and (rows["attempts"] == 0).all()


def _killed_job(cache_dir, ledger_path, url, provider, numbers):
    script = cache_dir.parent / "job.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from batch_setup import config, questions
        from rubriclab.llm import Ledger, LLMClient

        with LLMClient(config(Path({str(cache_dir)!r}), {url!r}, {provider!r}),
                       ledger=Ledger(Path({str(ledger_path)!r}), "judge")) as client:
            client.run(questions({provider!r}, {list(numbers)!r}))
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


@pytest.mark.long
def test_the_requests_of_a_batch_a_killed_job_paid_for_are_on_its_bill(tmp_path, server):
    provider = "openai"
    cache_dir = tmp_path / "cache"
    ledger_path = tmp_path / "results" / "ledger" / "judge.jsonl"
    api = server.batch_apis[provider]
    api.hold = True  # the batch stays in progress while the job polls it
    job = _killed_job(cache_dir, ledger_path, server.url, provider, range(5))
    kill_while_it_polls(api, job)
    job.stdout.close()
    # Journaled as sent before the batch was paid for, each request once, with the stage's
    # attempts journal where its cost belongs.
    journals = list(journal_dir(cache_dir / "llm_cache.sqlite").glob("*.jsonl"))
    sent = [r for path in journals for r in read_records(path.read_bytes(), path)
            if r["t"] == "sent"]
    with LLMClient(config(cache_dir, server.url, provider)) as keys:
        expected = {keys.key_for(keys.prepare(r)) for r in questions(provider, range(5))}
    assert sorted(r["key"] for r in sent) == sorted(expected)
    assert {(r["model"], r["attempts"]) for r in sent} == {
        (MODELS[provider], str(attempts_path(ledger_path).absolute()))}
    # The next cache to open takes the journal over: the five are on the stage's bill.
    SQLiteCache(cache_dir / "llm_cache.sqlite").close()
    billed = read_ledgers([attempts_path(ledger_path)])
    assert sorted(billed["key"]) == sorted(expected)
    assert set(billed["outcome"]) == {PAID_UNKNOWN}
    assert paid(server, provider) == 0  # held: the server has answered none of them yet


def _killed_while_its_batch_runs(tmp_path, server, provider, n):
    """A job asking n requests in one batch, killed while the batch runs; its answer journal
    then taken over by the next cache to open (its requests billed as paid-unknown). Returns
    the cache folder, the job's ledger and the provider's batch API (still holding)."""
    cache_dir = tmp_path / "cache"
    ledger_path = tmp_path / "results" / "ledger" / "judge.jsonl"
    api = server.batch_apis[provider]
    api.hold = True
    kill_while_it_polls(api, _killed_job(cache_dir, ledger_path, server.url, provider,
                                         range(n)))
    SQLiteCache(cache_dir / "llm_cache.sqlite").close()
    return cache_dir, ledger_path, api


@pytest.mark.long
def test_a_killed_jobs_batch_collected_by_the_rerun_is_one_call_on_the_bill(tmp_path, server):
    """The killed job's five requests are on the bill as paid-unknown until the rerun reads
    their answers from that same batch: then they are five calls at the batch's cost, not five
    of unknown cost plus five more."""
    provider = "openai"
    cache_dir, ledger_path, api = _killed_while_its_batch_runs(tmp_path, server, provider, 5)
    before = summarize(read_ledgers([ledger_path]), read_earlier_attempts([ledger_path]))
    assert (before["earlier_calls"].sum(), before["earlier_cost_unknown_calls"].sum()) == (5, 5)

    api.hold = False
    with LLMClient(config(cache_dir, server.url, provider),
                   ledger=Ledger(ledger_path, "judge")) as client:
        assert all(a.batch and not a.cached for a in client.run(questions(provider, range(5))))
    assert api.calls["create"] == 1 and paid(server, provider) == 5
    ledger, attempts = read_ledgers([ledger_path]), read_earlier_attempts([ledger_path])
    assert (attempts["outcome"] == PAID_UNKNOWN).sum() == 5  # the journal keeps its rows
    after = summarize(ledger, attempts)
    assert after["uncached_calls"].sum() == after["batch_calls"].sum() == 5
    assert (after["earlier_calls"].sum(), after["earlier_cost_unknown_calls"].sum()) == (0, 0)
    assert calls_per_distinct_request(ledger, attempts) == (5, 5)


@pytest.mark.long
def test_a_killed_jobs_batch_that_is_gone_stays_on_the_bill_beside_the_calls_after_it(
        tmp_path, server):
    """Where the rerun cannot read the killed job's batch (the provider no longer knows it) and
    pays ordinary calls instead (batch_fallback: call), that batch may have been answered and
    billed too: its paid-unknown rows still count."""
    provider = "openai"
    cache_dir, ledger_path, api = _killed_while_its_batch_runs(tmp_path, server, provider, 3)
    api.batches.clear()  # deleted, or past the provider's retention
    cfg = config(cache_dir, server.url, provider, batch_fallback="call")
    with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
        assert all(a.outcome == "ok" and not a.batch
                   for a in client.run(questions(provider, range(3))))
    assert paid(server, provider) == 3
    ledger, attempts = read_ledgers([ledger_path]), read_earlier_attempts([ledger_path])
    summary = summarize(ledger, attempts)
    assert summary["uncached_calls"].sum() == 3 and summary["batch_calls"].sum() == 0
    assert (summary["earlier_calls"].sum(), summary["earlier_cost_unknown_calls"].sum()) == (3, 3)
    assert calls_per_distinct_request(ledger, attempts) == (6, 3)
