"""The loopback server's fault mix: the opening faults a small run is sure to meet."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from rubriclab.rehearsal.server import FaultMix, RehearsalServer

CHAT = "/v1/chat/completions"


def _body(n: int) -> dict:
    return {"model": "gpt-4o-mini", "max_tokens": 64,
            "messages": [{"role": "user", "content": f"Say hello, number {n}."}]}


def test_the_opening_faults_meet_the_first_ordinary_calls_in_order_then_the_mix_takes_over():
    faults = dataclasses.replace(FaultMix.none(), opening=("rate_limited", "server_error",
                                                           "hang"), hang_s=0.0)
    server = RehearsalServer(faults=faults)
    statuses = [server.handle(CHAT, _body(n))[0] for n in range(5)]
    assert statuses[0] == 429
    assert statuses[1] in (500, 503, 529)
    assert statuses[2] is None  # a hang: no answer at all
    assert statuses[3:] == [200, 200]  # an empty mix after the opening: no more faults
    assert server.stats_dict()["faults"] == {"rate_limited": 1, "server_error": 1, "hang": 1}


def test_batch_rows_do_not_take_the_opening_faults():
    faults = dataclasses.replace(FaultMix.none(), opening=("hang",), hang_s=0.0)
    server = RehearsalServer(faults=faults)
    assert server.handle(CHAT, _body(0), in_batch=True)[0] == 200
    assert server.handle(CHAT, _body(1))[0] is None  # the first ordinary call still hangs


def test_an_opening_fault_that_is_not_a_transport_fault_is_refused_by_name():
    with pytest.raises(ValueError, match=r"opening: \['refusal'\]"):
        FaultMix(opening=("hang", "refusal"))


def test_the_server_counts_answers_by_the_request_they_answer():
    """What the cluster rehearsal's 1.000 rests on: the same request answered twice is two
    answers of one distinct request; a failed call (429) is no answer; a different budget is
    another request."""
    faults = dataclasses.replace(FaultMix.none(), opening=("rate_limited",))
    server = RehearsalServer(faults=faults)
    assert server.handle(CHAT, _body(0))[0] == 429
    assert server.handle(CHAT, _body(0))[0] == 200
    assert server.handle(CHAT, _body(0))[0] == 200
    assert server.handle(CHAT, {**_body(0), "max_tokens": 128})[0] == 200
    assert server.handle(CHAT, _body(1), in_batch=True)[0] == 200
    stats = server.stats_dict()
    assert (stats["answers"], stats["distinct_requests"]) == (4, 3)


# --- the free GETs a preflight makes (rubriclab.llm.preflight) --------------------------------

def _get(server, path: str, headers: dict | None = None) -> tuple[int, dict]:
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(server.url + path, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_the_models_endpoints_answer_in_each_providers_format():
    from rubriclab.rehearsal.server import ModelCatalog

    # a dated model is served until its day (served names it); past its day, gone
    catalog = ModelCatalog.of(["gpt-5", "claude-opus-5", "gemini-3.8-flash", "qwen/qwq-32b",
                               "qwen/old"],
                              retired={"gpt-4-old": "2020-01-01", "qwen/old": "2099-01-01"},
                              today=dt.date(2026, 2, 1))
    with RehearsalServer(faults=FaultMix.none(), models=catalog) as server:
        assert _get(server, "/v1/models/gpt-5") == (200, {
            "id": "gpt-5", "object": "model", "created": 0, "owned_by": "rehearsal",
            "shutdown_date": None})
        status, body = _get(server, "/v1/models/claude-opus-5", {"anthropic-version": "2023-06-01"})
        assert status == 200 and body["type"] == "model" and body["id"] == "claude-opus-5"
        assert body["capabilities"]["batch"]["supported"] is True
        status, body = _get(server, "/v1beta/models/gemini-3.8-flash")
        assert status == 200 and body["name"] == "models/gemini-3.8-flash"
        # gone: each provider's own not-found answer
        status, body = _get(server, "/v1/models/gpt-4-old")
        assert status == 404 and body["error"]["code"] == "model_not_found"
        status, body = _get(server, "/v1/models/nope", {"anthropic-version": "2023-06-01"})
        assert status == 404 and body["error"]["type"] == "not_found_error"
        status, body = _get(server, "/v1beta/models/nope")
        assert status == 404 and body["error"]["status"] == "NOT_FOUND"
        # lists: the retired ones with their date where the format has one
        status, body = _get(server, "/v1/models")
        listed = {entry["id"]: entry["shutdown_date"] for entry in body["data"]}
        assert listed["gpt-4-old"] == "2020-01-01" and listed["gpt-5"] is None
        status, body = _get(server, "/api/v1/models")
        assert {e["id"]: e["expiration_date"] for e in body["data"]}["qwen/old"] == "2099-01-01"
        status, body = _get(server, "/v1beta/models")
        assert "models/gpt-4-old" not in {e["name"] for e in body["models"]}  # no date: gone
        assert _get(server, "/api/v1/key")[0] == 200
        stats = server.stats_dict()
        assert stats["requests"] == {} and stats["answers"] == 0
        assert stats["free_requests"] == {"model": 6, "models_list": 3, "key": 1}


def test_every_model_is_served_by_default():
    with RehearsalServer(faults=FaultMix.none()) as server:
        assert _get(server, "/v1/models/anything-at-all")[0] == 200
        assert _get(server, "/v1/models/org/name")[0] == 200


def test_a_request_with_a_key_not_taken_is_refused_and_not_paid_for():
    import json
    import urllib.error
    import urllib.request

    from rubriclab.rehearsal.server import ModelCatalog

    with RehearsalServer(faults=FaultMix.none(), models=ModelCatalog.of(keys=["good"])) as server:
        def chat(key: str) -> int:
            request = urllib.request.Request(
                server.url + CHAT, data=json.dumps(_body(0)).encode(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code

        assert chat("bad") == 401
        assert server.stats_dict()["requests"] == {}
        assert chat("good") == 200
        assert server.stats_dict()["requests"] == {"openai": 1}
        status, body = _get(server, "/v1beta/models/x", {"x-goog-api-key": "bad"})
        assert status == 400 and body["error"]["details"][0]["reason"] == "API_KEY_INVALID"
        assert _get(server, "/v1beta/models/x?key=good")[0] == 200
        status, body = _get(server, "/v1/models/x", {"x-api-key": "bad",
                                                     "anthropic-version": "2023-06-01"})
        assert status == 401 and body["error"]["type"] == "authentication_error"
        assert _get(server, "/api/v1/models")[0] == 200  # OpenRouter's list is public
        assert server.stats_dict()["refused_keys"] == 3


def test_the_rehearsals_overlay_passes_the_preflight_for_every_model_of_paper_yaml(tmp_path):
    """What `make rehearse` needs with llm.preflight on: the server serves (and lists) the
    config's models, each at the api_base and with the placeholder key the overlay gives it."""
    from pathlib import Path

    from rubriclab.llm import LLMConfig
    from rubriclab.llm.preflight import OK, preflight
    from rubriclab.rehearsal.run import merged_config, model_strings, overlay, serve_models_of

    paper = Path(__file__).resolve().parents[2] / "config" / "paper.yaml"
    config = merged_config([paper])
    with RehearsalServer(faults=FaultMix.none()) as server:
        serve_models_of(server, config)
        layer = overlay(config, server.url, tmp_path, str(tmp_path))
        own = config["llm"]["per_model"]
        llm = LLMConfig.from_dict({"per_model": {**own, **{
            model: {**(own.get(model) or {}), **values}
            for model, values in layer["llm"]["per_model"].items()}}})
        remote = [m for m in model_strings(config) if not m.startswith(("fake/", "local/"))]
        verdicts = preflight({m: llm.settings_for(m) for m in remote}, sleep=lambda s: None)
        stats = server.stats_dict()
    assert [v.line() for v in verdicts if v.status != OK] == []
    assert {v.provider for v in verdicts} >= {"openai", "anthropic", "gemini", "openrouter"}
    assert stats["requests"] == {} and sum(stats["free_requests"].values()) > 0
    assert stats["free_requests"]["batches"] > 0  # paper.yaml's batch: true models
