"""Reasoning models and provider settings, through litellm's real HTTP path to a loopback server.

The server (rubriclab.rehearsal.server) speaks OpenAI's, Anthropic's and Gemini's wire formats;
a model it treats as reasoning spends completion tokens thinking before it answers.
"""

from __future__ import annotations

import pytest

from rubriclab.llm import LLMClient, LLMConfig, Request
from rubriclab.llm.client import UnusableAnswers
from rubriclab.rehearsal.server import FaultMix, ReasoningModel, RehearsalServer

VERDICT = [{"role": "system", "content": "You grade."},
           {"role": "user", "content": "Is the sky blue? Answer with exactly one word: Yes or No."}]


@pytest.fixture
def server():
    with RehearsalServer(faults=FaultMix.none(),
                         reasoning={"thinker": ReasoningModel(default_thinking=300)}) as s:
        s.keep_bodies = True
        yield s


@pytest.fixture(autouse=True)
def placeholder_keys(monkeypatch):
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(key, "placeholder")


def llm_config(tmp_path, server, per_model=None, roles=None) -> LLMConfig:
    models = {"openai/thinker": "/v1", "openai/plain": "/v1", "openai/gpt-5": "/v1",
              "anthropic/claude-opus-4-1-20250805": "", "gemini/gemini-2.5-flash": ""}
    raw = {"per_model": {m: {"api_base": server.url + suffix, "backoff_s": 0.0,
                             "timeout_s": 5.0, **(per_model or {}).get(m, {})}
                         for m, suffix in models.items()},
           "roles": roles or {}}
    return LLMConfig.from_dict(raw, cache_dir=tmp_path / "cache")


def verdict(model: str, **fields) -> Request:
    return Request.chat(model, VERDICT, max_tokens=4, response_format="yes_no", **fields)


def test_reasoning_effort_and_provider_default_temperature_reach_the_server(tmp_path, server):
    config = llm_config(tmp_path, server, roles={"judge": {"reasoning_effort": "medium"}},
                        per_model={"openai/thinker": {"reasoning_tokens": 2048}})
    with LLMClient(config, role="judge") as client:
        (answer,) = client.run([verdict("openai/thinker", temperature=None)])
    assert answer.outcome == "ok"
    (path, body), = server.bodies
    assert path.endswith("/chat/completions")
    assert body["reasoning_effort"] == "medium"
    assert "temperature" not in body  # None: the provider's default
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 4 + 2048


def test_anthropic_thinking_is_sent_as_its_budget(tmp_path, server):
    config = llm_config(tmp_path, server, roles={"judge": {"reasoning_effort": "low"}},
                        per_model={"anthropic/claude-opus-4-1-20250805": {"reasoning_tokens": 2048}})
    with LLMClient(config, role="judge") as client:
        (answer,) = client.run([verdict("anthropic/claude-opus-4-1-20250805", temperature=1.0)])
    assert answer.outcome == "ok"
    (path, body), = server.bodies
    assert path.endswith("/v1/messages")
    assert body["thinking"]["type"] == "enabled"
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]


def test_effort_and_default_temperature_change_the_cache_key(tmp_path, server):
    plain = llm_config(tmp_path, server)
    effort = llm_config(tmp_path, server, roles={"judge": {"reasoning_effort": "high"}})
    with LLMClient(plain) as a, LLMClient(effort, role="judge") as b:
        base = verdict("openai/plain")
        keys = {a.key_for(a.prepare(base)), b.key_for(b.prepare(base)),
                a.key_for(a.prepare(verdict("openai/plain", temperature=None)))}
    assert len(keys) == 3


def test_a_role_settings_model_entry_overrides_the_role(tmp_path, server):
    config = llm_config(tmp_path, server, roles={"responder": {
        "reasoning_effort": "low", "per_model": {"openai/plain": {"reasoning_effort": None}}}})
    with LLMClient(config, role="responder") as client:
        assert client.prepare(verdict("openai/plain")).reasoning_effort is None
        assert client.prepare(verdict("openai/thinker")).reasoning_effort == "low"


def test_an_answer_whose_budget_went_to_reasoning_is_never_parsed(tmp_path, server):
    """Empty content, finish_reason "length": asked again with twice the budget, twice, then
    counted as unusable (outcome "unparseable", the error says why); never read as "No" and
    never cached."""
    config = llm_config(tmp_path, server)  # no room for reasoning: 4, 8, 16 tokens < 300
    # its only answer unusable: the job fails at its end (LLMClient.finish)
    with pytest.raises(UnusableAnswers), LLMClient(config) as client:
        (answer,) = client.run([verdict("openai/thinker")], raise_on_failure=False)
        assert len(client.cache) == 0
    assert answer.outcome == "unparseable" and answer.parsed is None
    assert "AnswerCutOff" in answer.error
    budgets = [body.get("max_completion_tokens", body.get("max_tokens"))
               for _, body in server.bodies]
    assert budgets == [4, 8, 16]


def test_a_cut_off_answer_is_asked_again_with_a_larger_budget_until_it_fits(tmp_path, server):
    # 300 thinking tokens: 4 + 200 = 204 is too small, 408 fits.
    config = llm_config(tmp_path, server, per_model={"openai/thinker": {"reasoning_tokens": 200}})
    with LLMClient(config) as client:
        (answer,) = client.run([verdict("openai/thinker")])
        (again,) = client.run([verdict("openai/thinker")])
    assert answer.outcome == "ok" and answer.parsed in ("yes", "no")
    assert [b.get("max_completion_tokens", b.get("max_tokens")) for _, b in server.bodies] == \
        [204, 408]
    assert again.cached and again.key == answer.key  # cached under the request as asked
    # the same prompt was paid for twice; the second asking's tokens are told apart
    assert answer.usage.prompt_tokens == 2 * answer.repeat_prompt_tokens > 0


def test_gemini_thinking_by_default_needs_room(tmp_path, server):
    """gemini-2.5-flash thinks unless told not to: a 4-token verdict comes back empty."""
    server.reasoning["gemini-2.5-flash"] = ReasoningModel(default_thinking=300)
    short = llm_config(tmp_path / "a", server)
    roomy = llm_config(tmp_path / "b", server,
                       per_model={"gemini/gemini-2.5-flash": {"reasoning_tokens": 1024}})
    with pytest.raises(UnusableAnswers), LLMClient(short) as client:
        (cut,) = client.run([verdict("gemini/gemini-2.5-flash")], raise_on_failure=False)
    with LLMClient(roomy) as client:
        (fits,) = client.run([verdict("gemini/gemini-2.5-flash")])
    assert cut.outcome == "unparseable" and "AnswerCutOff" in cut.error
    assert fits.outcome == "ok" and fits.parsed in ("yes", "no")
    assert server.bodies[-1][0].endswith(":generateContent")


def test_free_text_cut_off_by_its_budget_is_kept(tmp_path, server):
    """A response's budget is its length limit: a non-empty text cut off there is an answer."""
    long_prompt = [{"role": "user", "content": "Tell me about sleep hygiene."}]
    config = llm_config(tmp_path, server)
    with LLMClient(config) as client:
        (answer,) = client.run([Request.chat("openai/plain", long_prompt, max_tokens=3,
                                             response_format="text")])
    assert answer.outcome == "ok" and 0 < len(answer.text) <= 12
    assert len(server.bodies) == 1


def test_the_embedded_model_takes_no_reasoning_effort(tmp_path):
    config = LLMConfig.from_dict({"roles": {"judge": {"reasoning_effort": "low"}}},
                                 cache_dir=tmp_path)
    with LLMClient(config, role="judge") as client:
        prepared = client.prepare(verdict("local/default"))
    assert prepared.reasoning_effort == "low"  # the backend refuses it, naming the model
    from rubriclab.llm.backends import Backends

    with pytest.raises(ValueError, match="takes no reasoning effort"):
        import asyncio

        asyncio.run(Backends(config)._complete_with_litellm(prepared, VERDICT,
                                                            config.settings_for("local/default")))


def test_unknown_role_setting_is_refused():
    with pytest.raises(ValueError, match="unknown role setting"):
        LLMConfig.from_dict({"roles": {"judge": {"reasoning": "low"}}})


def test_a_price_litellm_does_not_know_is_unknown_not_zero(tmp_path, server):
    """claude-opus-4-1 is listed at $0 in litellm's map and openai/plain not at all: both
    unknown; gpt-5 is priced."""
    config = llm_config(tmp_path, server)
    with LLMClient(config) as client:
        opus, plain, priced = client.run([
            verdict("anthropic/claude-opus-4-1-20250805", temperature=1.0),
            verdict("openai/plain"), verdict("openai/gpt-5", temperature=None)])
    assert opus.cost_usd is None and plain.cost_usd is None
    assert priced.cost_usd is not None and priced.cost_usd > 0


@pytest.mark.parametrize("role", ["responder", "degrader"])
def test_paper_yamls_grok_is_sent_as_a_model_that_does_not_think(tmp_path, server, monkeypatch,
                                                                  role):
    """config/paper.yaml's llm block as it is, the Grok pointed at the server: Table A.3's
    "Grok 4.20 (non-reasoning)" goes out through litellm's xAI path under its own name, with no
    effort and no room for thinking added to its budget, as transfer's responder and degrader."""
    from pathlib import Path

    from rubriclab.config import load_yaml

    monkeypatch.setenv("XAI_API_KEY", "placeholder")
    grok = "xai/grok-4.20-0309-non-reasoning"
    raw = load_yaml(Path(__file__).resolve().parents[2] / "config" / "paper.yaml")["llm"]
    raw["per_model"].setdefault(grok, {}).update(api_base=server.url + "/v1", backoff_s=0.0)
    raw.pop("budget_usd")  # the run's budget needs the run's ledger; this client has none
    config = LLMConfig.from_dict(raw, cache_dir=tmp_path / "cache")
    prompt = [{"role": "user", "content": "How much water should I drink a day?"}]
    with LLMClient(config, role=role) as client:
        (answer,) = client.run([Request.chat(grok, prompt, max_tokens=300, temperature=None,
                                             response_format="transfer_response")])
    assert answer.outcome == "ok"
    (path, body), = server.bodies
    assert path.endswith("/v1/chat/completions") and body["model"] == "grok-4.20-0309-non-reasoning"
    assert "reasoning_effort" not in body and "temperature" not in body
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 300
