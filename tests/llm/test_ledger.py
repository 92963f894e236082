"""The ledger across reruns, unknown prices in every total, calls made per distinct request."""

import json

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.ledger import (attempts_path, calls_per_distinct_request,
                                  cost_report_markdown, read_earlier_attempts, read_ledgers,
                                  summarize)

from .openai_stub import ScriptedOpenAIServer


def ask(text, model="fake/hash"):
    return Request.chat(model, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def report(paths):
    ledger, attempts = read_ledgers(paths), read_earlier_attempts(paths)
    summary = summarize(ledger, attempts)
    return summary, cost_report_markdown(summary, calls_per_distinct_request(ledger, attempts))


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def test_calls_paid_by_a_killed_run_stay_on_the_bill(tmp_path):
    """Snakemake deletes a failed job's ledger; the calls it paid are in the attempts journal
    and the rerun, which finds them in the cache, reports them as earlier runs' calls."""
    ledger_path = tmp_path / "results" / "ledger" / "judge.jsonl"
    cfg = LLMConfig(cache_dir=tmp_path / "cache")
    requests = [ask(f"q{i}") for i in range(4)]
    with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
        client.run(requests[:3])  # then the job is killed
    ledger_path.unlink()  # what Snakemake does to the outputs of a failed job
    with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
        client.run(requests)
    assert len(attempts_path(ledger_path).read_text().splitlines()) == 4  # appended, never reset
    summary, markdown = report([ledger_path])
    row = summary.iloc[0]
    assert (row.requests, row.cache_hits, row.uncached_calls, row.earlier_calls) == (4, 3, 1, 3)
    assert "Calls made / distinct requests: 4 / 4 = 1.000" in markdown


def test_a_request_paid_twice_shows_in_the_ratio(tmp_path):
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for k, path in enumerate(paths):  # two caches: nothing shared, so both pay
        with LLMClient(LLMConfig(cache_dir=tmp_path / f"cache{k}"),
                       ledger=Ledger(path, f"rule{k}")) as client:
            client.run([ask("same question"), ask(f"own question {k}")])
    _, markdown = report(paths)
    assert "Calls made / distinct requests: 4 / 3 = 1.333" in markdown


def test_unknown_prices_are_unknown_in_every_total(tmp_path):
    """gpt-4o-mini has a price in litellm's map; stub-model has none; a failed call may have
    been billed. None of them may show as $0.0000 in a total."""
    ledger_path = tmp_path / "ledger.jsonl"
    with ScriptedOpenAIServer(["Yes", "No", "401"]) as server:
        settings = ModelSettings(api_base=server.api_base, num_retries=0)
        cfg = LLMConfig(cache_dir=tmp_path / "cache", defaults=settings)
        with LLMClient(cfg, ledger=Ledger(ledger_path, "judge")) as client:
            client.run([ask("priced", "openai/gpt-4o-mini")])
            client.run([ask("unpriced", "openai/stub-model")])
            client.run([ask("failed", "openai/gpt-4o-mini")], raise_on_failure=False)
    rows = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    assert rows[0]["cost_usd"] > 0
    assert rows[1]["cost_usd"] is None and rows[2]["cost_usd"] is None
    assert rows[2]["outcome"] == "failed"
    summary, markdown = report([ledger_path])
    lines = markdown.splitlines()
    priced = next(line for line in lines if "`openai/gpt-4o-mini`" in line)
    unpriced = next(line for line in lines if "`openai/stub-model`" in line)
    total = next(line for line in lines if line.startswith("| **total**"))
    assert "+ unknown (1 calls)" in priced  # the priced call, and the failed one
    assert "| unknown (1 calls) |" in unpriced
    assert "+ unknown (2 calls)" in total and "| $0.0000 |" not in total.split("|")[11]


def test_cached_answers_of_unknown_price_are_unknown_in_the_cost_of_cached(tmp_path):
    with ScriptedOpenAIServer(["Yes"]) as server:
        cfg = LLMConfig(cache_dir=tmp_path / "cache",
                        defaults=ModelSettings(api_base=server.api_base))
        with LLMClient(cfg, ledger=Ledger(tmp_path / "a.jsonl", "r")) as client:
            client.run([ask("q", "openai/stub-model")])
        with LLMClient(cfg, ledger=Ledger(tmp_path / "b.jsonl", "r2")) as client:
            client.run([ask("q", "openai/stub-model")])
    _, markdown = report([tmp_path / "b.jsonl"])
    row = next(line for line in markdown.splitlines() if line.startswith("| r2 |"))
    assert row.split("|")[13].strip() == "unknown (1 calls)"  # cost of cached


def test_fake_answers_are_not_cached_unless_asked_and_the_ledger_counts_each_asking(tmp_path):
    """llm.cache_fake_answers false (the pipeline's default): the cache stays empty, a rerun
    computes the same answers again, each a call of its own in the ledger; the ratio of calls
    per distinct request leaves them out, a paid model's repeat still shows."""
    from rubriclab.llm.cache import SQLiteCache

    cfg = LLMConfig.from_dict({"cache_fake_answers": False}, cache_dir=tmp_path / "cache")
    assert not cfg.caches("fake/hash") and cfg.caches("openai/gpt-4o-mini")
    assert LLMConfig().caches("fake/hash")  # the model layer's own default keeps them
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    answers = []
    for k, path in enumerate(paths):
        with LLMClient(cfg, ledger=Ledger(path, f"rule{k}")) as client:
            answers.append([c.text for c in client.run([ask("same"), ask(f"own {k}")])])
    assert answers[0][0] == answers[1][0]  # deterministic, so nothing is lost
    with SQLiteCache(cfg.cache_path) as cache:
        assert len(cache) == 0
    ledger, attempts = read_ledgers(paths), read_earlier_attempts(paths)
    assert not ledger["cached"].any() and (ledger["attempts"] == 1).all()
    assert summarize(ledger, attempts)["uncached_calls"].sum() == 4
    assert calls_per_distinct_request(ledger, attempts) == (4, 3)
    assert calls_per_distinct_request(ledger, attempts, skip_fake=True) == (0, 0)
    markdown = cost_report_markdown(summarize(ledger, attempts), (0, 0), fake_skipped=True)
    assert "fake models left out" in markdown
    with pytest.raises(ValueError, match="llm.cache_fake_answers"):
        LLMConfig.from_dict({"cache_fake_answers": "no"})
