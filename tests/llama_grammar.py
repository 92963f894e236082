"""Checks of GBNF grammars with llama.cpp's own parser (needs only the embedded GGUF's vocabulary)."""

from pathlib import Path

import pytest

from rubriclab.llm.embedded import ensure_default_gguf

MODELS = Path(__file__).resolve().parents[1] / ".cache" / "rubriclab" / "models"


def vocabulary_gguf() -> Path:
    """The embedded GGUF, assembled from its installed parts where no test has assembled it
    yet, so the grammar checks never depend on which test ran first."""
    return ensure_default_gguf(MODELS).path


def llama_grammar_parses(grammar: str) -> bool:
    """Parse GBNF with llama.cpp's own parser (the vocabulary is loaded without weights);
    skips the calling test when llama_cpp is not installed."""
    llama_cpp = pytest.importorskip("llama_cpp")
    gguf = vocabulary_gguf()
    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(gguf).encode(), params)
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
