import dataclasses

import pytest

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request, cache_key
from rubriclab.llm.cache import SQLiteCache

BASE = Request.chat(
    "fake/hash",
    [{"role": "system", "content": "You grade."}, {"role": "user", "content": "Is it good?"}],
    temperature=0.0,
    max_tokens=4,
    response_format="yes_no",
    sample_index=0,
)

# One changed value per output-changing field of a request.
VARIANTS = {
    "model": "fake/yes",
    "messages": BASE.messages[:1] + (dataclasses.replace(BASE.messages[1], content="Is it bad?"),),
    "temperature": 0.7,
    "max_tokens": 5,
    "response_format": "text",
    "sample_index": 1,
    "top_p": 0.9,
    "stop": ("\n",),
    "reasoning_effort": "low",
    "reasoning_tokens": 1024,
}
# Fields that select settings but are not sent: the settings they select are fields above.
NOT_KEYED = {"role"}


def test_every_request_field_is_covered_by_a_variant():
    assert set(VARIANTS) | NOT_KEYED == {f.name for f in dataclasses.fields(Request)}


def test_the_provider_default_temperature_is_a_key_of_its_own():
    keys = {cache_key(dataclasses.replace(BASE, temperature=t), "fp") for t in (None, 0.0, 1.0)}
    assert len(keys) == 3


def test_a_role_alone_does_not_change_the_key():
    assert cache_key(dataclasses.replace(BASE, role="judge"), "fp") == cache_key(BASE, "fp")


def test_requests_without_the_newer_fields_keep_their_version_1_keys():
    """Entries cached before reasoning_effort existed are still found."""
    import hashlib
    import json

    payload = {"model": BASE.model, "messages": [[m.role, m.content] for m in BASE.messages],
               "temperature": 0.0, "max_tokens": 4, "response_format": "yes_no",
               "sample_index": 0, "top_p": None, "stop": None, "model_fingerprint": "fp",
               "cache_key_version": 1}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert cache_key(BASE, "fp") == hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("field", sorted(VARIANTS))
def test_each_output_changing_field_changes_the_key(field):
    changed = dataclasses.replace(BASE, **{field: VARIANTS[field]})
    assert cache_key(changed, "fp") != cache_key(BASE, "fp")


def test_message_role_changes_the_key():
    changed = dataclasses.replace(
        BASE, messages=(BASE.messages[0], dataclasses.replace(BASE.messages[1], role="assistant"))
    )
    assert cache_key(changed, "fp") != cache_key(BASE, "fp")


def test_model_fingerprint_changes_the_key():
    assert cache_key(BASE, "gguf-sha256:aaa") != cache_key(BASE, "gguf-sha256:bbb")


def test_equal_requests_have_equal_keys():
    same = Request.chat(BASE.model, BASE.message_dicts(), temperature=0.0, max_tokens=4,
                        response_format="yes_no", sample_index=0)
    assert cache_key(same, "fp") == cache_key(BASE, "fp")


def test_declared_fingerprint_setting_changes_the_key(tmp_path):
    plain = LLMConfig(cache_dir=tmp_path)
    declared = LLMConfig(cache_dir=tmp_path, per_model={"fake/hash": ModelSettings(fingerprint="rev2")})
    with LLMClient(plain) as a, LLMClient(declared) as b:
        assert a.key_for(BASE) != b.key_for(BASE)


def test_settings_that_cannot_change_an_answer_stay_out_of_the_key(tmp_path, monkeypatch):
    """Timeouts, retries, re-ask budget, concurrency, endpoint and API keys: all cache hits."""
    first = LLMConfig(cache_dir=tmp_path)
    with LLMClient(first) as client:
        (answer,) = client.run([BASE])
    assert not answer.cached
    monkeypatch.setenv("OPENAI_API_KEY", "sk-something-else")
    other = ModelSettings(concurrency=1, timeout_s=3, num_retries=0, backoff_s=9,
                          max_backoff_s=1, max_reasks=0, api_base="http://127.0.0.1:9",
                          check_api_key=False, n_threads=1, n_ctx=512)
    second = LLMConfig(cache_dir=tmp_path, defaults=other, progress_interval_s=1)
    with LLMClient(second) as client:
        (again,) = client.run([BASE])
    assert again.cached and again.key == answer.key and again.text == answer.text


def test_cache_refuses_empty_answers(tmp_path):
    from rubriclab.llm.cache import make_answer

    with SQLiteCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(ValueError, match="empty"):
            cache.put(make_answer("k", BASE, "  ", 1, 0, 0.0))
        assert len(cache) == 0
