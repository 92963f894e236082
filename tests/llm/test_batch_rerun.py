"""A stored batch that has not ended is collected before any of its requests is sent again,
whatever the rerun's misses; its answers serve the requests it holds, asked now or later."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rubriclab.llm import Ledger, LLMClient
from rubriclab.llm.cache_records import make_answer

from .batch_setup import env_keys, server  # noqa: F401  (fixtures)
from .batch_setup import MODELS, config, kill_while_it_polls, paid, questions, stored_jobs

# Jobs killed while they poll: the long lane (make test-long).
pytestmark = pytest.mark.long


def _job(cache_dir, url, provider, numbers):
    script = cache_dir.parent / "job.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from pathlib import Path
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from batch_setup import config, questions
        from rubriclab.llm import LLMClient

        with LLMClient(config(Path({str(cache_dir)!r}), {url!r}, {provider!r})) as client:
            client.run(questions({provider!r}, {list(numbers)!r}))
        print("finished")
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)


def _kill_while_polling(cache_dir, server, provider, numbers):
    api = server.batch_apis[provider]
    api.hold = True  # the batch stays in progress while the job polls it
    job = _job(cache_dir, server.url, provider, numbers)
    kill_while_it_polls(api, job)
    (stored,) = stored_jobs(cache_dir)
    assert stored.requests == len(numbers) and stored.status not in ("completed", "collected")
    api.hold = False


def test_a_rerun_with_more_misses_after_a_kill_while_polling_pays_each_request_once(
        tmp_path, server):
    """Killed (SIGKILL) while its batch of 20 was polled; the rerun misses 21: 15 of the 20
    (a neighbour answered the others, or the config changed) and 6 new. The stored batch is
    collected and only the 6 are batched anew; the 5 answers it gave that the rerun did not
    ask are kept for the run that does."""
    provider = "openai"
    cache_dir = tmp_path / "cache"
    _kill_while_polling(cache_dir, server, provider, range(20))
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(cache_dir, server.url, provider),
                   ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions(provider, range(5, 26)))
    assert [a.outcome for a in answers] == ["ok"] * 21 and all(a.batch for a in answers)
    api = server.batch_apis[provider]
    assert api.calls["create"] == 2  # the stored batch, and one for the new misses
    assert paid(server, provider) == server.stats.batch_rows[provider] == 26
    jobs = stored_jobs(cache_dir)
    assert sorted(j.requests for j in jobs) == [6, 20]
    assert {j.status for j in jobs} == {"collected"}
    rows = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    assert len(rows) == 21 and all(r["batch"] and r["cost_usd"] > 0 for r in rows)

    with LLMClient(config(cache_dir, server.url, provider)) as client:
        again = client.run(questions(provider, range(26)))
    assert [a.outcome for a in again] == ["ok"] * 26
    assert paid(server, provider) == 26 and api.calls["create"] == 2
    fresh = [n for n, a in enumerate(again) if not a.cached]
    assert fresh == [0, 1, 2, 3, 4] and all(again[n].batch for n in fresh)


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_batch_a_run_gave_up_on_is_collected_by_a_rerun_with_other_misses(tmp_path, server,
                                                                          provider):
    api = server.batch_apis[provider]
    api.hold = True
    cache_dir = tmp_path / "cache"
    with LLMClient(config(cache_dir, server.url, provider, batch_max_wait_s=0.2)) as client:
        answers = client.run(questions(provider, range(6)), raise_on_failure=False)
    assert all(a.outcome == "failed" and "still" in a.error for a in answers)
    assert paid(server, provider) == 0
    api.hold = False
    # A neighbour answered two of them meanwhile, and the config asks two more.
    with LLMClient(config(cache_dir, server.url, provider)) as client:
        answers = client.run(questions(provider, [0, 2, 3, 5, 6, 7]))
    assert [a.outcome for a in answers] == ["ok"] * 6 and all(a.batch for a in answers)
    assert api.calls["create"] == 2 and paid(server, provider) == 8
    assert sorted(j.requests for j in stored_jobs(cache_dir)) == [2, 6]
    # The two the rerun did not ask come from the stored batch's answers.
    with LLMClient(config(cache_dir, server.url, provider)) as client:
        answers = client.run(questions(provider, [1, 4]))
    assert all(a.outcome == "ok" and a.batch and not a.cached for a in answers)
    assert api.calls["create"] == 2 and paid(server, provider) == 8


def _gave_up_on(cache_dir, server, provider, numbers):
    """A run that stopped waiting (batch_max_wait_s) for its batch, which stays in progress."""
    server.batch_apis[provider].hold = True
    with LLMClient(config(cache_dir, server.url, provider, batch_max_wait_s=0.2)) as client:
        answers = client.run(questions(provider, numbers), raise_on_failure=False)
    assert all(a.outcome == "failed" and "still" in a.error for a in answers)
    assert paid(server, provider) == 0
    server.batch_apis[provider].hold = False


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_rerun_with_batch_turned_off_collects_the_stored_batch_first(tmp_path, server,
                                                                       provider):
    """batch: false after a stored batch of 6 that had not ended: the rerun of those 6 and 2
    more collects the batch (6 batch rows at the server) and asks only the 2 others as
    ordinary calls; no new batch, each request paid once."""
    cache_dir = tmp_path / "cache"
    _gave_up_on(cache_dir, server, provider, range(6))
    api = server.batch_apis[provider]
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(cache_dir, server.url, provider, batch=False),
                   ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(questions(provider, range(8)))
    assert [a.outcome for a in answers] == ["ok"] * 8
    assert [a.batch for a in answers] == [True] * 6 + [False] * 2
    assert paid(server, provider) == 8 and server.stats.batch_rows[provider] == 6
    assert api.calls["create"] == 1  # the stored batch only
    assert [j.status for j in stored_jobs(cache_dir)] == ["collected"]
    rows = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    assert len(rows) == 8 and all(r["cost_usd"] > 0 for r in rows)


def test_a_rerun_with_batch_turned_off_is_served_the_kept_answers(tmp_path, server):
    """The stored batch of 6 collected by a batched run that asked 4 of them; with batch off,
    a run asking the other 2 gets the answers kept for them, paying nothing."""
    provider = "openai"
    cache_dir = tmp_path / "cache"
    _gave_up_on(cache_dir, server, provider, range(6))
    with LLMClient(config(cache_dir, server.url, provider)) as client:
        client.run(questions(provider, [0, 2, 3, 5]))
    assert paid(server, provider) == 6 and _kept(cache_dir) == 2
    with LLMClient(config(cache_dir, server.url, provider, batch=False)) as client:
        answers = client.run(questions(provider, [1, 4]))
    assert all(a.outcome == "ok" and a.batch and not a.cached for a in answers)
    assert paid(server, provider) == 6 and _kept(cache_dir) == 0


def _kept(cache_dir):
    from rubriclab.llm.batch_store import BatchStore

    store = BatchStore(cache_dir / BatchStore.FILE_NAME)
    try:
        return store.kept_count()
    finally:
        store.close()


def test_kept_answers_are_removed_once_cached_and_stay_until_then(tmp_path, server,
                                                                  monkeypatch):
    """batch_answers is cleaned: an answer kept for a request the collecting run did not ask
    stays stored until it is cached (a run killed in between loses it not, nor pays again),
    is removed once it is, and one whose request another job answered is removed too."""
    from rubriclab.llm.cache import SQLiteCache

    provider = "openai"
    cache_dir = tmp_path / "cache"
    _gave_up_on(cache_dir, server, provider, range(6))
    with LLMClient(config(cache_dir, server.url, provider)) as client:
        client.run(questions(provider, [0, 1, 2, 3]))
    assert paid(server, provider) == 6 and _kept(cache_dir) == 2  # for 4 and 5

    # Killed as the kept answer of 4 is cached: it stays kept, so the rerun is served it.
    original_put = SQLiteCache.put

    def killed_at_put(store, answer):
        raise KeyboardInterrupt("killed before the answer was cached")

    monkeypatch.setattr(SQLiteCache, "put", killed_at_put)
    with pytest.raises(KeyboardInterrupt):
        with LLMClient(config(cache_dir, server.url, provider)) as client:
            client.run(questions(provider, [4]))
    monkeypatch.setattr(SQLiteCache, "put", original_put)
    assert _kept(cache_dir) == 2
    with LLMClient(config(cache_dir, server.url, provider)) as client:
        (answer,) = client.run(questions(provider, [4]))
    assert answer.outcome == "ok" and answer.batch and not answer.cached
    assert paid(server, provider) == 6 and _kept(cache_dir) == 1

    # 5 is answered by another job (here: its answer put in the cache as a job would);
    # the next batched run removes its kept answer, asked or not.
    with LLMClient(config(cache_dir, server.url, provider)) as client:
        (five,) = questions(provider, [5])
        key = client.key_for(client.prepare(five))
        client.cache.put(make_answer(key, client.prepare(five), "Yes", 3, 1, 0.0,
                                     client.backends.fingerprint(five.model)))
        client.run(questions(provider, [6]))
    assert _kept(cache_dir) == 0 and paid(server, provider) == 7
