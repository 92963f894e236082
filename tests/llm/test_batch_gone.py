"""A batch the provider no longer knows (404 on its poll, or on its results) is marked gone in
the batch store, and its requests follow `batch_fallback`: asked as ordinary calls, or counted
failed and batched anew by the next run; never blocked."""

import pytest

from rubriclab.llm import LLMClient

from .batch_setup import env_keys, provider, server  # noqa: F401  (fixtures)
from .batch_setup import KEY_VARIABLES, SENTINEL, config, paid, questions, stored_jobs

def _forget_results(monkeypatch, api):
    """The provider still knows the batch but no longer has its results (404)."""
    original = api.get

    def get(path, headers=None):
        route = path.split("?", 1)[0]
        if route.endswith(("/content", ":download", "/results")):
            return 404, {"error": {"code": 404, "message": "no such file", "status":
                                   "NOT_FOUND", "type": "not_found_error"}}
        return original(path, headers)

    monkeypatch.setattr(api, "get", get)


@pytest.mark.parametrize("forgotten", ["batch", "results"])
@pytest.mark.parametrize("fallback", ["call", "fail"])
def test_a_batch_the_provider_no_longer_knows_is_marked_gone_and_follows_batch_fallback(
        tmp_path, server, provider, monkeypatch, forgotten, fallback):
    api = server.batch_apis[provider]
    cache_dir = tmp_path / "cache"
    api.hold = True
    with LLMClient(config(cache_dir, server.url, provider, batch_max_wait_s=0.2)) as client:
        client.run(questions(provider, range(4)), raise_on_failure=False)  # still running
    api.hold = False
    if forgotten == "batch":
        api.batches.clear()  # deleted, or past the provider's retention
    else:
        _forget_results(monkeypatch, api)
    cfg = config(cache_dir, server.url, provider, batch_fallback=fallback)
    with LLMClient(cfg) as client:
        answers = client.run(questions(provider, range(4)), raise_on_failure=False)
    (stored,) = stored_jobs(cache_dir)
    assert stored.status == "gone"
    rows_answered = server.stats.batch_rows[provider]  # the forgotten batch's, if it ran
    if fallback == "call":
        assert all(a.outcome == "ok" and not a.batch for a in answers)
        assert paid(server, provider) - rows_answered == 4  # one ordinary call each
    else:
        assert all(a.outcome == "failed" and "gone" in a.error for a in answers)
        assert paid(server, provider) == rows_answered  # nothing asked
        # Not blocked: the next run batches them anew.
        monkeypatch.undo()
        for name in KEY_VARIABLES:
            monkeypatch.setenv(name, SENTINEL)
        with LLMClient(cfg) as client:
            again = client.run(questions(provider, range(4)))
        assert all(a.outcome == "ok" and a.batch for a in again)
        assert api.calls["create"] == 2


def test_an_openai_batch_whose_error_file_is_gone_keeps_the_answers_of_its_output_file(
        tmp_path, server, monkeypatch):
    api = server.batch_apis["openai"]
    api.outcome = "expired"  # the first half answered (output file), the rest in the error file
    original = api.get

    def get(path, headers=None):
        error_files = {b["error_file_id"] for b in api.batches.values()}
        if any(f and f"/files/{f}/content" in path for f in error_files):
            return 404, {"error": {"message": "no such file", "type": "not_found_error"}}
        return original(path, headers)

    monkeypatch.setattr(api, "get", get)
    with LLMClient(config(tmp_path / "cache", server.url, "openai")) as client:
        answers = client.run(questions("openai", range(4)))
    assert [a.outcome for a in answers] == ["ok"] * 4
    assert [a.batch for a in answers] == [True, True, False, False]
    assert paid(server, "openai") == 4  # 2 batch rows, 2 ordinary calls
    (stored,) = stored_jobs(tmp_path / "cache")
    assert stored.status == "expired"
