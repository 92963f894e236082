"""Checks of GBNF grammars with llama.cpp's own parser (needs only the embedded GGUF's vocabulary)."""

from pathlib import Path

import pytest

GGUF = (Path(__file__).resolve().parents[1] / ".cache" / "rubriclab" / "models"
        / "qwen2.5-coder-0.5b-instruct-q4.gguf")


def llama_grammar_parses(grammar: str) -> bool:
    """Parse GBNF with llama.cpp's own parser (the vocabulary is loaded without weights);
    skips the calling test when llama_cpp or the GGUF is not there."""
    llama_cpp = pytest.importorskip("llama_cpp")
    if not GGUF.is_file():
        pytest.skip(f"no GGUF at {GGUF} to load a vocabulary from")
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(GGUF).encode(), params)
    assert model, "could not load the vocabulary"
    try:
        vocab = llama_cpp.llama_model_get_vocab(model)
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True
    finally:
        llama_cpp.llama_model_free(model)
