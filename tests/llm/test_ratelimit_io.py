"""Limits counted apart (rubriclab.llm.ratelimit): input tokens a minute (Anthropic's ITPM counts
uncached input only) and output tokens a minute (OTPM), each its own cell of the shared
schedule, booked at the prompt estimate and the completion budget and settled to the usage; on
both stores of the schedule (`backend`)."""

import json
import time

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.ratelimit import (BURST_S, RateLimiter, estimate_prompt_tokens,
                                     limited_input_tokens)
from rubriclab.llm.storage import open_rate_limiter
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

SONNET = "anthropic/claude-sonnet-4-5-20250929"
MODEL = "openai/stub-model"


def test_input_and_output_are_cells_of_their_own(tmp_path, backend):
    """A request of 100 input and 500 output tokens against 6,000 input and 6,000 output a
    minute waits for its output (5 s each); one limit of prompt + completion would have it wait
    6 s, and an input limit alone 1 s."""
    far = time.time() + 3600

    def gap(settings, name):
        limiter = open_rate_limiter(backend.config(tmp_path / name))
        first = limiter.book(MODEL, settings, 600, far, input_tokens=100, output_tokens=500)
        second = limiter.book(MODEL, settings, 600, far, input_tokens=100, output_tokens=500)
        limiter.close()
        return second.start - first.start

    apart = ModelSettings(input_tokens_per_minute=6_000, output_tokens_per_minute=6_000)
    assert gap(apart, "apart") == pytest.approx(5.0 - BURST_S, abs=0.05)
    assert gap(ModelSettings(tokens_per_minute=6_000), "combined") == pytest.approx(
        6.0 - BURST_S, abs=0.05)
    assert gap(ModelSettings(input_tokens_per_minute=6_000), "input") < 0.5  # at once


def test_output_is_settled_to_the_completion_tokens_used(tmp_path, backend):
    far = time.time() + 3600
    limiter = open_rate_limiter(backend.config(tmp_path / "cache"))
    otpm = ModelSettings(output_tokens_per_minute=6_000)  # 100 a second
    first = limiter.book(MODEL, otpm, 600, far, input_tokens=100, output_tokens=500)
    second = limiter.book(MODEL, otpm, 600, far, input_tokens=100, output_tokens=500)
    assert second.start - first.start == pytest.approx(5.0 - BURST_S, abs=0.05)
    # 50 output tokens each, not 500: the next request goes at once, not 9 s after the first
    limiter.settle(first, otpm, 150, used_input=100, used_output=50)
    limiter.settle(second, otpm, 150, used_input=100, used_output=50)
    third = limiter.book(MODEL, otpm, 600, far, input_tokens=100, output_tokens=500)
    assert third.start - first.start < 0.5
    limiter.close()


def test_anthropic_leaves_cache_reads_out_of_its_input_limit_others_do_not():
    assert limited_input_tokens(SONNET, 5_000, 4_000) == 1_000
    assert limited_input_tokens("openai/gpt-4o-mini", 5_000, 4_000) == 5_000
    assert limited_input_tokens("gemini/gemini-2.5-flash", 5_000, 4_000) == 5_000


def test_the_client_books_input_and_output_apart_and_settles_anthropic_uncached_input(
        tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-secret")
    booked, settled = [], []
    book, settle = RateLimiter.book, RateLimiter.settle

    def spy_book(self, model, settings, tokens, latest, **apart):
        booked.append(apart)
        return book(self, model, settings, tokens, latest, **apart)

    def spy_settle(self, booking, settings, used, **apart):
        settled.append(apart)
        return settle(self, booking, settings, used, **apart)

    monkeypatch.setattr(RateLimiter, "book", spy_book)
    monkeypatch.setattr(RateLimiter, "settle", spy_settle)
    document = "".join(f"Finding {i}: bucket b{i} is public.\n" for i in range(400))
    requests = [Request.chat(SONNET, [
        {"role": "system", "content": "You judge documents against checks.\n"},
        {"role": "user", "content": f"# Document\n{document}\n# Check\n{check}\n"
                                    "Answer with exactly one word: Yes or No."}],
        response_format="yes_no", max_tokens=8)
                for check in ("Names every public bucket.", "Names no private bucket.")]
    with RehearsalServer(faults=FaultMix.none()) as server:
        config = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(
            api_base=server.url, concurrency=1, num_retries=0,
            input_tokens_per_minute=10_000_000, output_tokens_per_minute=1_000_000))
        ledger_path = tmp_path / "ledger.jsonl"
        with LLMClient(config, ledger=Ledger(ledger_path, "r")) as client:
            answers = client.run(requests)
    assert [a.outcome for a in answers] == ["ok", "ok"]
    rows = [json.loads(line) for line in ledger_path.read_text().splitlines()]
    assert rows[1]["cache_read_tokens"] > 1024  # the second read the document from the cache
    for apart, request in zip(booked, requests):
        assert apart["output_tokens"] == request.budget
        assert apart["input_tokens"] >= estimate_prompt_tokens(request.message_dicts()) - 50
    for apart, row in zip(settled, rows):
        assert apart["used_output"] == row["completion_tokens"]
        assert apart["used_input"] == row["prompt_tokens"] - row["cache_read_tokens"]
