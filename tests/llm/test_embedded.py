"""The embedded default model: assembled from the PyPI chunk packages, verified, then asked."""

import hashlib

import pytest

from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.embedded import (
    DEFAULT_GGUF_SHA256,
    DEFAULT_GGUF_SIZE,
    EmbeddedModelError,
    assemble_gguf,
    chunk_paths,
    resolve_local_model,
)


def test_assembly_concatenates_parts_in_order_and_checks_the_hash(tmp_path):
    parts = []
    for n, content in enumerate([b"GGUF", b"-part-two-", b"end"], start=1):
        part = tmp_path / f"part0{n}.bin"
        part.write_bytes(content)
        parts.append(part)
    whole = b"GGUF-part-two-end"
    dest = tmp_path / "models" / "m.gguf"
    assemble_gguf(parts, dest, len(whole), hashlib.sha256(whole).hexdigest())
    assert dest.read_bytes() == whole


def test_assembly_refuses_a_wrong_hash_and_leaves_nothing(tmp_path):
    part = tmp_path / "part01.bin"
    part.write_bytes(b"not the model")
    dest = tmp_path / "models" / "m.gguf"
    with pytest.raises(EmbeddedModelError, match="expected size 13 and sha256 0000"):
        assemble_gguf([part], dest, 13, "0" * 64)
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_the_six_chunk_packages_hold_the_pinned_size():
    paths = chunk_paths()
    assert [p.name for p in paths] == [f"part0{n}.bin" for n in range(1, 7)]
    assert sum(p.stat().st_size for p in paths) == DEFAULT_GGUF_SIZE


def test_a_missing_gguf_path_is_named(tmp_path):
    with pytest.raises(EmbeddedModelError, match="no GGUF file at"):
        resolve_local_model(f"local/{tmp_path}/absent.gguf", tmp_path)


@pytest.fixture(scope="module")
def embedded_config(tmp_path_factory, request):
    repo = request.config.rootpath
    return LLMConfig(
        cache_dir=tmp_path_factory.mktemp("cache"),
        models_dir_override=repo / ".cache" / "rubriclab" / "models",
        per_model={"local/default": ModelSettings(concurrency=1, n_threads=2, n_ctx=512)},
    )


def test_default_gguf_is_assembled_and_verified(embedded_config):
    gguf = resolve_local_model("local/default", embedded_config.models_dir)
    assert gguf.sha256 == DEFAULT_GGUF_SHA256
    assert gguf.path.stat().st_size == DEFAULT_GGUF_SIZE


def test_embedded_model_answers_two_short_prompts_through_the_model_layer(embedded_config):
    requests = [
        Request.chat("local/default",
                     [{"role": "user", "content": "Is Paris the capital of France? Answer Yes or No."}],
                     response_format="yes_no", max_tokens=4),
        Request.chat("local/default",
                     [{"role": "user", "content": "Name one colour of the rainbow."}],
                     max_tokens=8),
    ]
    with LLMClient(embedded_config) as client:
        first = client.run(requests, label="embedded smoke")
        assert [c.outcome for c in first] == ["ok", "ok"]
        assert first[0].parsed in {"yes", "no"} and first[0].text in {"Yes", "No"}
        assert first[1].text.strip()
        assert all(c.usage.prompt_tokens > 0 and c.usage.completion_tokens > 0 for c in first)
        assert not any(c.cached for c in first)
        second = client.run(requests)
    assert all(c.cached for c in second)
    assert [c.text for c in second] == [c.text for c in first]
