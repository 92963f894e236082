import json
import logging
import sqlite3
import threading

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm.cache import SQLiteCache
from rubriclab.llm.ledger import cost_report_markdown, read_ledgers, summarize


def ask(model, text, **fields):
    fields.setdefault("response_format", "yes_no")
    return Request.chat(model, [{"role": "user", "content": text}], **fields)


def config(tmp_path, **defaults):
    settings = ModelSettings(backoff_s=0.0, **defaults)
    return LLMConfig(cache_dir=tmp_path / "cache", defaults=settings, progress_interval_s=0.01)


def ledger_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_answers_are_parsed_cached_and_replayed(tmp_path):
    requests = [ask("fake/hash", f"question {i}") for i in range(6)]
    with LLMClient(config(tmp_path), ledger=Ledger(tmp_path / "l1.jsonl", "r")) as client:
        first = client.run(requests)
    assert [c.outcome for c in first] == ["ok"] * 6
    assert {c.parsed for c in first} <= {"yes", "no"} and len({c.parsed for c in first}) == 2
    assert not any(c.cached for c in first)
    with LLMClient(config(tmp_path), ledger=Ledger(tmp_path / "l2.jsonl", "r")) as client:
        second = client.run(requests)
    assert all(c.cached for c in second)
    assert [c.parsed for c in second] == [c.parsed for c in first]
    assert [r["cached"] for r in ledger_rows(tmp_path / "l2.jsonl")] == [True] * 6


def test_k_samples_are_k_entries(tmp_path):
    requests = [ask("fake/hash", "same question", sample_index=k) for k in range(3)]
    with LLMClient(config(tmp_path)) as client:
        answers = client.run(requests)
        assert len({c.key for c in answers}) == 3
        assert len(client.cache) == 3


def test_unparseable_answer_is_reasked_then_reported_not_cached(tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    with LLMClient(config(tmp_path, max_reasks=2), ledger=Ledger(ledger_path, "r")) as client:
        (answer,) = client.run([ask("fake/unparseable", "Is it?")])
        assert answer.outcome == "unparseable"
        assert answer.parsed is None and answer.reasks == 2 and answer.attempts == 3
        assert len(client.cache) == 0
    (row,) = ledger_rows(ledger_path)
    assert row["outcome"] == "unparseable" and row["reasks"] == 2 and not row["cached"]
    # Asked again later, it is called again: nothing was cached.
    with LLMClient(config(tmp_path, max_reasks=0)) as client:
        (again,) = client.run([ask("fake/unparseable", "Is it?")])
    assert again.outcome == "unparseable" and not again.cached


def test_failed_call_is_not_cached_counted_and_raised_after_the_batch(tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    requests = [ask("fake/hash", "fine"), ask("fake/empty", "empty"), ask("fake/hash", "also fine")]
    with LLMClient(config(tmp_path, num_retries=2), ledger=Ledger(ledger_path, "r")) as client:
        with pytest.raises(ModelCallsFailed, match="1 of 3 requests"):
            client.run(requests)
        assert len(client.cache) == 2  # the others were answered and kept
        results = client.run(requests, raise_on_failure=False)
    failed = [c for c in results if c.outcome == "failed"]
    assert len(failed) == 1 and failed[0].attempts == 3 and "EmptyAnswer" in failed[0].error
    summary = summarize(read_ledgers([ledger_path]))
    row = summary[summary.model == "fake/empty"].iloc[0]
    assert row.failed == 2 and row.uncached_calls == 2 and row.cache_hits == 0


def test_cost_report_counts_hits_calls_and_tokens_per_rule_and_model(tmp_path):
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    requests = [ask("fake/hash", f"q{i}") for i in range(4)]
    with LLMClient(config(tmp_path), ledger=Ledger(paths[0], "judge[a]")) as client:
        client.run(requests)
    with LLMClient(config(tmp_path), ledger=Ledger(paths[1], "judge[b]")) as client:
        client.run(requests[:2] + [ask("fake/yes", "new")])
    summary = summarize(read_ledgers(paths)).set_index(["rule", "model"])
    assert summary.loc[("judge[a]", "fake/hash"), "uncached_calls"] == 4
    assert summary.loc[("judge[b]", "fake/hash"), "cache_hits"] == 2
    assert summary.loc[("judge[b]", "fake/hash"), "prompt_tokens"] == 0  # hits spend nothing
    assert summary.loc[("judge[b]", "fake/yes"), "uncached_calls"] == 1
    markdown = cost_report_markdown(summary.reset_index())
    assert "| judge[a] | fake/hash | `fake/hash` | 4 | 0 | 4 |" in markdown
    assert "| **total** | | | 7 | 2 | 5 |" in markdown


def test_progress_reports_done_total_hits_rate_and_time_left(tmp_path, caplog):
    requests = [ask("fake/hash?delay_s=0.01", f"q{i}") for i in range(5)]
    with LLMClient(config(tmp_path)) as client:
        client.run(requests[:2], label="warm")
        # An earlier test in this worker may have left the logger at INFO, so
        # the warm-up's own lines can be captured too: count from here.
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="rubriclab.progress"):
            client.run(requests, label="judge x")
    lines = [r.getMessage() for r in caplog.records if r.name == "rubriclab.progress"]
    assert lines[0].startswith("[judge x] 2/5 (40%) | 2 cache hits")
    assert any("calls/s" in line and "left" in line for line in lines[1:-1])
    assert lines[-1].startswith("[judge x] 5/5 (100%) | 2 cache hits")


def test_concurrency_limit_keeps_request_order_for_a_serial_model(tmp_path, monkeypatch):
    log_path = tmp_path / "calls.log"
    monkeypatch.setenv("RUBRICLAB_FAKE_CALL_LOG", str(log_path))
    cfg = LLMConfig(cache_dir=tmp_path, per_model={"fake/hash": ModelSettings(concurrency=1)})
    requests = [ask("fake/hash", f"q{i}") for i in range(8)]
    from rubriclab.llm.fake import call_digest

    with LLMClient(cfg) as client:
        client.run(requests)
    expected = [call_digest(r.message_dicts(), 0) for r in requests]
    assert log_path.read_text().split() == expected


def test_cache_export_and_import_replays_a_run_elsewhere(tmp_path):
    requests = [ask("fake/hash", f"q{i}") for i in range(5)]
    with LLMClient(config(tmp_path)) as client:
        original = client.run(requests)
        exported = client.cache.export_to(tmp_path / "export" / "calls.jsonl.gz")
    assert exported == 5
    elsewhere = LLMConfig(cache_dir=tmp_path / "elsewhere")
    with SQLiteCache(elsewhere.cache_path) as cache:
        report = cache.import_from(tmp_path / "export" / "calls.jsonl.gz")
        assert (report.added, report.already_present, report.conflicting) == (5, 0, 0)
        assert cache.import_from(tmp_path / "export" / "calls.jsonl.gz").already_present == 5
    with LLMClient(elsewhere) as client:
        replay = client.run(requests)
    assert all(c.cached for c in replay)
    assert [c.text for c in replay] == [c.text for c in original]


def test_cache_is_in_wal_mode(tmp_path):
    with SQLiteCache(tmp_path / "c.sqlite"):
        pass
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_unknown_response_format_is_rejected_before_any_call(tmp_path):
    with LLMClient(config(tmp_path)) as client:
        with pytest.raises(ValueError, match="unknown response format 'json_blob'"):
            client.run([ask("fake/hash", "q", response_format="json_blob")])


def test_unknown_fake_model_is_rejected(tmp_path):
    with LLMClient(config(tmp_path)) as client:
        with pytest.raises(ValueError, match="unknown fake model"):
            client.run([ask("fake/oracle", "q")])


def test_a_miss_answered_by_another_job_meanwhile_is_taken_from_the_cache(tmp_path, monkeypatch):
    """Two jobs judging the same items: the second must not pay for what the first stored."""
    log_path = tmp_path / "calls.log"
    monkeypatch.setenv("RUBRICLAB_FAKE_CALL_LOG", str(log_path))
    cfg = LLMConfig(cache_dir=tmp_path / "cache",
                    per_model={"fake/hash": ModelSettings(concurrency=1)})
    requests = [ask("fake/hash", f"q{i}") for i in range(4)]
    def other_job():
        with LLMClient(cfg) as other:
            other.run(requests[2:])  # stores q2 and q3

    with LLMClient(cfg) as client:
        original_call = client._call

        async def call_after_other_job(request, key):
            if request is requests[0]:
                worker = threading.Thread(target=other_job)
                worker.start()
                worker.join()
            return await original_call(request, key)

        monkeypatch.setattr(client, "_call", call_after_other_job)
        answers = client.run(requests)
    assert [c.cached for c in answers] == [False, False, True, True]
    assert len(log_path.read_text().split()) == 4  # q0, q1 here; q2, q3 in the other job
