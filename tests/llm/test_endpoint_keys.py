"""An endpoint that is not the provider's own API never receives the provider's key from the
environment (issue 24, item 2): ordinary calls send it the key `api_key_env` names, else the
placeholder, measured at a loopback server that records every Authorization header; a config
that says neither is refused before the first job, saying what to write."""

import pytest

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.backends import (PLACEHOLDER_API_KEY, Backends, MissingAPIKey,
                                    api_key_to_send, is_providers_endpoint)
from rubriclab.validate import endpoint_problems

from .loopback import LoopbackServer, answers

MODEL = "openai/served-judge"
PROVIDER_KEY = "sk-provider-key-in-the-environment"
SERVER_KEY = "VLLM_API_KEY"
SERVER_SECRET = "sk-the-servers-own-key"


@pytest.fixture(autouse=True)
def provider_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", PROVIDER_KEY)


def ask(i):
    return Request.chat(MODEL, [{"role": "user", "content": f"claim {i}"}],
                        response_format="yes_no", max_tokens=4)


def run_against(tmp_path, server, **settings):
    cfg = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(
        api_base=server.api_base, backoff_s=0.0, timeout_s=5.0, num_retries=0, **settings))
    with LLMClient(cfg) as client:
        return client.run([ask(i) for i in range(3)])


@pytest.mark.parametrize("settings, sent", [
    ({}, PLACEHOLDER_API_KEY),
    ({"api_key_env": SERVER_KEY}, SERVER_SECRET),
    ({"placeholder_api_key": True}, PLACEHOLDER_API_KEY),
])
def test_an_api_base_gets_its_own_key_or_the_placeholder_never_the_environments(
        tmp_path, monkeypatch, settings, sent):
    monkeypatch.setenv(SERVER_KEY, SERVER_SECRET)
    with LoopbackServer(answers("Yes")) as server:
        completions = run_against(tmp_path, server, **settings)
    assert [c.outcome for c in completions] == ["ok"] * 3
    assert [h["authorization"] for h in server.headers] == [f"Bearer {sent}"] * 3
    assert all(PROVIDER_KEY not in str(h) for h in server.headers)


def test_a_key_variable_that_is_not_set_stops_before_any_request(tmp_path, monkeypatch):
    monkeypatch.delenv(SERVER_KEY, raising=False)
    with LoopbackServer(answers("Yes")) as server:
        with pytest.raises(MissingAPIKey, match=SERVER_KEY):
            run_against(tmp_path, server, api_key_env=SERVER_KEY)
    assert server.requests == []
    # check_api_key: false does not let it through to the environment's key
    cfg = LLMConfig(defaults=ModelSettings(api_key_env=SERVER_KEY, check_api_key=False))
    assert Backends(cfg).missing_api_keys(MODEL) == [SERVER_KEY]


def test_the_providers_own_api_gets_the_providers_key():
    assert api_key_to_send("openai", ModelSettings()) == PROVIDER_KEY
    assert api_key_to_send("openai", ModelSettings(api_base="https://api.openai.com/v1/")) \
        == PROVIDER_KEY
    for other in ("http://api.openai.com/v1", "https://api.openai.com.evil.example/v1",
                  "https://127.0.0.1:8000/v1", "https://proxy.example/api.openai.com"):
        assert not is_providers_endpoint("openai", other), other
        assert api_key_to_send("openai", ModelSettings(api_base=other)) == PLACEHOLDER_API_KEY
    assert is_providers_endpoint("azure", "https://my-resource.openai.azure.com/")


def test_a_config_that_does_not_say_which_key_an_api_base_gets_is_refused():
    def config(**settings):
        return {"models": {"judge": MODEL},
                "llm": {"per_model": {MODEL: {"api_base": "http://127.0.0.1:8000/v1",
                                              **settings}}}}

    (problem,) = endpoint_problems(config())
    assert problem.startswith(f"llm.per_model[{MODEL!r}].api_base: 'http://127.0.0.1:8000/v1' "
                              "is not openai's own API")
    assert "OPENAI_API_KEY" in problem and "api_key_env: NAME" in problem
    assert "placeholder_api_key: true" in problem
    assert endpoint_problems(config(api_key_env=SERVER_KEY)) == []
    assert endpoint_problems(config(placeholder_api_key=True)) == []
    assert endpoint_problems(config(api_base="https://api.openai.com/v1")) == []
    # from llm.defaults, for the model the config names
    (problem,) = endpoint_problems({"models": {"judge": MODEL},
                                    "llm": {"defaults": {"api_base": "http://10.0.0.5/v1"}}})
    assert problem.startswith("llm.defaults.api_base: 'http://10.0.0.5/v1'")
    assert endpoint_problems({"models": {"judge": "fake/yes"},
                              "llm": {"defaults": {"api_base": "http://10.0.0.5/v1"}}}) == []


def test_a_key_pasted_in_place_of_its_variable_is_refused_and_not_shown():
    with pytest.raises(ValueError, match=r"llm.per_model\['openai/x'\].api_key_env") as refused:
        LLMConfig.from_dict({"per_model": {"openai/x": {"api_key_env": "sk-abc123-def456"}}})
    assert "sk-abc123" not in str(refused.value)
