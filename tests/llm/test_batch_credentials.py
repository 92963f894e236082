"""Batch calls follow the credential rules of ordinary calls: a server that needs no key
(`placeholder_api_key`) gets the placeholder on every batch call, never the environment's key;
a batched model without a key stops before the first request, naming the variable."""

import asyncio

import pytest

from rubriclab.llm import Ledger, LLMClient
from rubriclab.llm.backends import PLACEHOLDER_API_KEY, MissingAPIKey
from rubriclab.llm.batch import BatchRunner
from rubriclab.llm.batch_store import BatchStore

from .batch_setup import env_keys, provider, server  # noqa: F401  (fixtures)
from .batch_setup import KEY_VARIABLES, MODELS, SENTINEL, config, paid, questions

CREDENTIAL_HEADERS = ("authorization", "x-api-key", "x-goog-api-key")
# The variable `api_key_env` names: the loopback server's own key.
SERVER_KEY = "LOOPBACK_SERVER_API_KEY"
SERVER_SECRET = "sk-loopback-server-own-key"


def _leaks(server):
    return [(method, path, name) for method, path, headers in server.headers_seen
            for name, value in [("path", path), *headers.items()] if SENTINEL in value]


def test_a_server_that_needs_no_key_never_receives_the_environments_key_in_a_batch(
        tmp_path, server, provider, monkeypatch):
    server.keep_headers = True
    api = server.batch_apis[provider]
    # Killed between the provider creating the batch and the id being stored: the rerun
    # lists the provider's batches too, so every kind of batch call is made.
    api.hold = True
    original_save = BatchStore.save

    def save_then_die(store, job):
        if job.batch_id:
            raise KeyboardInterrupt("killed before the batch id was stored")
        return original_save(store, job)

    cfg = config(tmp_path / "cache", server.url, provider, placeholder_api_key=True)
    monkeypatch.setattr(BatchStore, "save", save_then_die)
    with LLMClient(cfg) as client:
        with pytest.raises(KeyboardInterrupt):
            client.run(questions(provider, range(3)))
    monkeypatch.setattr(BatchStore, "save", original_save)
    api.hold = False
    with LLMClient(cfg) as client:
        answers = client.run(questions(provider, range(3)))
    assert all(a.outcome == "ok" and a.batch for a in answers)
    assert api.calls["create"] == 1 and api.calls["list"] >= 1 and api.calls["content"] >= 1
    assert server.headers_seen and _leaks(server) == []
    credentials = [(method, path, value) for method, path, headers in server.headers_seen
                   for name, value in headers.items() if name in CREDENTIAL_HEADERS]
    # Each call carried the placeholder (a resumable upload's second part goes to the URL its
    # first part was given, with no key).
    assert len(credentials) >= len(server.headers_seen) - api.calls["upload"]
    assert all(PLACEHOLDER_API_KEY in value for _, _, value in credentials), credentials


def test_a_server_that_needs_no_key_takes_batches_without_any_key_in_the_environment(
        tmp_path, server, provider, monkeypatch):
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name)
    with LLMClient(config(tmp_path / "cache", server.url, provider,
                          placeholder_api_key=True)) as client:
        answers = client.run(questions(provider, range(3)))
    assert all(a.outcome == "ok" and a.batch for a in answers)
    # batch rows only: no request went out as an ordinary call at the full price
    assert paid(server, provider) == server.stats.batch_rows[provider] == 3


@pytest.mark.parametrize("check_api_key", [True, False])
def test_missing_credentials_stop_a_batched_model_before_any_request(tmp_path, server, provider,
                                                                    monkeypatch, check_api_key):
    """The key `api_key_env` names is not set: nothing is sent. At the provider's own API
    (no api_base), the provider's variable is not set: the batch runner refuses too."""
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name)
    monkeypatch.delenv(SERVER_KEY, raising=False)
    server.keep_headers = True
    variable = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY",
                "gemini": "GEMINI_API_KEY"}[provider]
    ledger_path = tmp_path / "ledger.jsonl"
    cfg = config(tmp_path / "cache", server.url, provider, check_api_key=check_api_key,
                 api_key_env=SERVER_KEY)
    with LLMClient(cfg, ledger=Ledger(ledger_path, "r")) as client:
        with pytest.raises(MissingAPIKey, match=rf"{MODELS[provider]}.*{SERVER_KEY}"):
            client.run(questions(provider, range(3)))
    assert server.headers_seen == [] and paid(server, provider) == 0
    assert ledger_path.read_text() == ""
    # The batch runner itself refuses too, before any call.
    for settings, named in ((cfg, SERVER_KEY),
                            (config(tmp_path / "cache", server.url, provider,
                                    check_api_key=check_api_key, api_base=None), variable)):
        runner = BatchRunner(settings)
        try:
            with pytest.raises(MissingAPIKey, match=named):
                asyncio.run(runner.run(MODELS[provider], {
                    str(i): r for i, r in enumerate(questions(provider, range(2)))}))
        finally:
            runner.close()
    assert server.headers_seen == []


@pytest.mark.parametrize("key_env", [None, SERVER_KEY])
def test_an_api_base_that_is_not_the_providers_never_receives_the_environments_key(
        tmp_path, server, provider, monkeypatch, key_env):
    """No placeholder_api_key: the endpoint gets the key its api_key_env names, else the
    placeholder; the provider's key in the environment reaches it on no batch call."""
    monkeypatch.setenv(SERVER_KEY, SERVER_SECRET)
    server.keep_headers = True
    cfg = config(tmp_path / "cache", server.url, provider, api_key_env=key_env)
    with LLMClient(cfg) as client:
        answers = client.run(questions(provider, range(3)))
    assert all(a.outcome == "ok" and a.batch for a in answers)
    assert paid(server, provider) == server.stats.batch_rows[provider] == 3
    assert server.headers_seen and _leaks(server) == []
    credentials = [value for _, _, headers in server.headers_seen
                   for name, value in headers.items() if name in CREDENTIAL_HEADERS]
    expected = SERVER_SECRET if key_env else PLACEHOLDER_API_KEY
    assert len(credentials) >= len(server.headers_seen) - server.batch_apis[provider].calls[
        "upload"]
    assert credentials and all(expected in value for value in credentials), credentials
