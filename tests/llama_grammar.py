"""Checks of GBNF grammars with llama.cpp's own parser (needs only the embedded GGUF's vocabulary)."""

from pathlib import Path

import pytest

from rubriclab.llm.embedded import DEFAULT_GGUF_FILENAME, ensure_default_gguf

MODELS = Path(__file__).resolve().parents[1] / ".cache" / "rubriclab" / "models"
GGUF = MODELS / DEFAULT_GGUF_FILENAME


def llama_grammar_parses(grammar: str) -> bool:
    """Parse GBNF with llama.cpp's own parser (the vocabulary is loaded without weights);
    skips the calling test when llama_cpp is not installed. The GGUF is assembled from its
    installed parts where no test has assembled it yet, so these checks never depend on which
    test ran first."""
    llama_cpp = pytest.importorskip("llama_cpp")
    ensure_default_gguf(GGUF.parent)
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
