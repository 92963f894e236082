import dataclasses
import hashlib
import json

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
    """Timeouts, retries, re-ask budget, concurrency, API keys (and an endpoint, which only
    a remote model has): all cache hits."""
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
    from rubriclab.llm.cache_records import make_answer

    with SQLiteCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(ValueError, match="empty"):
            cache.put(make_answer("k", BASE, "  ", 1, 0, 0.0))
        assert len(cache) == 0


# --- canonical numbers ---------------------------------------------------------------------

def test_integer_and_float_numbers_key_the_same():
    as_int = dataclasses.replace(BASE, temperature=0, top_p=1, max_tokens=4.0)
    assert as_int.temperature == 0.0 and isinstance(as_int.temperature, float)
    assert isinstance(as_int.max_tokens, int)
    assert cache_key(as_int, "fp") == cache_key(dataclasses.replace(BASE, top_p=1.0), "fp")


def test_numbers_normalised_leave_the_keys_of_float_requests_unchanged():
    """The key of a request written with floats (every entry the pipeline stored) is the
    version-1 formula's, so no key version bump is needed."""
    for temperature in (0.0, 0.7, 1.0, None):
        request = dataclasses.replace(BASE, temperature=temperature)
        payload = {"model": BASE.model, "messages": [[m.role, m.content] for m in BASE.messages],
                   "temperature": temperature, "max_tokens": 4, "response_format": "yes_no",
                   "sample_index": 0, "top_p": None, "stop": None, "model_fingerprint": "fp",
                   "cache_key_version": 1}
        canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        assert cache_key(request, "fp") == hashlib.sha256(canonical.encode()).hexdigest()


@pytest.mark.parametrize("field,value", [("temperature", "0.7"), ("temperature", True),
                                         ("top_p", float("nan")), ("max_tokens", 4.5),
                                         ("sample_index", "1")])
def test_numbers_of_the_wrong_type_are_refused(field, value):
    with pytest.raises(ValueError, match=f"Request.{field} must be"):
        dataclasses.replace(BASE, **{field: value})


def test_an_entry_keyed_with_an_integer_temperature_is_found_and_migrated(tmp_path, monkeypatch):
    """Before numbers were normalised, temperature 0 keyed apart from 0.0: such an entry means
    the same request, so it is served (and stored under the canonical key), not paid again."""
    from rubriclab.llm.cache_records import make_answer
    from rubriclab.llm.request import _key

    log_path = tmp_path / "calls.log"
    monkeypatch.setenv("RUBRICLAB_FAKE_CALL_LOG", str(log_path))
    with LLMClient(LLMConfig(cache_dir=tmp_path)) as client:
        payload = dataclasses.asdict(BASE)
        payload["temperature"] = 0  # what json.dumps wrote for an int temperature
        legacy_key = _key(payload, "fake-v1")
        assert legacy_key != client.key_for(BASE)
        client.cache.put(make_answer(legacy_key, BASE, "Yes", 3, 1, 0.0))
        (answer,) = client.run([dataclasses.replace(BASE, temperature=0)])
        assert answer.cached and answer.parsed == "yes"
        migrated = client.cache.get(client.key_for(BASE))
        assert migrated.text == "Yes" and migrated.model_fingerprint == "fake-v1"
    assert not log_path.exists()  # no call was made


def test_a_read_only_lookup_finds_an_entry_under_its_older_key_and_writes_nothing(tmp_path):
    """What the plan asks: an answer stored under a pre-normalisation key counts as cached,
    and looking does not migrate it."""
    from rubriclab.llm.cache_records import make_answer
    from rubriclab.llm.request import _key

    with LLMClient(LLMConfig(cache_dir=tmp_path)) as client:
        payload = dataclasses.asdict(BASE)
        payload["temperature"] = 0
        client.cache.put(make_answer(_key(payload, "fake-v1"), BASE, "Yes", 3, 1, 0.0))
        request = client.prepare(dataclasses.replace(BASE, temperature=0))
        key = client.key_for(request)
        hit = client.lookup(request, key, migrate=False)
        assert hit is not None and hit.text == "Yes"
        assert client.cache.get(key) is None and len(client.cache) == 1
        assert client.lookup(request, key).text == "Yes"  # the run's lookup migrates it
        assert client.cache.get(key) is not None


# --- a remote model's endpoint -------------------------------------------------------------

REMOTE = dataclasses.replace(BASE, model="openai/some-model")


def remote_key(tmp_path, **settings):
    cfg = LLMConfig(cache_dir=tmp_path, per_model={REMOTE.model: ModelSettings(**settings)})
    with LLMClient(cfg) as client:
        return client.key_for(REMOTE)


def test_the_endpoint_is_part_of_a_remote_models_key(tmp_path):
    provider_default = remote_key(tmp_path)
    first = remote_key(tmp_path, api_base="http://127.0.0.1:8000/v1")
    second = remote_key(tmp_path, api_base="http://127.0.0.1:8001/v1")
    assert len({provider_default, first, second}) == 3
    # At the provider's own endpoint the key is what it always was.
    assert provider_default == cache_key(REMOTE, "")


def test_spellings_of_one_endpoint_key_the_same(tmp_path):
    assert (remote_key(tmp_path, api_base="http://127.0.0.1:8000/v1")
            == remote_key(tmp_path, api_base="HTTP://127.0.0.1:8000/v1/"))


def test_a_declared_fingerprint_takes_the_endpoints_place(tmp_path):
    one = remote_key(tmp_path, api_base="http://127.0.0.1:8000/v1", fingerprint="qwen-7b-r2")
    other = remote_key(tmp_path, api_base="http://10.0.0.5:9000/v1", fingerprint="qwen-7b-r2")
    assert one == other == cache_key(REMOTE, "|qwen-7b-r2")  # the form declared before
    assert one != remote_key(tmp_path, api_base="http://127.0.0.1:8000/v1")
