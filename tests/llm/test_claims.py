"""One payment per distinct request: in-flight claims in the cache, across processes."""

import json
import multiprocessing
import os
import subprocess
import sys
import time

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import make_answer

from .openai_stub import ScriptedOpenAIServer


def ask(text, model="fake/hash"):
    return Request.chat(model, [{"role": "user", "content": text}], response_format="yes_no")


def same_requests(cache_dir, cache_url, api_base, n, go, out):
    """One of the two processes: `n` requests, the same as its twin's, against one cache."""
    settings = ModelSettings(api_base=api_base, concurrency=4, timeout_s=10, num_retries=0,
                             placeholder_api_key=True)
    requests = [Request.chat("openai/stub-model", [{"role": "user", "content": f"q{i}"}],
                             response_format="yes_no", max_tokens=4) for i in range(n)]
    with LLMClient(LLMConfig(cache_dir=cache_dir, cache_url=cache_url,
                             defaults=settings)) as client:
        client.backends.litellm  # set up before the start, so that both start together
        go.wait(timeout=120)
        answers = client.run(requests)
    out.put({"cached": sum(a.cached for a in answers), "texts": [a.text for a in answers]})


def test_two_processes_making_the_same_50_requests_pay_50(tmp_path, backend):
    # Processes forked from a fresh single-threaded server that has imported litellm once:
    # they start at once (no import each) and inherit no thread of this test process.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["rubriclab.llm", "litellm"])
    go, out = context.Event(), context.Queue()
    with ScriptedOpenAIServer([], then="Yes", delay_s=0.02) as server:
        workers = [context.Process(target=same_requests,
                                   args=(tmp_path / "cache", backend.url(tmp_path / "cache"),
                                         server.api_base, 50, go, out))
                   for _ in range(2)]
        for worker in workers:
            worker.start()
        go.set()
        outs = [out.get(timeout=120) for _ in workers]
        for worker in workers:
            worker.join(timeout=30)
        calls = len(server.requests)
    assert [w.exitcode for w in workers] == [0, 0]
    distinct = len({json.dumps(r["messages"]) for r in server.requests})
    assert distinct == 50
    assert calls / distinct == 1.0  # 50 calls made for 50 distinct requests
    assert outs[0]["texts"] == outs[1]["texts"] == ["Yes"] * 50
    assert outs[0]["cached"] + outs[1]["cached"] == 50  # each answer paid once, then shared


def test_one_batch_asking_one_request_twice_pays_once(tmp_path, monkeypatch, backend):
    log_path = tmp_path / "calls.log"
    monkeypatch.setenv("RUBRICLAB_FAKE_CALL_LOG", str(log_path))
    cfg = backend.config(tmp_path, defaults=ModelSettings(concurrency=4))
    requests = [ask("same?", "fake/hash?delay_s=0.2")] * 3 + [ask("other?", "fake/hash?delay_s=0.2")]
    with LLMClient(cfg) as client:
        answers = client.run(requests)
    assert len(log_path.read_text().split()) == 2
    assert [a.cached for a in answers] == [False, True, True, False]


def test_a_live_claim_is_waited_for_and_its_answer_served(tmp_path, monkeypatch, backend):
    log_path = tmp_path / "calls.log"
    monkeypatch.setenv("RUBRICLAB_FAKE_CALL_LOG", str(log_path))
    cfg = backend.config(tmp_path)
    request = ask("q")
    with LLMClient(cfg) as client, backend.open(tmp_path) as other:
        key = client.key_for(request)
        assert other.claim(key, "other-process", lease_s=30).claimed

        async def answer_later():
            import asyncio

            await asyncio.sleep(0.5)
            other.put(make_answer(key, request, "Yes", 1, 1, 0.0, "fake-v1"))
            other.release(key, "other-process")

        original = client._run

        async def run_with_other(requests, label):
            import asyncio

            task = asyncio.create_task(answer_later())
            result = await original(requests, label)
            await task
            return result

        monkeypatch.setattr(client, "_run", run_with_other)
        started = time.monotonic()
        (answer,) = client.run([request])
    assert answer.cached and answer.parsed == "yes" and time.monotonic() - started >= 0.5
    assert not log_path.exists()


def test_a_claim_whose_holder_died_is_taken_over_at_once_on_one_machine(tmp_path):
    # SQLite only: its claims are of processes on this machine, whose pids can be checked.
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with SQLiteCache(tmp_path / "c.sqlite") as cache:
        cache._db.execute("INSERT INTO claims VALUES (?, ?, ?, ?, ?)",
                          ("k", "dead-owner", __import__("socket").gethostname(), dead.pid,
                           time.time() + 3600))
        assert cache.claim("k", "me", lease_s=30).claimed


def test_a_claim_whose_lease_ran_out_is_taken_over(tmp_path, backend):
    with backend.open(tmp_path / "c.sqlite") as cache:
        assert cache.claim("k", "first", lease_s=0.2).claimed
        held = cache.claim("k", "second", lease_s=30)
        assert not held.claimed and f"process {os.getpid()}" in held.holder
        time.sleep(0.3)
        assert cache.claim("k", "second", lease_s=30).claimed


def run_while_another_tries_to_claim(client, request, backend, tmp_path, tries):
    """`client` answers `request` while another cache tries to claim its key every 0.15 s,
    `tries` times; the answer, and the claims the other got."""
    import threading

    key = client.key_for(request)
    seen = []

    def watch():
        with backend.open(tmp_path) as other:
            for _ in range(tries):
                time.sleep(0.15)
                seen.append(other.claim(key, "other", lease_s=30))

    watcher = threading.Thread(target=watch)
    watcher.start()
    (answer,) = client.run([request])
    watcher.join()
    return answer, seen


def test_a_holder_renews_its_lease_while_it_works(tmp_path, backend):
    cfg = backend.config(tmp_path)
    request = ask("slow", "fake/hash?delay_s=1.0")
    with LLMClient(cfg) as client:
        client.claim_lease_s = 0.3  # renewed every 0.1 s; without renewal it ends at 0.3 s
        answer, seen = run_while_another_tries_to_claim(client, request, backend, tmp_path,
                                                        tries=6)
    assert answer.outcome == "ok" and not answer.cached
    assert all(not c.claimed for c in seen[:5])  # never taken while the holder worked


def test_a_holder_whose_event_loop_is_busy_past_its_lease_keeps_its_claims(tmp_path, monkeypatch,
                                                                          backend):
    """Claiming hundreds of keys and building a batch's file kept a job's event loop busy for
    39 s on a loaded machine, past the 30-s lease: another process took its claims over and
    paid again. The leases are renewed from a thread of their own."""
    from rubriclab.llm.backends import RawAnswer

    cfg = backend.config(tmp_path)
    request = ask("busy", "fake/hash")
    with LLMClient(cfg) as client:
        client.claim_lease_s = 0.3  # renewed every 0.1 s; without renewal it ends at 0.3 s

        async def blocking_complete(request, messages, settings):
            time.sleep(1.0)  # holds the event loop, as synchronous work in it does
            return RawAnswer("Yes", 3, 1, 0.0)

        monkeypatch.setattr(client.backends, "complete", blocking_complete)
        answer, seen = run_while_another_tries_to_claim(client, request, backend, tmp_path,
                                                        tries=5)
    assert answer.outcome == "ok" and answer.text == "Yes"
    assert len(seen) == 5 and not any(c.claimed for c in seen)


def test_waiting_for_a_holder_that_never_answers_is_bounded(tmp_path, monkeypatch, backend):
    cfg = backend.config(tmp_path, defaults=ModelSettings(deadline_s=0.5))
    request = ask("q")
    with LLMClient(cfg) as client, backend.open(tmp_path) as other:
        client.claim_lease_s = 0.5  # waits at most deadline + 2 leases: 1.5 s
        other.claim(client.key_for(request), "stuck-but-alive", lease_s=3600)
        started = time.monotonic()
        (answer,) = client.run([request], raise_on_failure=False)
    assert answer.outcome == "failed" and "WaitedTooLong" in answer.error
    assert 1.5 <= time.monotonic() - started < 4.0


def test_an_answer_another_process_stored_first_is_the_one_served(tmp_path, monkeypatch,
                                                                   backend):
    """A holder whose lease ran out (its loop blocked past it) while another process took the
    claim over, paid and stored first: both serve the stored answer, so two runs on one cache
    go on from the same answer; the holder's own call stays on its bill."""
    log_path = tmp_path / "calls.log"
    monkeypatch.setenv("RUBRICLAB_FAKE_CALL_LOG", str(log_path))
    request = ask("q", "fake/hash?delay_s=0.5")
    with LLMClient(backend.config(tmp_path / "alone")) as alone:
        (own,) = alone.run([request])  # what this client is answered
    stored = "No" if own.text == "Yes" else "Yes"
    log_path.unlink()
    with LLMClient(backend.config(tmp_path)) as client, backend.open(tmp_path) as other:
        key = client.key_for(request)
        original = client._run

        async def run_while_another_stores(requests, label):
            import asyncio

            async def store_first():
                await asyncio.sleep(0.2)  # while this client's call is in flight
                other.put(make_answer(key, request, stored, 1, 1, 0.0, "fake-v1"))

            task = asyncio.create_task(store_first())
            result = await original(requests, label)
            await task
            return result

        monkeypatch.setattr(client, "_run", run_while_another_stores)
        (answer,) = client.run([request])
        assert client.cache.get(key).text == stored
    assert answer.text == stored and answer.parsed == stored.lower()
    assert not answer.cached and answer.attempts == 1  # asked and paid here all the same
    assert len(log_path.read_text().split()) == 1


def test_litellm_is_imported_before_any_claim_is_held(tmp_path, monkeypatch, backend):
    """Importing litellm takes seconds, minutes on a loaded machine, and blocks the loop that
    renews the leases: done while a claim was held, the lease ran out and another process paid
    for the same request (the two-invocation cluster rehearsal, 15 requests paid twice)."""
    import rubriclab.llm.backends as backends_module

    real_import = backends_module.import_litellm
    held_at_import = []
    with ScriptedOpenAIServer([], then="Yes") as server:
        settings = ModelSettings(api_base=server.api_base, placeholder_api_key=True,
                                 num_retries=0, timeout_s=10)
        with LLMClient(backend.config(tmp_path, defaults=settings)) as client:
            def recording_import():
                held_at_import.append(set(client._held))
                return real_import()

            monkeypatch.setattr(backends_module, "import_litellm", recording_import)
            client.backends._litellm = None
            (answer,) = client.run([Request.chat("openai/stub-model",
                                                 [{"role": "user", "content": "q"}],
                                                 response_format="yes_no", max_tokens=4)])
    assert answer.outcome == "ok" and not answer.cached
    assert held_at_import == [set()]
