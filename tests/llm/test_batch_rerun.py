"""A stored batch that has not ended is collected before any of its requests is sent again,
whatever the rerun's misses; its answers serve the requests it holds, asked now or later."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from rubriclab.llm import Ledger, LLMClient

from .batch_setup import env_keys, server  # noqa: F401  (fixtures)
from .batch_setup import MODELS, config, paid, questions, stored_jobs


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
    try:
        deadline = time.monotonic() + 90
        while api.calls["retrieve"] < 2 and time.monotonic() < deadline:
            assert job.poll() is None, job.stdout.read().decode()
            time.sleep(0.05)
        assert api.calls["create"] == 1, "the job never submitted its batch"
    finally:
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
    assert job.returncode == -signal.SIGKILL
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
