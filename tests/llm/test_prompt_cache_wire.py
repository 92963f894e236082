"""cache_control on the wire: litellm's Anthropic request from LLMClient, to the rehearsal server."""

import json

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.pricing import price
from rubriclab.rehearsal.server import FaultMix, RehearsalServer

SONNET = "anthropic/claude-sonnet-4-5-20250929"
YES_NO = "Answer with exactly one word: Yes or No."


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def judge(model, document, check):
    return Request.chat(model, [
        {"role": "system", "content": "You judge documents against checks.\n"},
        {"role": "user", "content": f"# Document\n{document}\n# Check\n{check}\n{YES_NO}"}],
        response_format="yes_no", max_tokens=8)


def marked_blocks(body):
    blocks = [b for b in body.get("system") or [] if isinstance(b, dict)]
    for message in body["messages"]:
        if isinstance(message["content"], list):
            blocks += message["content"]
    return [b for b in blocks if b.get("cache_control")]


def run(tmp_path, server, requests, **settings):
    ledger_path = tmp_path / "ledger.jsonl"
    cfg = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(
        api_base=server.url, concurrency=1, num_retries=0, **settings))
    with LLMClient(cfg, ledger=Ledger(ledger_path, "r")) as client:
        answers = client.run(requests)
        keys = [client.key_for(r) for r in requests]
    return answers, keys, [json.loads(line) for line in ledger_path.read_text().splitlines()]


def test_cache_control_marks_a_qualifying_shared_prefix_and_is_priced_as_cached(tmp_path):
    long_document = "".join(f"Finding {i}: bucket b{i} is public.\n" for i in range(400))
    requests = [judge(SONNET, long_document, "Names every public bucket."),
                judge(SONNET, long_document, "Names no private bucket."),
                judge(SONNET, "Finding 1: all private.", "Names every public bucket."),
                judge(SONNET, "Finding 2: none public.", "Names every public bucket.")]
    with RehearsalServer(faults=FaultMix.none()) as server:
        server.keep_bodies = True
        answers, keys, rows = run(tmp_path, server, requests)
        bodies = [body for path, body in server.bodies]
    assert all(a.outcome == "ok" for a in answers)
    assert len(bodies) == 4
    first, second, short_a, short_b = (marked_blocks(b) for b in bodies)
    # The long document qualifies (>= 1,024 tokens): the prefix through it is marked, the
    # check after it is not.
    assert len(first) == 1 and first == second
    assert first[0]["text"].endswith(long_document + "\n# Check\n")
    assert first[0]["cache_control"] == {"type": "ephemeral"}
    assert bodies[0]["messages"][0]["content"][-1]["text"].startswith("Names every")
    # The short items share only the system prompt and "# Document\n": too short to mark.
    assert short_a == [] and short_b == []
    # The provider wrote the prefix on the first request and read it on the second.
    assert rows[0]["cache_write_tokens"] > 1024 and rows[0]["cache_read_tokens"] == 0
    assert rows[1]["cache_read_tokens"] == rows[0]["cache_write_tokens"]
    assert rows[2]["cache_read_tokens"] == rows[2]["cache_write_tokens"] == 0
    for row in rows:  # prompt_tokens counts cached tokens too; priced at the cache rates
        assert row["cost_usd"] == pytest.approx(price(
            SONNET, row["prompt_tokens"], row["completion_tokens"],
            cache_read_tokens=row["cache_read_tokens"],
            cache_write_tokens=row["cache_write_tokens"]))
    assert rows[1]["cost_usd"] < rows[0]["cost_usd"]
    # Transport only: the keys are those of the requests as built.
    assert [a.key for a in answers] == keys


def test_no_cache_control_when_switched_off_or_for_a_provider_that_caches_itself(tmp_path):
    long_document = "".join(f"Finding {i}: bucket b{i} is public.\n" for i in range(400))
    with RehearsalServer(faults=FaultMix.none()) as server:
        server.keep_bodies = True
        run(tmp_path / "off", server, [judge(SONNET, long_document, c) for c in "ab"],
            prompt_cache=False)
        run(tmp_path / "openai", server,
            [judge("openai/gpt-4o-mini-2024-07-18", long_document, c) for c in "ab"])
        bodies = [body for path, body in server.bodies]
    assert len(bodies) == 4
    assert [marked_blocks(b) for b in bodies] == [[], [], [], []]
    assert "cache_control" not in json.dumps(bodies)
