"""The real HTTP path: litellm talking to an OpenAI-compatible server on 127.0.0.1."""

import json
import time

import pytest

from rubriclab.llm import Ledger, LLMClient, LLMConfig, ModelCallsFailed, ModelSettings, Request
from rubriclab.llm import backends
from rubriclab.llm.client import UnusableAnswers
from rubriclab.llm.backends import PLACEHOLDER_API_KEY, MissingAPIKey
from rubriclab.llm.cache_records import make_answer

from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def client_for(tmp_path, server, ledger=None, **settings):
    defaults = dict(api_base=server.api_base, timeout_s=1.0, num_retries=5, backoff_s=0.01,
                    max_backoff_s=0.05, max_reasks=2)
    defaults.update(settings)
    cfg = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(**defaults))
    return LLMClient(cfg, ledger=ledger)


def judge(text="Is the sky blue?"):
    return Request.chat(MODEL, [{"role": "user", "content": text}], response_format="yes_no",
                        max_tokens=4)


def test_retries_recover_from_429_500_timeout_and_dropped_connection(tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    with ScriptedOpenAIServer(["429", "500", "timeout", "drop", "Yes."]) as server:
        with client_for(tmp_path, server, ledger=Ledger(ledger_path, "test")) as client:
            (answer,) = client.run([judge()])
            assert answer.outcome == "ok" and answer.parsed == "yes" and answer.attempts == 5
            assert answer.usage.prompt_tokens == 11
            assert len(server.requests) == 5
            assert len(client.cache) == 1
            # Served from the cache now: the server is not asked again.
            (again,) = client.run([judge()])
            assert again.cached and len(server.requests) == 5
    row = json.loads(ledger_path.read_text().splitlines()[0])
    assert row["attempts"] == 5 and row["outcome"] == "ok" and row["cached"] is False


def test_empty_answer_is_a_failure_that_is_retried(tmp_path):
    with ScriptedOpenAIServer(["empty", "No"]) as server:
        with client_for(tmp_path, server) as client:
            (answer,) = client.run([judge()])
    assert answer.parsed == "no" and answer.attempts == 2


def test_exhausted_retries_fail_without_caching(tmp_path):
    with ScriptedOpenAIServer(["500", "429", "500"]) as server:
        with client_for(tmp_path, server, num_retries=2) as client:
            with pytest.raises(ModelCallsFailed, match="1 of 1 requests"):
                client.run([judge()])
            assert len(client.cache) == 0
            assert len(server.requests) == 3


@pytest.mark.parametrize("status", ["400", "401"])
def test_client_errors_are_not_retried(tmp_path, status):
    with ScriptedOpenAIServer([status, "Yes"]) as server:
        with client_for(tmp_path, server, num_retries=3) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
            assert len(client.cache) == 0
        assert len(server.requests) == 1
    assert answer.outcome == "failed" and answer.attempts == 1


def test_unparseable_answers_are_reasked_with_the_instruction_then_reported(tmp_path):
    with ScriptedOpenAIServer(["Probably.", "It depends.", "Hard to say."]) as server:
        # its only answer unusable: the job fails at its end (LLMClient.finish)
        with pytest.raises(UnusableAnswers), client_for(tmp_path, server,
                                                        max_reasks=2) as client:
            (answer,) = client.run([judge()])
            assert answer.outcome == "unparseable" and answer.reasks == 2
            assert len(client.cache) == 0
        last = server.requests[-1]["messages"]
    assert [m["role"] for m in last] == ["user", "assistant", "user", "assistant", "user"]
    assert last[1]["content"] == "Probably." and "Yes or No" in last[-1]["content"]


def test_reasked_answer_that_parses_is_cached(tmp_path):
    ledger_path = tmp_path / "ledger.jsonl"
    with ScriptedOpenAIServer(["Well, yes it is", "Yes"]) as server:
        with client_for(tmp_path, server, ledger=Ledger(ledger_path, "t")) as client:
            (answer,) = client.run([judge()])
            assert answer.outcome == "ok" and answer.parsed == "yes" and answer.reasks == 1
            assert client.cache.get(answer.key).text == "Yes"
    # both askings are paid for (the stub counts 11 prompt tokens a call); the re-ask's are
    # told apart from the first asking's
    assert answer.usage.prompt_tokens == 22 and answer.repeat_prompt_tokens == 11
    row = json.loads(ledger_path.read_text().splitlines()[0])
    assert row["prompt_tokens"] == 22 and row["repeat_prompt_tokens"] == 11


def test_missing_api_key_is_named_before_any_call(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    request = Request.chat("anthropic/claude-sonnet-4-5-20250929",
                           [{"role": "user", "content": "hi"}], response_format="yes_no")
    cfg = LLMConfig(cache_dir=tmp_path / "cache")
    with LLMClient(cfg, ledger=Ledger(tmp_path / "l.jsonl", "t")) as client:
        with pytest.raises(MissingAPIKey, match="ANTHROPIC_API_KEY"):
            client.run([request])
    assert (tmp_path / "l.jsonl").read_text() == ""


def test_cached_answers_need_no_api_key(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    request = Request.chat("anthropic/claude-sonnet-4-5-20250929",
                           [{"role": "user", "content": "hi"}], response_format="yes_no")
    cfg = LLMConfig(cache_dir=tmp_path / "cache")
    with LLMClient(cfg) as client:
        client.cache.put(make_answer(client.key_for(request), request, "Yes", 3, 1, 0.001))
        (answer,) = client.run([request])
    assert answer.cached and answer.parsed == "yes"


# --- retries by cause --------------------------------------------------------------------------

def test_a_429_with_retry_after_waits_at_least_as_long_as_asked(tmp_path, caplog):
    with ScriptedOpenAIServer(["429:2", "Yes"]) as server:
        with client_for(tmp_path, server) as client:  # its own backoff is at most 0.05 s
            with caplog.at_level("INFO", logger="rubriclab.llm"):
                (answer,) = client.run([judge()])
        waited = server.times[1] - server.times[0]
    assert answer.outcome == "ok" and answer.attempts == 2
    assert waited >= 2.0
    assert any("retrying openai/stub-model in 2.00s after RateLimitError" in r.getMessage()
               for r in caplog.records)


def test_a_retry_after_past_the_deadline_fails_at_once(tmp_path):
    with ScriptedOpenAIServer(["429:30", "Yes"]) as server:
        with client_for(tmp_path, server, deadline_s=3.0) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
        assert len(server.requests) == 1
    assert answer.outcome == "failed" and answer.latency_s < 1.0
    assert "DeadlineExceeded" in answer.error and "30 s its server asks" in answer.error


def test_an_authentication_error_is_not_retried_and_stops_the_batch(tmp_path):
    with ScriptedOpenAIServer(["401"], then="Yes") as server:
        with client_for(tmp_path, server, num_retries=4, concurrency=1) as client:
            with pytest.raises(ModelCallsFailed) as raised:
                client.run([judge(f"q{i}") for i in range(5)])
        assert len(server.requests) == 1  # neither retried nor asked again for the others
    message = str(raised.value)
    assert "AuthenticationError" in message and "scripted 401" in message  # the provider's words
    assert "5 of 5 requests" in message and "no request to it can get past" in message


def test_missing_credentials_fail_at_once_with_the_clients_message(tmp_path, monkeypatch):
    """litellm reports a missing key as a server error (500); it is not retried."""
    monkeypatch.delenv("OPENAI_API_KEY")
    # As at the provider's own API, where litellm reads the key from the environment itself
    # (the stub server, not the provider's, would be sent the placeholder).
    monkeypatch.setattr(backends, "explicit_api_key", lambda model, settings: None)
    with ScriptedOpenAIServer([], then="Yes") as server:
        with client_for(tmp_path, server, check_api_key=False, num_retries=4) as client:
            (answer,) = client.run([judge()], raise_on_failure=False)
        assert len(server.requests) == 0
    assert answer.outcome == "failed" and answer.attempts == 1
    assert "Missing credentials" in answer.error


def test_a_hanging_server_fails_the_request_within_its_deadline(tmp_path):
    with ScriptedOpenAIServer([], then="timeout", slow_s=8.0) as server:
        with client_for(tmp_path, server, timeout_s=5.0, num_retries=10,
                        deadline_s=1.5) as client:
            started = time.monotonic()
            (answer,) = client.run([judge()], raise_on_failure=False)
            elapsed = time.monotonic() - started
    assert answer.outcome == "failed" and "DeadlineExceeded" in answer.error
    assert 1.4 <= elapsed < 3.0
    assert answer.cost_usd is None  # a failed call may have been billed: unknown, not $0


def test_a_batch_stops_after_n_failures_of_one_kind_in_a_row_and_says_which(tmp_path):
    with ScriptedOpenAIServer([], then="500") as server:
        with client_for(tmp_path, server, num_retries=1, concurrency=1,
                        max_consecutive_failures=3) as client:
            with pytest.raises(ModelCallsFailed) as raised:
                client.run([judge(f"item {i}") for i in range(8)])
        assert len(server.requests) == 3 * 2  # 3 requests of 2 attempts; 5 never sent
    assert "stopped asking model 'openai/stub-model' after 3 requests in a row failed with " \
           "InternalServerError" in str(raised.value)


def test_a_success_resets_the_count_of_failures_in_a_row(tmp_path):
    script = ["500", "500", "Yes", "500", "500", "No"]
    with ScriptedOpenAIServer(script, then="500") as server:
        with client_for(tmp_path, server, num_retries=0, concurrency=1,
                        max_consecutive_failures=3) as client:
            answers = client.run([judge(f"item {i}") for i in range(6)], raise_on_failure=False)
    assert [a.outcome for a in answers] == ["failed", "failed", "ok", "failed", "failed", "ok"]


def test_a_placeholder_key_reaches_a_server_that_needs_none_instead_of_the_real_one(
        tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-secret")
    with ScriptedOpenAIServer(["Yes"]) as server:
        with client_for(tmp_path, server, placeholder_api_key=True) as client:
            (answer,) = client.run([judge()])
        sent = server.headers[0]["authorization"]
    assert answer.outcome == "ok"
    assert sent == f"Bearer {PLACEHOLDER_API_KEY}" and "sk-real-secret" not in sent


def test_a_placeholder_key_needs_no_key_in_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    with ScriptedOpenAIServer(["Yes"]) as server:
        with client_for(tmp_path, server, placeholder_api_key=True) as client:
            (answer,) = client.run([judge()])
    assert answer.outcome == "ok"


# --- the endpoint is part of a remote model's identity ----------------------------------------

def test_a_model_pointed_at_another_server_is_asked_there_not_served_the_old_answer(tmp_path):
    with ScriptedOpenAIServer(["Yes"]) as first, ScriptedOpenAIServer(["No"]) as second:
        with client_for(tmp_path, first) as client:
            (a,) = client.run([judge()])
        with client_for(tmp_path, second) as client:
            (b,) = client.run([judge()])
        assert len(second.requests) == 1
    assert (a.parsed, b.parsed) == ("yes", "no") and not b.cached and a.key != b.key


def test_a_declared_fingerprint_keeps_the_entries_when_the_server_moves(tmp_path):
    with ScriptedOpenAIServer(["Yes"]) as first, ScriptedOpenAIServer(["No"]) as second:
        with client_for(tmp_path, first, fingerprint="my-vllm-qwen-7b") as client:
            (a,) = client.run([judge()])
        with client_for(tmp_path, second, fingerprint="my-vllm-qwen-7b") as client:
            (b,) = client.run([judge()])
        assert len(second.requests) == 0
    assert b.cached and b.parsed == "yes" and a.key == b.key
