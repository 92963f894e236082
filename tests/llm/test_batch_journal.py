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
from rubriclab.llm.cache import DiskSpaceLow, SQLiteCache
from rubriclab.llm.journal import journal_dir, read_records
from rubriclab.llm.ledger import PAID_UNKNOWN, attempts_path, read_ledgers

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
