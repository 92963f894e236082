"""No paid answer lost: the answer journal (a write lock held past the busy timeout, a full
disk, a killed process), and the free-space check before paying. Calls are counted at a
loopback server."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.cache_records import DiskSpaceLow
from rubriclab.llm.journal import journal_dir, read_records
from rubriclab.llm.ledger import (Ledger, attempts_path, calls_per_distinct_request,
                                  read_ledgers, summarize)

from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"


def ask(text):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def config(cache_dir, server, backend=None, **llm):
    settings = ModelSettings(api_base=server.api_base, placeholder_api_key=True, timeout_s=20,
                             num_retries=0, concurrency=1)
    if backend is not None:
        return backend.config(cache_dir, defaults=settings, **llm)
    return LLMConfig(cache_dir=cache_dir, defaults=settings, **llm)


def journaled_answers(cache_path, backend=None):
    keys = set()
    folder = journal_dir(cache_path) if backend is None else backend.journal_dir(cache_path)
    for path in folder.glob("*.jsonl"):
        keys |= {r["row"]["key"] for r in read_records(path.read_bytes(), path)
                 if r["t"] == "answer"}
    return keys


def stored_keys(cache_path):
    db = sqlite3.connect(cache_path)
    try:
        return {key for (key,) in db.execute("SELECT key FROM answers")}
    finally:
        db.close()


def test_a_write_lock_held_past_the_busy_timeout_loses_no_paid_answer(tmp_path, backend):
    cache_dir = tmp_path / "cache"
    holder = {}

    def lock_the_cache(number):
        # While the first call is in flight, another process takes the write lock and keeps it.
        if number == 1:
            holder["release"] = backend.take_write_lock(cache_dir)

    requests = [ask("first?"), ask("second?")]
    with ScriptedOpenAIServer([], then="Yes", on_request=lock_the_cache) as server:
        cfg = config(cache_dir, server, backend)
        store = backend.open(cache_dir, busy_timeout_s=0.2)
        ledger = Ledger(tmp_path / "ledger.jsonl", "judge")
        with LLMClient(cfg, cache=store, ledger=ledger) as client:
            keys = [client.key_for(client.prepare(r)) for r in requests]
            answers = client.run(requests, raise_on_failure=False)
        # The first was paid and answered; the database never took it (the lock outlasted
        # the busy timeout at every try), the journal holds it. The second could not be
        # claimed under the lock: failed before it was paid for.
        assert [a.outcome for a in answers] == ["ok", "failed"]
        assert answers[0].text == "Yes" and not answers[0].cached
        assert answers[1].error.startswith("CacheUnwritable") and answers[1].attempts == 0
        assert len(server.requests) == 1
        assert backend.stored_keys(cache_dir).isdisjoint(keys)
        assert journaled_answers(cache_dir, backend) == {keys[0]}

        holder["release"]()
        with LLMClient(cfg, ledger=Ledger(tmp_path / "rerun.jsonl", "judge")) as rerun:
            again = rerun.run(requests)
        assert [a.cached for a in again] == [True, False]
        assert [a.text for a in again] == ["Yes", "Yes"]
        assert len(server.requests) == 2  # each paid once
    assert set(keys) <= backend.stored_keys(cache_dir)
    assert not list(backend.journal_dir(cache_dir).glob("*.jsonl"))  # taken and deleted


def test_an_answer_the_locked_database_refused_is_stored_at_the_next_write(tmp_path, backend):
    from rubriclab.llm.cache_records import make_answer

    with backend.open(tmp_path, busy_timeout_s=0.1) as store:
        with backend.write_lock(tmp_path):
            store.put(make_answer("a" * 64, ask("a"), "Yes", 3, 1, 0.01, "fp"))
            assert store.get("a" * 64).text == "Yes"  # served while the database refuses it
            assert backend.stored_keys(tmp_path) == set()
        store.put(make_answer("b" * 64, ask("b"), "No", 3, 1, 0.01, "fp"))
        assert backend.stored_keys(tmp_path) == {"a" * 64, "b" * 64}
        journal_file = store._journal.path
    assert not journal_file.exists()  # nothing outstanding: deleted at close


def test_no_paid_call_starts_without_the_free_space_it_needs(tmp_path, backend):
    with ScriptedOpenAIServer([], then="Yes") as server:
        # More free space than any disk has: the check refuses before the first call.
        cfg = config(tmp_path / "cache", server, backend, min_free_disk_mb=2.0**40)
        with LLMClient(cfg) as client:
            with pytest.raises(DiskSpaceLow) as refused:
                client.run([ask("q1"), ask("q2")])
        assert len(server.requests) == 0
    message = str(refused.value)
    assert message.split(" has ")[0].endswith(str(tmp_path / "cache"))
    assert "bytes free" in message and "llm.min_free_disk_mb" in message


@pytest.fixture
def small_disk(tmp_path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (mount: {done.stderr.strip()}); the "
                    "full-disk test needs one (run it as root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder):
    """Write a file until the disk refuses (ENOSPC)."""
    chunk = b"\0" * (64 << 10)
    with open(folder / "filler", "wb") as out:
        for _ in range(100_000):
            try:
                out.write(chunk)
                out.flush()
            except OSError:
                break


def test_a_disk_that_fills_while_a_call_is_in_flight_loses_no_paid_answer(tmp_path, small_disk):
    cache_dir = small_disk / "cache"
    cache_path = cache_dir / "llm_cache.sqlite"

    def fill_during_the_second(number):
        if number == 2:
            fill(small_disk)

    requests = [ask(f"q{i}?") for i in range(4)]
    with ScriptedOpenAIServer([], then="Yes", on_request=fill_during_the_second) as server:
        cfg = config(cache_dir, server, min_free_disk_mb=1.0)
        ledger = Ledger(tmp_path / "ledger.jsonl", "judge")  # on a disk with room
        with LLMClient(cfg, ledger=ledger) as client:
            keys = [client.key_for(client.prepare(r)) for r in requests]
            with pytest.raises(DiskSpaceLow) as stopped:
                client.run(requests)
        # The second answer arrived on a full disk; the third was never paid for.
        assert len(server.requests) == 2
        assert str(cache_dir) in str(stopped.value)
        assert set(keys[:2]) <= stored_keys(cache_path) | journaled_answers(cache_path)

        (small_disk / "filler").unlink()
        with LLMClient(cfg, ledger=Ledger(tmp_path / "rerun.jsonl", "judge")) as rerun:
            again = rerun.run(requests)
        assert [a.cached for a in again] == [True, True, False, False]
        assert len(server.requests) == 4  # each request paid once
    assert set(keys) <= stored_keys(cache_path)


KILLED = textwrap.dedent("""
    import sys
    from pathlib import Path
    from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
    from rubriclab.llm.ledger import Ledger

    api_base, cache_dir, ledger, cache_url = sys.argv[1:5]
    settings = ModelSettings(api_base=api_base, placeholder_api_key=True, timeout_s=120,
                             num_retries=0)
    cfg = LLMConfig(cache_dir=Path(cache_dir), cache_url=cache_url or None, defaults=settings)
    with LLMClient(cfg, ledger=Ledger(Path(ledger), "judge")) as client:
        # A short lease: on PostgreSQL (no pid check) the rerun waits for it to run out.
        client.claim_lease_s = 3.0
        client.run([Request.chat("openai/stub-model", [{"role": "user", "content": "slow?"}],
                                 response_format="yes_no", max_tokens=4)])
""")


def run_until(args, ready, env=None):
    """Start a Python process and wait (bounded: 120 s) until `ready()`; then kill it (-9)."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    job = subprocess.Popen([sys.executable, *map(str, args)], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    try:
        for _ in range(1200):
            if ready(job) or job.poll() is not None:
                break
            time.sleep(0.1)
        assert job.poll() is None, job.stderr.read().decode()[-3000:]
        os.kill(job.pid, signal.SIGKILL)
        job.wait(timeout=30)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait(timeout=30)
        job.stdout.close()
        job.stderr.close()


@pytest.mark.long
def test_a_killed_process_calls_in_flight_are_billed_as_paid_unknown(tmp_path, backend):
    cache_dir = tmp_path / "cache"
    ledger_path = tmp_path / "ledger" / "judge.jsonl"
    script = tmp_path / "killed.py"
    script.write_text(KILLED)

    def first_is_slow(number):
        if number == 1:
            time.sleep(30)  # in flight when its process is killed

    with ScriptedOpenAIServer([], then="Yes", on_request=first_is_slow) as server:
        run_until([script, server.api_base, cache_dir, ledger_path,
                   backend.url(cache_dir) or ""], lambda job: bool(server.requests))
        journal = attempts_path(ledger_path)
        assert not journal.exists() or journal.read_text() == ""  # it recorded nothing
        assert list(backend.journal_dir(cache_dir).glob("*.jsonl"))

        # The rerun's cache takes the journal over: the killed call is on the bill.
        cfg = config(cache_dir, server, backend)
        with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as rerun:
            [answer] = rerun.run([ask("slow?")])
        assert answer.outcome == "ok" and not answer.cached
        assert len(server.requests) == 2
    earlier = read_ledgers([journal])
    assert list(earlier["outcome"]) == ["paid-unknown", "ok"]
    assert earlier["cost_usd"].isna().all()  # a paid call of unknown price, and the rerun's
    summary = summarize(read_ledgers([ledger_path]), earlier).iloc[0]
    assert (summary["earlier_calls"], summary["earlier_cost_unknown_calls"]) == (1, 1)
    assert calls_per_distinct_request(read_ledgers([ledger_path]), earlier) == (2, 1)
    assert not list(backend.journal_dir(cache_dir).glob("*.jsonl"))

    backend.open(cache_dir).close()  # taken once, billed once
    assert len(read_ledgers([journal])) == 2


KILLED_AFTER_PUT = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from rubriclab.llm.cache import SQLiteCache
    from rubriclab.llm.cache_records import make_answer
    from rubriclab.llm.cache_pg import PostgresCache
    from rubriclab.llm.request import Request

    if len(sys.argv) > 2:  # a PostgreSQL cache: its URL and the folder of its journals
        store = PostgresCache(sys.argv[2], local_dir=Path(sys.argv[1]), busy_timeout_s=0.1)
    else:
        store = SQLiteCache(sys.argv[1], busy_timeout_s=0.1)
    request = Request.chat("openai/stub-model", [{"role": "user", "content": "q"}])
    store.put(make_answer("a" * 64, request, "Yes", 3, 1, 0.01, "fp"))
    assert store.get("a" * 64).text == "Yes"  # served from memory meanwhile
    print("journaled", flush=True)
    time.sleep(120)
""")


def test_an_answer_journaled_and_never_stored_is_stored_by_the_next_open(tmp_path, backend):
    """A process that got an answer while the database was locked, then was killed: its
    journal gives the answer to the next process that opens the cache."""
    cache_path = tmp_path / "llm_cache.sqlite"
    script = tmp_path / "killed.py"
    script.write_text(KILLED_AFTER_PUT)
    if backend.server is None:
        args = [script, cache_path]
    else:
        args = [script, backend.config(tmp_path).local_dir, backend.url(cache_path)]
    lines = []
    with backend.write_lock(cache_path):
        run_until(args,
                  lambda job: lines.append(job.stdout.readline()) or b"journaled" in lines[-1])
    assert "a" * 64 not in backend.stored_keys(cache_path)
    assert journaled_answers(cache_path, backend) == {"a" * 64}
    with backend.open(cache_path) as reopened:
        assert reopened.get("a" * 64).text == "Yes"
    assert "a" * 64 in backend.stored_keys(cache_path)
    assert not list(backend.journal_dir(cache_path).glob("*.jsonl"))


def test_a_long_journal_moves_what_is_outstanding_to_a_new_file(tmp_path, monkeypatch, backend):
    """Past COMPACT_BYTES the journal starts a new file with the answers not yet stored (and
    requests not yet closed): nothing outstanding is left behind, nothing stored is carried."""
    from rubriclab.llm import journal
    from rubriclab.llm.cache_records import make_answer

    monkeypatch.setattr(journal, "COMPACT_BYTES", 8 << 10)
    monkeypatch.setattr(journal, "RESERVE_BYTES", 16 << 10)
    cache_path = tmp_path / "llm_cache.sqlite"
    with backend.open(cache_path, busy_timeout_s=0.05) as store:
        for i in range(40):  # stored at once: nothing outstanding
            store.put(make_answer(f"{i:064x}", ask(f"s{i}"), "Yes " * 40, 3, 1, 0.01, "fp"))
        store.journal_sent("f" * 64, MODEL, None, "judge", "run-1")
        release = backend.take_write_lock(cache_path)
        locked = [f"{i:064x}" for i in range(100, 140)]
        for key in locked:
            store.put(make_answer(key, ask(key), "No " * 40, 3, 1, 0.01, "fp"))
        [current] = store.journal_dir.glob("*.jsonl")
        records = read_records(current.read_bytes(), current)
        answers = {r["row"]["key"] for r in records if r["t"] == "answer"}
        assert set(locked) <= answers  # every answer the database refused, in one file
        assert not answers & {f"{i:064x}" for i in range(10)}  # stored, and compacted away
        assert {r["key"] for r in records if r["t"] == "sent"} == {"f" * 64}
        release()
        store.journal_closed("f" * 64)
    assert set(locked) <= backend.stored_keys(cache_path)
    assert not list(backend.journal_dir(cache_path).glob("*.jsonl"))


@pytest.mark.parametrize("value", [-1, "lots", True])
def test_a_bad_free_space_setting_is_named(value):
    with pytest.raises(ValueError, match="llm.min_free_disk_mb: expected a number of MiB >= 0"):
        LLMConfig.from_dict({"min_free_disk_mb": value})
