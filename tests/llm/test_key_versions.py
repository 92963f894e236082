"""Key versions: a cache written by the first release (key version 1: no endpoint in a remote
model's fingerprint, numbers as written) is served by this one, with no new call."""

import hashlib
import json
import sqlite3

from rubriclab.llm import LLMClient, ModelSettings, Request
from rubriclab.llm.cache_records import CachedAnswer, make_answer
from rubriclab.llm.request import CACHE_KEY_VERSION

from .openai_stub import ScriptedOpenAIServer

MODEL = "openai/stub-model"
PROMPT = [{"role": "user", "content": "Is the sky blue?"}]

# The first release's schema (commit e90e226): no model_fingerprint, no key_version.
FIRST_SCHEMA = """
CREATE TABLE answers (
    key TEXT PRIMARY KEY, model TEXT NOT NULL, text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, cost_usd REAL,
    request_json TEXT NOT NULL, created_at REAL NOT NULL)
"""


def first_release_key(request_fields, fingerprint=""):
    """rubriclab.llm.request.cache_key as the first release computed it: sha256 over every
    field of its Request (as written) and the model fingerprint, which for a remote model was
    "" whatever its api_base."""
    payload = dict(request_fields)
    payload["messages"] = [[m["role"], m["content"]] for m in payload["messages"]]
    payload["model_fingerprint"] = fingerprint
    payload["cache_key_version"] = 1
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def first_release_cache(backend, cache_dir, temperature):
    """A cache as the first release left it: one answer to PROMPT, its key version 1's (on
    PostgreSQL, which the first release did not have, such an entry as an old SQLite cache's
    would be if copied row by row: no fingerprint, no key version)."""
    fields = {"model": MODEL, "messages": PROMPT, "temperature": temperature,
              "max_tokens": 4, "response_format": "yes_no", "sample_index": 0,
              "top_p": None, "stop": None}
    if backend.server is not None:
        with backend.open(cache_dir) as store:
            store._insert(CachedAnswer(first_release_key(fields), MODEL, "Yes", 12, 1, 0.0001,
                                       json.dumps(fields, sort_keys=True), 1.7e9))
        return first_release_key(fields)
    path = cache_dir / "llm_cache.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute(FIRST_SCHEMA)
    db.execute("INSERT INTO answers VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
               (first_release_key(fields), MODEL, "Yes", 12, 1, 0.0001,
                json.dumps(fields, sort_keys=True), 1.7e9))
    db.commit()
    db.close()
    return first_release_key(fields)


def request():
    return Request.chat(MODEL, PROMPT, response_format="yes_no", max_tokens=4)


def client_at(server, cache_dir, backend):
    settings = ModelSettings(api_base=server.api_base, placeholder_api_key=True, num_retries=0)
    return LLMClient(backend.config(cache_dir, defaults=settings))


def test_a_first_release_cache_is_served_at_an_endpoint_with_no_new_call(tmp_path, backend):
    old_key = first_release_cache(backend, tmp_path / "cache", temperature=0.0)
    with ScriptedOpenAIServer([], then="No") as server:
        with client_at(server, tmp_path / "cache", backend) as client:
            key = client.key_for(client.prepare(request()))
            assert key != old_key  # the endpoint is in this version's key
            [answer] = client.run([request()])
        assert (answer.cached, answer.text) == (True, "Yes")
        assert server.requests == []
        # Stored again under this version's key, with its fingerprint and key version.
        with backend.open(tmp_path / "cache") as store:
            migrated = store.get(key)
        assert migrated.text == "Yes" and migrated.key_version == CACHE_KEY_VERSION
        assert migrated.model_fingerprint.endswith("endpoint=" + server.api_base)
        with client_at(server, tmp_path / "cache", backend) as client:
            [again] = client.run([request()])
        assert again.cached and server.requests == []


def test_a_first_release_entry_keyed_with_an_integer_temperature_is_served(tmp_path, backend):
    """The first release kept numbers as written: temperature 0 from YAML keyed apart."""
    first_release_cache(backend, tmp_path / "cache", temperature=0)
    with ScriptedOpenAIServer([], then="No") as server:
        with client_at(server, tmp_path / "cache", backend) as client:
            [answer] = client.run([request()])
        assert (answer.cached, answer.text, len(server.requests)) == (True, "Yes", 0)


def test_an_answer_this_release_stored_for_the_providers_endpoint_is_not_an_api_bases(tmp_path,
                                                                                     backend):
    """Version 1's fingerprint ("") is only looked for among entries that predate versions:
    an answer this release stored for the provider's own endpoint (fingerprint "", version 2)
    is another server's, and is not served at an api_base."""
    from rubriclab.llm.request import cache_key

    provider_key = cache_key(request(), "")
    with backend.open(tmp_path / "cache") as store:
        store.put(make_answer(provider_key, request(), "Yes", 12, 1, 0.0001, ""))
    with ScriptedOpenAIServer([], then="No") as server:
        with client_at(server, tmp_path / "cache", backend) as client:
            [answer] = client.run([request()])
        assert (answer.cached, answer.text, len(server.requests)) == (False, "No", 1)
