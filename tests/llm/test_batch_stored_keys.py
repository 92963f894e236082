"""Which of a run's misses a stored batch holds (`BatchRunner.stored_keys`), asked before the
runner has opened its store: on both backends a batch another job (or host) stored is found;
on SQLite, where no store file exists, none is created to ask."""

from rubriclab.llm import LLMConfig
from rubriclab.llm.batch import BatchRunner
from rubriclab.llm.batch_records import BatchJob, job_key
from rubriclab.llm.storage import batch_store_may_hold, open_batch_store

MODEL = "openai/gpt-4o-mini"


def test_a_batch_another_job_stored_is_found_before_the_store_is_opened(tmp_path, backend):
    cfg = backend.config(tmp_path / "cache")
    held, answered = ["a" * 64, "b" * 64], "c" * 64
    store = open_batch_store(cfg)  # another job's (another host's, on PostgreSQL)
    key = job_key(MODEL, held)
    store.save(BatchJob(key, MODEL, len(held), "file-1", "batch-1", "in_progress", 0.0))
    store.save_requests(key, held)
    store.close()
    if backend.kind == "postgresql":
        assert not list(tmp_path.rglob("*.sqlite"))  # nothing on this host says so
    runner = BatchRunner(cfg)
    assert runner.stored_keys(MODEL, {*held, answered, "d" * 64}) == set(held)
    runner.close()


def test_without_a_sqlite_store_none_is_created_to_ask(tmp_path):
    cfg = LLMConfig(cache_dir=tmp_path / "cache")
    assert not batch_store_may_hold(cfg)
    assert BatchRunner(cfg).stored_keys(MODEL, {"a" * 64}) == set()
    assert not (tmp_path / "cache").exists()
