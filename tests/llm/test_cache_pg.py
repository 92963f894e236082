"""What only the PostgreSQL backend does, against the session's real server: a cache chosen by
its URL, claims with leases and fencing tokens and no pid check, an answer stored and its claim
released in one transaction, the batch store and the ledger's rows in the database, exports
between the two backends."""

import gzip
import json
import logging
import subprocess
import sys
import time

import pytest

psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL backend needs psycopg")

from rubriclab.cli import main
from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.batch_records import BatchJob
from rubriclab.llm.batch_store import BatchStore
from rubriclab.llm.backends import RawAnswer
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.cache_records import CacheUnavailable, make_answer
from rubriclab.llm.storage import open_cache
from rubriclab.llm.cache_pg import PostgresCache
from rubriclab.llm.settings import DEFAULT_CACHE_DIR

from .openai_stub import ScriptedOpenAIServer


def ask(text, model="fake/hash"):
    return Request.chat(model, [{"role": "user", "content": text}], response_format="yes_no")


def claims(backend, where):
    with psycopg.connect(backend.url(where), autocommit=True) as db:
        return db.execute("SELECT key, owner, token FROM claims ORDER BY key").fetchall()


def test_without_server_binaries_the_postgresql_tests_say_what_is_missing(monkeypatch):
    from . import postgres_server

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(postgres_server, "SEARCH", ["/nonexistent/bin"])
    why = postgres_server.missing()
    assert why.startswith("no PostgreSQL server binaries initdb, pg_ctl, postgres on PATH")
    assert "/nonexistent/bin" in why


# --- choosing the backend -----------------------------------------------------------------

def test_a_postgresql_url_anywhere_the_cache_is_named_chooses_the_server(monkeypatch, tmp_path):
    url = "postgresql://lab:s3cret-password@db.example/cache"
    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    assert LLMConfig.from_dict({}).cache_url is None  # SQLite stays the default
    by_key = LLMConfig.from_dict({"cache_url": url}, cache_dir=None)
    assert (by_key.cache_url, by_key.cache_dir) == (url, DEFAULT_CACHE_DIR)
    by_dir = LLMConfig.from_dict({}, cache_dir=url)
    assert by_dir.cache_url == url
    # The URL names the cache; a folder named beside it keeps what stays per host.
    monkeypatch.setenv("RUBRICLAB_CACHE", url)
    both = LLMConfig.from_dict({}, cache_dir=tmp_path)
    assert (both.cache_url, both.cache_dir) == (url, tmp_path)
    assert both.local_dir.parent == tmp_path / "hosts"
    assert "s3cret-password" not in both.cache_location and "lab:***@" in both.cache_location
    # A folder in RUBRICLAB_CACHE overrides a URL in the config: SQLite there.
    monkeypatch.setenv("RUBRICLAB_CACHE", str(tmp_path))
    folder = LLMConfig.from_dict({"cache_url": url})
    assert (folder.cache_url, folder.cache_dir, folder.local_dir) == (None, tmp_path, tmp_path)
    with pytest.raises(ValueError, match="llm.cache_url: expected a postgresql:// URL"):
        LLMConfig.from_dict({"cache_url": "mysql://x/y"})


def test_an_unreachable_server_is_named_without_its_password(tmp_path, capsys):
    url = f"postgresql://lab:s3cret-password@/cache?host={tmp_path}/no-server"
    with pytest.raises(CacheUnavailable) as refused:
        open_cache(LLMConfig(cache_dir=tmp_path, cache_url=url))
    assert "cannot reach the cache database postgresql://lab:***@/cache" in str(refused.value)
    assert "s3cret-password" not in str(refused.value)
    assert main(["--cache-dir", url, "cache", "stats"]) == 1
    err = capsys.readouterr().err
    assert "cannot read the cache: cannot reach" in err and "s3cret-password" not in err


def test_an_empty_database_is_no_cache_to_read(pg_backend, tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="its database has no answers table"):
        pg_backend.read_only(tmp_path)
    assert main(["--cache-dir", pg_backend.url(tmp_path), "cache", "stats"]) == 1
    assert "no cache at postgresql://" in capsys.readouterr().err


def test_a_connection_the_server_ended_is_made_again(pg_backend, tmp_path):
    """A restarted server or a dropped connection: the next statement reconnects, so a job
    goes on (a transaction under way fails instead, and its answer stays journaled)."""
    with pg_backend.open(tmp_path) as cache:
        cache.put(make_answer("k", ask("q"), "Yes", 1, 1, 0.0, "fake-v1"))
        (pid,) = cache._db.execute("SELECT pg_backend_pid()").fetchone()
        with psycopg.connect(pg_backend.url(tmp_path), autocommit=True) as db:
            db.execute("SELECT pg_terminate_backend(%s)", (pid,))
        assert cache.get("k").text == "Yes"
        assert cache.claim("k2", "me", lease_s=30).claimed
        (again,) = cache._db.execute("SELECT pg_backend_pid()").fetchone()
    assert again != pid


def test_validation_names_a_cache_server_that_does_not_answer(tmp_path, monkeypatch):
    from rubriclab.validate import cache_dir_problems

    monkeypatch.setenv("RUBRICLAB_CACHE", f"postgresql://lab:pw-12345678@/c?host={tmp_path}")
    [problem] = cache_dir_problems({"cache_dir": str(tmp_path / "local"), "llm": {}})
    assert problem.startswith("the model-call cache: cannot reach the cache database")
    assert "pw-12345678" not in problem and "start the server" in problem


# --- claims: leases, fencing tokens, no pid check --------------------------------------------

def test_a_lapsed_claim_is_taken_over_with_a_larger_token_and_its_old_holder_fenced_off(
        pg_backend, tmp_path, caplog):
    with pg_backend.open(tmp_path) as first, pg_backend.open(tmp_path) as second:
        mine = first.claim("k", "first", lease_s=0.3)
        assert mine.claimed and mine.token is not None
        held = second.claim("k", "second", lease_s=30)
        assert not held.claimed and f"(claim {mine.token})" in held.holder
        time.sleep(0.4)
        taken = second.claim("k", "second", lease_s=30)
        assert taken.claimed and taken.token > mine.token
        # The old holder's renewal does not revive its claim, and says so.
        with caplog.at_level(logging.WARNING, "rubriclab.llm"):
            first.renew_claims("first", lease_s=30)
        assert "was taken over after its lease ran out" in caplog.text
        assert claims(pg_backend, tmp_path) == [("k", "second", taken.token)]
        first.release("k", "first")  # its release does not drop its successor's claim
        assert claims(pg_backend, tmp_path) == [("k", "second", taken.token)]
        # Its answer is still an answer: stored (first writer wins); the claim stays the
        # successor's until the successor stores or releases.
        request = ask("q")
        first.put(make_answer("k", request, "Yes", 1, 1, 0.0, "fake-v1"))
        assert claims(pg_backend, tmp_path) == [("k", "second", taken.token)]
        second.put(make_answer("k", request, "No", 1, 1, 0.0, "fake-v1"))
        assert second.get("k").text == "Yes" and claims(pg_backend, tmp_path) == []


def test_a_claim_of_a_dead_process_waits_for_its_lease_there_is_no_pid_check(
        pg_backend, tmp_path):
    """A host cannot see another host's processes: only the lease tells that a holder died."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with pg_backend.open(tmp_path) as cache:
        with psycopg.connect(pg_backend.url(tmp_path), autocommit=True) as db:
            db.execute("INSERT INTO claims VALUES ('k', 'dead-owner', %s, %s, 1,"
                       " extract(epoch from clock_timestamp()) + 0.5)",
                       (__import__("socket").gethostname(), dead.pid))
        held = cache.claim("k", "me", lease_s=30)
        assert not held.claimed and f"process {dead.pid}" in held.holder
        time.sleep(0.6)
        assert cache.claim("k", "me", lease_s=30).claimed


def test_an_answer_and_its_claims_release_are_one_transaction(pg_backend, tmp_path):
    """While another connection holds the claim's row, storing the answer cannot release the
    claim: the whole transaction is refused, so the answer is not stored either (it is served
    from the journal meanwhile); once the row is free, both happen at once."""
    request = ask("q")
    with pg_backend.open(tmp_path, busy_timeout_s=0.2) as cache:
        assert cache.claim("k", "me", lease_s=30).claimed
        other = psycopg.connect(pg_backend.url(tmp_path), autocommit=True)
        other.execute("BEGIN")
        other.execute("SELECT * FROM claims WHERE key = 'k' FOR UPDATE")
        cache.put(make_answer("k", request, "Yes", 1, 1, 0.0, "fake-v1"))
        assert cache.get("k").text == "Yes"  # served from the journal
        assert pg_backend.stored_keys(tmp_path) == set()  # refused with the release
        other.execute("ROLLBACK")
        other.close()
        assert len(claims(pg_backend, tmp_path)) == 1
        cache.put(make_answer("k2", ask("q2"), "No", 1, 1, 0.0, "fake-v1"))  # the next write
        assert pg_backend.stored_keys(tmp_path) == {"k", "k2"}
        assert claims(pg_backend, tmp_path) == []
        cache.release("k", "me")  # the client's release afterwards: nothing left to drop
    assert claims(pg_backend, tmp_path) == []


def test_claims_still_held_end_with_their_cache_not_with_their_lease(pg_backend, tmp_path):
    """A job that stops on an error (its cache closed, not killed) frees its keys at once."""
    with pg_backend.open(tmp_path) as stopping, pg_backend.open(tmp_path) as other:
        assert stopping.claim("k", "stopping", lease_s=3600).claimed
        assert other.claim("other-key", "other", lease_s=3600).claimed
        stopping.close()
        assert [key for key, _, _ in claims(pg_backend, tmp_path)] == ["other-key"]
        assert other.claim("k", "other", lease_s=30).claimed


def test_lease_times_are_the_servers_clock(pg_backend, tmp_path):
    with pg_backend.open(tmp_path) as cache:
        cache.claim("k", "me", lease_s=600)
        with psycopg.connect(pg_backend.url(tmp_path), autocommit=True) as db:
            left = db.execute("SELECT expires_at - extract(epoch from clock_timestamp())"
                              " FROM claims").fetchone()[0]
    assert 590 < left <= 600


# --- the batch store and the ledger's rows ---------------------------------------------------

@pytest.fixture(params=["sqlite", "postgresql"])
def batch_store(request, tmp_path):
    if request.param == "sqlite":
        store = BatchStore(tmp_path / BatchStore.FILE_NAME)
    else:
        from rubriclab.llm.batch_pg import PostgresBatchStore

        backend = request.getfixturevalue("pg_backend")
        store = PostgresBatchStore(backend.url(tmp_path))
    yield store
    store.close()


def test_the_batch_store_keeps_jobs_their_requests_and_answers_alike(batch_store):
    job = BatchJob("j1", "openai/m", 3, None, None, "submitting", 0.0)
    saved = batch_store.save(job)
    assert saved.updated_at > 0 and batch_store.get("j1") == saved
    batch_store.save_requests("j1", ["a", "b", "c"])
    batch_store.save_requests("j1", ["c"])  # again: no duplicate
    assert batch_store.requests_of("j1") == {"a", "b", "c"}
    assert batch_store.open_jobs("openai/m") == {"j1": {"a", "b", "c"}}
    done = batch_store.save(BatchJob("j1", "openai/m", 3, "file-1", "batch-1", "collected", 0.0))
    assert batch_store.all() == [done] and batch_store.open_jobs("openai/m") == {}
    answer = RawAnswer(text="Yes", prompt_tokens=3, completion_tokens=1, cost_usd=0.001)
    batch_store.save_answers(done, {"x": answer, "y": answer})
    assert batch_store.kept_answers("other/model", ["x"]) == {}
    kept = batch_store.kept_answers("openai/m", ["x", "z"])
    assert list(kept) == ["x"] and kept["x"].answer == answer and kept["x"].batch_id == "batch-1"
    assert list(batch_store.kept_answers("openai/m", ["x"])) == ["x"]  # kept until forgotten
    assert batch_store.forget_answers("openai/m", ["x", "z"]) == 1 and batch_store.kept_count() == 1
    assert batch_store.kept_answers("openai/m", ["x"]) == {}
    assert batch_store.clean_answers(lambda key: key == "nothing") == 0
    assert batch_store.clean_answers(lambda key: key == "y") == 1 and batch_store.kept_count() == 0


def test_ledger_rows_reach_the_database_from_every_host(pg_backend, tmp_path):
    """Each row a stage's ledger writes, and each paid call of its attempts journal, is also
    a row in the cache database, where the hosts' rows meet."""
    from rubriclab.llm.ledger import attempts_path, database_ledger_rows

    cfg = pg_backend.config(tmp_path / "cache")
    ledger_path = tmp_path / "results" / "ledger" / "judge.jsonl"
    with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
        client.run([ask("a"), ask("b"), ask("a")])
    local = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    rows = database_ledger_rows(cfg.cache_url)
    assert [r["row"] for r in rows] == local and len(local) == 3
    assert {r["ledger"] for r in rows} == {str(ledger_path.absolute())}
    # The two calls that reached the model, as in the attempts journal; the third was cached.
    attempts = [json.loads(line) for line in attempts_path(ledger_path).read_text().splitlines()]
    assert [r["row"] for r in rows if r["attempt"]] == attempts and len(attempts) == 2
    with pg_backend.read_only(tmp_path / "cache") as cache:
        assert cache.paid_requests() == (2, 2)


# --- export and import between the backends --------------------------------------------------

def read_rows(path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        header, *rows = [json.loads(line) for line in fh]
    return header, rows


def test_an_export_from_sqlite_imports_into_postgresql_and_back(pg_backend, tmp_path, capsys,
                                                                monkeypatch):
    monkeypatch.chdir(tmp_path)  # a URL's per-host files go to the default folder, here
    source = tmp_path / "sqlite"
    with ScriptedOpenAIServer([], then="Yes") as server:
        remote = ModelSettings(api_base=server.api_base, placeholder_api_key=True)
        cfg = LLMConfig(cache_dir=source, per_model={"openai/stub": remote})
        with LLMClient(cfg) as client:
            client.run([ask(f"q{i}") for i in range(5)] + [ask("r", "openai/stub")])
    url = pg_backend.url(tmp_path / "pg")
    assert main(["--cache-dir", str(source), "cache", "export", "sqlite.jsonl.gz"]) == 0
    assert main(["--cache-dir", url, "cache", "import", "sqlite.jsonl.gz"]) == 0
    assert "6 added, 0 already present" in capsys.readouterr().out
    assert main(["--cache-dir", url, "cache", "stats"]) == 0
    out = capsys.readouterr().out
    assert "       5  fake/hash" in out and "       1  openai/stub" in out
    assert "       6  total (postgresql://" in out
    assert "0  requests paid for by the runs' jobs, 0 distinct (- per distinct request)" in out
    assert main(["--cache-dir", url, "cache", "export", "pg.jsonl.gz"]) == 0
    assert main(["--cache-dir", str(tmp_path / "again"), "cache", "import", "pg.jsonl.gz"]) == 0
    assert "6 added" in capsys.readouterr().out
    (from_sqlite, rows_sqlite), (from_pg, rows_pg) = (read_rows(tmp_path / "sqlite.jsonl.gz"),
                                                      read_rows(tmp_path / "pg.jsonl.gz"))
    assert rows_pg == rows_sqlite  # the same rows, checksums and all, whichever backend
    assert from_pg["sha256"] == from_sqlite["sha256"] and from_pg["models"] == from_sqlite["models"]
    with SQLiteCache(tmp_path / "again" / "llm_cache.sqlite") as back:
        assert len(back) == 6
    cache = PostgresCache(url, local_dir=tmp_path / "local")  # served from the server
    with LLMClient(LLMConfig(cache_dir=tmp_path / "local"), cache=cache) as replay:
        assert all(a.cached for a in replay.run([ask(f"q{i}") for i in range(5)]))


def test_a_batch_run_keeps_its_store_on_the_server_for_every_host(pg_backend, tmp_path,
                                                                   monkeypatch):
    """A batch submitted from one host is in the database: another host (its own folder) sees
    the collected job and is served its answers from the cache, with no second batch."""
    from rubriclab.llm.batch_pg import PostgresBatchStore
    from rubriclab.rehearsal.server import FaultMix, RehearsalServer

    from .test_batch import MODEL, questions, settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    with RehearsalServer(faults=FaultMix.none()) as server:
        def host(name):
            return LLMClient(LLMConfig(cache_dir=tmp_path / name,
                                       cache_url=pg_backend.url(tmp_path),
                                       per_model={MODEL: ModelSettings(**settings(server))},
                                       progress_interval_s=0.05))

        with host("a") as client:
            answers = client.run(questions())
        assert all(a.batch and a.outcome == "ok" for a in answers)
        with host("b") as client:
            again = client.run(questions())
        assert all(a.cached for a in again) and server.batches.calls["create"] == 1
    store = PostgresBatchStore(pg_backend.url(tmp_path))
    try:
        (job,) = store.all()
        assert job.status == "collected" and len(store.requests_of(job.job_key)) == 4
    finally:
        store.close()
    assert not (tmp_path / "a" / "llm_batches.sqlite").exists()
