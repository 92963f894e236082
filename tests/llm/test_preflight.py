"""The free preflight (issue 33): each remote model looked up on its provider's models endpoint,
the key checked, the batch API reached; no paid request. Against the loopback RehearsalServer
(real HTTP on 127.0.0.1), and, for the providers' own addresses, a client that records what
it would ask and sends nothing."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pytest

from rubriclab.llm.preflight import OK, PROVIDERS, REFUSED, UNCHECKED, check_model, preflight
from rubriclab.llm.settings import ModelSettings
from rubriclab.rehearsal.server import FaultMix, ModelCatalog, RehearsalServer

from .openai_stub import ScriptedOpenAIServer

GOOD, BAD = "sk-preflight-good-0123456789", "sk-preflight-bad-9876543210"
KEY_VARIABLE = "PREFLIGHT_TEST_API_KEY"
# One model of each provider prefix config/paper.yaml uses, as the provider names it.
MODELS = {"openai": "gpt-5.6-terra", "anthropic": "claude-opus-5", "gemini": "gemini-3.8-flash",
          "xai": "grok-4.20-0309-non-reasoning", "deepseek": "deepseek-v4-flash",
          "openrouter": "qwen/qwq-32b", "nebius": "Qwen/Qwen3.8-27B", "zai": "glm-5.3-flash"}
BATCHED = ("openai", "anthropic", "gemini")
OPENAI_COMPATIBLE = ("openai", "deepseek", "xai", "openrouter", "nebius", "zai")
NO_WAIT = dict(sleep=lambda seconds: None)


def settings_at(server: RehearsalServer, provider: str, **values) -> ModelSettings:
    """The model's settings pointing at the server, as the rehearsal's overlay does."""
    base = server.url + ("/v1" if provider in OPENAI_COMPATIBLE else "")
    values = {"api_key_env": KEY_VARIABLE, "batch": provider in BATCHED, **values}
    return ModelSettings(api_base=base, **values)


def no_paid_request(server: RehearsalServer) -> bool:
    stats = server.stats_dict()
    return (stats["requests"] == {} and stats["answers"] == 0
            and all(calls.get("create", 0) == calls.get("upload", 0) == 0
                    for calls in stats["batch_calls"].values()))


BASE_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL",
                  "GEMINI_API_BASE", "XAI_API_BASE", "DEEPSEEK_API_BASE", "OPENROUTER_API_BASE",
                  "NEBIUS_API_BASE", "ZAI_API_BASE")


@pytest.fixture(autouse=True)
def no_base_variables(monkeypatch):
    """litellm's *_API_BASE variables of the machine running the tests are not theirs."""
    for name in BASE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def good_key(monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, GOOD)


def served_catalog(**values) -> ModelCatalog:
    return ModelCatalog.of(MODELS.values(), keys=[GOOD], **values)


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_served_model_of_each_provider_passes_with_free_requests_only(provider, good_key):
    with RehearsalServer(faults=FaultMix.none(), models=served_catalog()) as server:
        server.keep_headers = True
        model = f"{provider}/{MODELS[provider]}"
        verdict = check_model(model, settings_at(server, provider), **NO_WAIT)
        assert verdict.status == OK, verdict.line()
        assert "the key is taken" in verdict.reason
        if provider in BATCHED:
            assert "its batch API answers" in verdict.reason
        assert no_paid_request(server)
        stats = server.stats_dict()
        assert sum(stats["free_requests"].values()) == verdict.requests >= 1
        assert all(method == "GET" for method, _, _ in server.headers_seen)
    headers = server.headers_seen[0][2]
    if provider == "anthropic":
        assert headers["x-api-key"] == GOOD and headers["anthropic-version"] == "2023-06-01"
    elif provider == "gemini":
        assert headers["x-goog-api-key"] == GOOD
    else:
        assert headers["authorization"] == f"Bearer {GOOD}"


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_retired_model_is_refused_before_any_paid_request(provider, good_key):
    catalog = served_catalog(retired={MODELS[provider]: "2026-01-31"},
                             today=dt.date(2026, 2, 1))
    with RehearsalServer(faults=FaultMix.none(), models=catalog) as server:
        verdict = check_model(f"{provider}/{MODELS[provider]}", settings_at(server, provider),
                              today=dt.date(2026, 2, 1), **NO_WAIT)
        assert no_paid_request(server)
    assert verdict.status == REFUSED, verdict.line()
    if provider in ("anthropic", "gemini"):  # their formats carry no date: the model is gone
        assert "does not serve" in verdict.reason
    else:  # OpenAI's shutdown_date (and the OpenAI-compatible lists')
        assert "retired on 2026-01-31 (shutdown_date)" in verdict.reason


def test_a_model_retiring_within_the_horizon_is_warned_of_not_refused(good_key):
    """The retirement guard's rule (rubriclab.llm.retirement.classify): a date that has come
    refuses; one within the run's horizon is a warning; a later one a note."""
    catalog = served_catalog(retired={"gpt-5.6-terra": "2026-02-03"},
                             today=dt.date(2026, 2, 1))
    with RehearsalServer(faults=FaultMix.none(), models=catalog) as server:
        settings = settings_at(server, "openai")
        soon = check_model("openai/gpt-5.6-terra", settings, today=dt.date(2026, 2, 1),
                           horizon_hours=30 * 24, **NO_WAIT)
        later = check_model("openai/gpt-5.6-terra", settings, today=dt.date(2026, 2, 1),
                            horizon_hours=24, **NO_WAIT)
        assert no_paid_request(server)
    assert soon.status == OK, soon.line()
    assert any("retires on 2026-02-03 (shutdown_date)" in w for w in soon.warnings)
    assert "WARNING" in soon.line()
    assert later.status == OK and later.warnings == ()
    assert "retires on 2026-02-03 (shutdown_date)" in later.notes


def test_a_listed_retirement_date_that_has_come_refuses_and_deprecated_only_warns(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD)
    url = "https://api.openai.com/v1/models/gpt-old"
    for entry, status in [({"id": "gpt-old", "shutdown_date": "2026-02-01"}, REFUSED),
                          ({"id": "gpt-old", "shutdown_date": "2026-02-02"}, OK),
                          ({"id": "gpt-old", "deprecated": True}, OK)]:
        verdict = check_model("openai/gpt-old", ModelSettings(),
                              client=RecordingClient({url: (200, entry)}),
                              today=dt.date(2026, 2, 1), **NO_WAIT)
        assert verdict.status == status, verdict.line()
        if status == OK:
            assert verdict.warnings, verdict.line()


def test_the_catalog_judges_dates_by_its_own_day_and_served_comes_first():
    catalog = ModelCatalog.of(["a"], retired={"a": "2026-03-01", "b": "2099-01-01"},
                              today=dt.date(2026, 3, 2))
    assert catalog.status("a") == "retired"
    assert catalog.status("a", dt.date(2026, 2, 1)) == "served"
    assert catalog.status("b") == "unknown"  # dated, but not among the served
    assert ModelCatalog.of(None, retired={"b": "2099-01-01"}).status("b") == "served"


def test_openrouters_public_list_carries_its_expiration_date(good_key):
    catalog = served_catalog(retired={"qwen/qwq-32b": "2026-01-31"},
                             today=dt.date(2026, 2, 1))
    with RehearsalServer(faults=FaultMix.none(), models=catalog) as server:
        settings = ModelSettings(api_base=server.url + "/api/v1", api_key_env=KEY_VARIABLE)
        verdict = check_model("openrouter/qwen/qwq-32b", settings, today=dt.date(2026, 2, 1),
                              **NO_WAIT)
        assert no_paid_request(server)
    assert verdict.status == REFUSED and "(expiration_date)" in verdict.reason


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_an_unknown_model_is_refused_before_any_paid_request(provider, good_key):
    with RehearsalServer(faults=FaultMix.none(), models=served_catalog()) as server:
        verdict = check_model(f"{provider}/no-such-model", settings_at(server, provider),
                              **NO_WAIT)
        assert no_paid_request(server)
    assert verdict.status == REFUSED, verdict.line()
    assert "does not serve 'no-such-model'" in verdict.reason
    assert "name a model the provider serves" in verdict.fix


@pytest.mark.parametrize("provider", sorted(MODELS))
def test_a_bad_key_is_refused_and_never_shown(provider, monkeypatch):
    monkeypatch.setenv(KEY_VARIABLE, BAD)
    with RehearsalServer(faults=FaultMix.none(), models=served_catalog()) as server:
        verdict = check_model(f"{provider}/{MODELS[provider]}", settings_at(server, provider),
                              **NO_WAIT)
        assert no_paid_request(server)
        assert server.stats_dict()["refused_keys"] >= 1
    assert verdict.status == REFUSED, verdict.line()
    assert f"refused the key from the environment variable {KEY_VARIABLE}" in verdict.reason
    assert BAD not in verdict.line()


def test_a_missing_key_is_refused_without_a_request(monkeypatch):
    monkeypatch.delenv(KEY_VARIABLE, raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    with RehearsalServer(faults=FaultMix.none(), models=served_catalog()) as server:
        named = check_model("openai/gpt-5.6-terra", settings_at(server, "openai"), **NO_WAIT)
        own = check_model("deepseek/deepseek-v4-flash", ModelSettings(), **NO_WAIT)
        assert server.stats_dict()["free_requests"] == {}
    assert named.status == REFUSED and f"{KEY_VARIABLE} (api_key_env) is not set" in named.reason
    assert own.status == REFUSED and "DEEPSEEK_API_KEY is not set" in own.reason
    assert named.requests == own.requests == 0


def test_a_batch_api_that_keeps_failing_is_refused_after_three_retries(good_key):
    busy = dataclasses.replace(FaultMix.none(), rate_limited=1.0, retry_after_s=0.0)
    with RehearsalServer(faults=busy, models=served_catalog()) as server:
        verdict = check_model("openai/gpt-5.6-terra", settings_at(server, "openai"), **NO_WAIT)
        assert no_paid_request(server)
        assert server.stats_dict()["free_requests"]["batches"] == 4  # 1 + 3 retries
    assert verdict.status == REFUSED and "batch API" in verdict.reason
    assert verdict.requests == 5  # the model's lookup, then four batch lists


def unreachable_base() -> str:
    """A loopback address where nothing listens: every connection is refused."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


class CountingClient:
    """An httpx client that counts the connections it attempts."""

    def __init__(self):
        import httpx

        self.client, self.attempts = httpx.Client(follow_redirects=False), 0

    def get(self, url, headers=None, timeout=None):
        self.attempts += 1
        return self.client.get(url, headers=headers, timeout=timeout)


def test_an_unreachable_provider_is_tried_once_per_address_not_once_per_model(good_key):
    base = unreachable_base()
    models = {f"openai/model-{i}": ModelSettings(api_base=base, api_key_env=KEY_VARIABLE)
              for i in range(5)}
    models["deepseek/other"] = ModelSettings(api_base=base, api_key_env=KEY_VARIABLE)
    client = CountingClient()
    verdicts = preflight(models, client=client, **NO_WAIT)
    assert [v.status for v in verdicts] == [REFUSED] * 6
    assert all(v.unreachable and "could not be reached" in v.reason for v in verdicts)
    assert client.attempts == 4  # the first model's lookup and its three retries, no more
    assert sum(v.requests for v in verdicts) == 4
    assert "the same address" in verdicts[-1].reason


def test_a_refusal_shows_the_address_without_its_credentials(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", GOOD)
    base = "https://someone:s3cret-pw@api.deepseek.com"
    client = RecordingClient({f"{base}/models": (405, {"error": "no such route"})})
    verdict = check_model("deepseek/deepseek-v4-flash", ModelSettings(api_base=base),
                          client=client, **NO_WAIT)
    assert verdict.status == REFUSED, verdict.line()
    assert "s3cret-pw" not in verdict.line() and "https://api.deepseek.com/models" in verdict.line()


@pytest.mark.parametrize("provider, variable, default", [
    ("openai", "OPENAI_BASE_URL", "https://api.openai.com/v1"),
    ("openai", "OPENAI_API_BASE", "https://api.openai.com/v1"),
    ("anthropic", "ANTHROPIC_API_BASE", "https://api.anthropic.com"),
    ("gemini", "GEMINI_API_BASE", "https://generativelanguage.googleapis.com"),
    ("xai", "XAI_API_BASE", "https://api.x.ai/v1"),
    ("deepseek", "DEEPSEEK_API_BASE", "https://api.deepseek.com"),
    ("openrouter", "OPENROUTER_API_BASE", "https://openrouter.ai/api/v1"),
    ("nebius", "NEBIUS_API_BASE", "https://api.studio.nebius.ai/v1"),
    ("zai", "ZAI_API_BASE", "https://api.z.ai/api/paas/v4"),
])
def test_the_base_is_where_litellm_sends_the_call(provider, variable, default, monkeypatch):
    """With no api_base, litellm takes the provider's *_API_BASE variable (the model layer
    passes no base then): the preflight asks there, and an api_base still wins."""
    from rubriclab.llm.preflight import base_of

    monkeypatch.setenv(variable, "https://proxy.example/" + provider + "/")
    model = f"{provider}/{MODELS[provider]}"
    assert base_of(model, ModelSettings()) == f"https://proxy.example/{provider}"
    assert base_of(model, ModelSettings(api_base="http://127.0.0.1:9/v1")) == \
        "http://127.0.0.1:9/v1"
    monkeypatch.delenv(variable)
    assert base_of(model, ModelSettings()) == default


def test_a_server_without_a_models_endpoint_leaves_the_model_unchecked(good_key):
    """An OpenAI-compatible server that answers no GET at all (a vLLM or proxy without
    /models): the model is not refused for that."""
    with ScriptedOpenAIServer([]) as server:
        settings = ModelSettings(api_base=server.api_base, api_key_env=KEY_VARIABLE)
        verdict = check_model("openai/my-served-model", settings, **NO_WAIT)
        assert server.requests == []
    assert verdict.status == UNCHECKED, verdict.line()
    assert "has no models list" in verdict.message()


def test_fake_and_local_models_are_not_looked_up():
    assert preflight({"fake/hash": ModelSettings(), "local/default": ModelSettings()}) == []


def test_a_provider_without_a_known_models_endpoint_is_unchecked():
    verdict = check_model("mistral/mistral-large", ModelSettings(), **NO_WAIT)
    assert verdict.status == UNCHECKED and verdict.requests == 0


# --- the providers' own addresses, asked of a recording client (nothing is sent) -------------

class Recorded:
    def __init__(self, status: int, body: dict):
        self.status_code, self.headers, self.text = status, {}, json.dumps(body)


class RecordingClient:
    """Answers every GET from `answers` (by URL; 200 {} otherwise) and records it."""

    def __init__(self, answers: dict[str, tuple[int, dict]] | None = None):
        self.answers = answers or {}
        self.asked: list[tuple[str, dict]] = []

    def get(self, url, headers=None, timeout=None):
        self.asked.append((url, dict(headers or {})))
        return Recorded(*self.answers.get(url, (200, {"id": url.rsplit("/", 1)[-1]})))


@pytest.mark.parametrize("model, urls", [
    ("openai/gpt-5.6-terra", ["https://api.openai.com/v1/models/gpt-5.6-terra",
                              "https://api.openai.com/v1/batches?limit=1"]),
    ("anthropic/claude-opus-5", ["https://api.anthropic.com/v1/models/claude-opus-5",
                                 "https://api.anthropic.com/v1/messages/batches?limit=1"]),
    ("gemini/gemini-3.8-flash",
     ["https://generativelanguage.googleapis.com/v1beta/models/gemini-3.8-flash",
      "https://generativelanguage.googleapis.com/v1beta/batches?pageSize=1"]),
    ("xai/grok-4.20-0309-non-reasoning",
     ["https://api.x.ai/v1/models/grok-4.20-0309-non-reasoning"]),
    ("deepseek/deepseek-v4-flash", ["https://api.deepseek.com/models"]),
    ("openrouter/qwen/qwq-32b", ["https://openrouter.ai/api/v1/models",
                                 "https://openrouter.ai/api/v1/key"]),
    ("nebius/Qwen/Qwen3.8-27B", ["https://api.studio.nebius.ai/v1/models"]),
    ("zai/glm-5.3-flash", ["https://api.z.ai/api/paas/v4/models"]),
])
def test_the_providers_own_endpoints_and_keys(model, urls, monkeypatch):
    provider, _, name = model.partition("/")
    variable = {"gemini": "GEMINI_API_KEY"}.get(provider, f"{provider.upper()}_API_KEY")
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.setenv(variable, GOOD)
    listing = {"data": [{"id": name}]}
    client = RecordingClient({url: (200, listing) for url in urls if url.endswith("/models")})
    verdict = check_model(model, ModelSettings(batch=provider in BATCHED), client=client,
                          **NO_WAIT)
    assert verdict.status == OK, verdict.line()
    assert [url for url, _ in client.asked] == urls
    sent = client.asked[0][1]
    expected = {"anthropic": {"x-api-key": GOOD, "anthropic-version": "2023-06-01"},
                "gemini": {"x-goog-api-key": GOOD}}.get(provider,
                                                         {"Authorization": f"Bearer {GOOD}"})
    assert expected.items() <= sent.items()


def test_at_the_providers_own_address_a_404_is_an_unknown_model(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD)
    url = "https://api.openai.com/v1/models/gpt-9"
    gone = {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}
    client = RecordingClient({url: (404, gone)})
    verdict = check_model("openai/gpt-9", ModelSettings(), client=client, **NO_WAIT)
    assert verdict.status == REFUSED and "does not exist" in verdict.reason
    assert [u for u, _ in client.asked] == [url]  # no list asked: the provider's answer stands


def test_a_key_a_server_echoes_back_is_redacted(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", GOOD)
    url = "https://api.openai.com/v1/models/gpt-5.6-terra"
    client = RecordingClient({url: (401, {"error": {"message": f"Incorrect API key {GOOD}"}})})
    verdict = check_model("openai/gpt-5.6-terra", ModelSettings(), client=client, **NO_WAIT)
    assert verdict.status == REFUSED and GOOD not in verdict.line()
    assert "[redacted]" in verdict.reason


def test_anthropic_saying_a_model_takes_no_batches_is_refused(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", GOOD)
    url = "https://api.anthropic.com/v1/models/claude-x"
    client = RecordingClient({url: (200, {"id": "claude-x", "capabilities": {
        "batch": {"supported": False}}})})
    verdict = check_model("anthropic/claude-x", ModelSettings(batch=True), client=client,
                          **NO_WAIT)
    assert verdict.status == REFUSED and "takes no batches" in verdict.reason


def test_every_provider_of_the_table_is_documented():
    from rubriclab.llm import preflight as module

    for provider, spec in PROVIDERS.items():
        assert provider in module.__doc__ and spec.base in module.__doc__


# --- the command line and the checks before the first job -----------------------------------

SERVED, UNSERVED = "openai/gpt-5.6-terra", "openai/no-such-model"


def overlay(tmp_path, server: RehearsalServer, judge: str = SERVED, **llm) -> list[str]:
    """config/config.yaml with its judge at the server (keys: the placeholder)."""
    import yaml

    at_server = {"api_base": server.url + "/v1", "placeholder_api_key": True}
    path = tmp_path / "at_server.yaml"
    path.write_text(yaml.safe_dump({
        "cache_dir": str(tmp_path / "cache"), "models": {"judge": judge},
        "llm": {"per_model": {SERVED: at_server, UNSERVED: at_server}, **llm}}))
    return [str(Path(__file__).resolve().parents[2] / "config" / "config.yaml"), str(path)]


def test_the_command_passes_a_served_config_and_refuses_an_unknown_model(tmp_path, capsys):
    from rubriclab.cli import main

    with RehearsalServer(faults=FaultMix.none(), models=ModelCatalog.of(["gpt-5.6-terra"])) \
            as server:
        files = overlay(tmp_path, server)
        assert main(["preflight", "--configfile", *files]) == 0
        out = capsys.readouterr().out
        assert f"{SERVED} (models.judge)  [openai]  OK: openai serves it" in out
        assert main(["preflight", "--configfile", *files,
                     "--config", f"models={{judge: {UNSERVED}}}"]) == 1
        captured = capsys.readouterr()
        assert f"{UNSERVED} (models.judge)  [openai]  REFUSED: openai does not serve" \
            in captured.out
        assert "refused 'openai/no-such-model'" in captured.err
        assert no_paid_request(server)


@pytest.mark.parametrize("arguments, message", [
    (["--configfile", "no/such/file.yaml"], "no config file no/such/file.yaml"),
    (["--config", "llm={preflite: false}"], "'llm.preflite' is not a setting"),
    (["--config", "nonsense"], "--config takes KEY=VALUE"),
])
def test_the_command_says_what_is_wrong_with_its_arguments(arguments, message, capsys):
    from rubriclab.cli import main

    assert main(["preflight", *arguments]) == 2
    assert message in capsys.readouterr().err


def test_the_checks_before_the_first_job_refuse_a_model_the_preflight_refuses(
        schema, tmp_path, monkeypatch):
    from rubriclab.validate import pipeline_config
    from rubriclab.config import ConfigError
    from rubriclab.validate import check_before_first_job

    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    with RehearsalServer(faults=FaultMix.none(), models=ModelCatalog.of(["gpt-5.6-terra"])) \
            as server:
        config = pipeline_config(overlay(tmp_path, server, judge=UNSERVED), [])
        with pytest.raises(ConfigError) as caught:
            check_before_first_job(config, warn=print, job_params=[[UNSERVED]])
        message = str(caught.value)
        assert message.startswith("the preflight refused these models before any paid call")
        assert (f"model {UNSERVED!r} (models.judge), openai: openai does not serve "
                "'no-such-model'") in message
        assert "llm.preflight: false" in message
        asked = sum(server.stats_dict()["free_requests"].values())
        assert asked > 0 and no_paid_request(server)
        # jobs that call no remote model: nothing is looked up
        check_before_first_job(config, warn=print, job_params=[["local/default"]])
        # llm.preflight: false turns it off
        off = pipeline_config(overlay(tmp_path, server, judge=UNSERVED, preflight=False), [])
        check_before_first_job(off, warn=print, job_params=[[UNSERVED]])
        assert sum(server.stats_dict()["free_requests"].values()) == asked
        # a served model passes
        served = pipeline_config(overlay(tmp_path, server), [])
        check_before_first_job(served, warn=print, job_params=[[SERVED]])


def cache_answer_of(tmp_path, model: str) -> None:
    from rubriclab.llm.cache import SQLiteCache
    from rubriclab.llm.cache_records import make_answer
    from rubriclab.llm.request import Message, Request

    (tmp_path / "cache").mkdir(exist_ok=True)
    request = Request(model=model, messages=(Message("user", "hi"),), response_format="text")
    with SQLiteCache(tmp_path / "cache" / "llm_cache.sqlite") as cache:
        cache.put(make_answer("k" * 64, request, "hello", 1, 1, 0.0))


def test_a_model_the_cache_holds_answers_of_is_still_looked_up(tmp_path, monkeypatch):
    """A named run shares the cache with the pilot before it: answers in it do not stand for a
    lookup. A model the provider does not serve, or whose key it refuses, is refused."""
    from rubriclab.validate import pipeline_config
    from rubriclab.validate import preflight_problems

    import yaml

    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    cache_answer_of(tmp_path, UNSERVED)
    cache_answer_of(tmp_path, SERVED)
    with RehearsalServer(faults=FaultMix.none(), models=ModelCatalog.of(["gpt-5.6-terra"])) \
            as server:
        config = pipeline_config(overlay(tmp_path, server, judge=UNSERVED), [])
        refused, _ = preflight_problems(config, [[UNSERVED]])
        assert len(refused) == 1 and "does not serve" in refused[0]
        assert sum(server.stats_dict()["free_requests"].values()) > 0
    monkeypatch.setenv(KEY_VARIABLE, BAD)
    catalog = ModelCatalog.of(["gpt-5.6-terra"], keys=[GOOD])
    with RehearsalServer(faults=FaultMix.none(), models=catalog) as server:
        path = tmp_path / "keyed.yaml"
        path.write_text(yaml.safe_dump({
            "cache_dir": str(tmp_path / "cache"), "models": {"judge": SERVED},
            "llm": {"per_model": {SERVED: {"api_base": server.url + "/v1",
                                           "api_key_env": KEY_VARIABLE}}}}))
        keyed = pipeline_config([str(Path(__file__).resolve().parents[2] / "config" /
                                     "config.yaml"), str(path)], [])
        refused, _ = preflight_problems(keyed, [[SERVED]])
        assert len(refused) == 1 and "refused the key" in refused[0], refused
        assert BAD not in refused[0]


def test_an_unreachable_provider_only_warns_for_a_model_the_cache_can_answer(tmp_path,
                                                                              monkeypatch):
    """Offline replay: the provider cannot be reached, and the cache holds the model's answers."""
    import yaml

    from rubriclab.validate import pipeline_config
    from rubriclab.validate import preflight_problems

    monkeypatch.delenv("RUBRICLAB_CACHE", raising=False)
    monkeypatch.setattr("rubriclab.llm.preflight.MAX_RETRIES", 0)
    away = {"api_base": unreachable_base(), "placeholder_api_key": True}
    path = tmp_path / "offline.yaml"
    path.write_text(yaml.safe_dump({
        "cache_dir": str(tmp_path / "cache"), "models": {"judge": SERVED},
        "llm": {"per_model": {SERVED: away}}}))
    config = pipeline_config([str(Path(__file__).resolve().parents[2] / "config" /
                                  "config.yaml"), str(path)], [])
    refused, warned = preflight_problems(config, [[SERVED]])
    assert len(refused) == 1 and "could not be reached" in refused[0]
    cache_answer_of(tmp_path, SERVED)
    refused, warned = preflight_problems(config, [[SERVED]])
    assert refused == []
    assert len(warned) == 1 and "could not be reached" in warned[0]
    assert "the cache holds its answers" in warned[0]
