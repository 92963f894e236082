"""`local/<name-or-path>` models: llama-cpp-python served as a litellm custom provider.

One `Llama` object per GGUF per process, loaded on the first call and closed at exit (an
unclosed `Llama` prints a TypeError from `__del__` at interpreter shutdown). llama.cpp reuses
the key-value cache of the longest common prompt prefix between consecutive calls, which is
why callers put shared content first and judge the checks of one item back to back.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from typing import Any

from .embedded import resolve_local_model
from .providers import LOCAL
from .settings import LLMConfig

_models: dict[str, Any] = {}
_lock = threading.Lock()


def close_all() -> None:
    with _lock:
        for llama in _models.values():
            llama.close()
        _models.clear()


atexit.register(close_all)


def load_llama(model: str, config: LLMConfig) -> Any:
    with _lock:
        if model not in _models:
            from llama_cpp import Llama

            gguf = resolve_local_model(model, config.models_dir)
            settings = config.settings_for(model)
            _models[model] = Llama(
                model_path=str(gguf.path),
                n_ctx=settings.n_ctx,
                n_threads=settings.n_threads or os.cpu_count() or 1,
                verbose=False,
            )
        return _models[model]


def _grammar(text: str | None) -> Any:
    if not text:
        return None
    from llama_cpp import LlamaGrammar

    return LlamaGrammar.from_string(text, verbose=False)


def register_local_provider(litellm: Any, config: LLMConfig) -> None:
    """Make `litellm.completion(model="local/...")` run in-process on llama.cpp."""
    from litellm import CustomLLM
    from litellm.types.utils import ModelResponse

    class LlamaCppProvider(CustomLLM):
        def completion(self, model: str, messages: list, *args: Any, **kwargs: Any) -> ModelResponse:
            params = dict(kwargs.get("optional_params") or {})
            full_model = LOCAL.model_string(model)
            llama = load_llama(full_model, config)
            started = time.monotonic()
            with _lock:  # a llama.cpp context serves one call at a time
                result = llama.create_chat_completion(
                    messages=messages,
                    temperature=float(params.get("temperature", 0.0)),
                    max_tokens=int(params.get("max_tokens", 16)),
                    top_p=float(params.get("top_p", 1.0)),
                    stop=params.get("stop"),
                    seed=int(params.get("seed", 0)),
                    grammar=_grammar(params.get("grammar")),
                )
            response = kwargs.get("model_response") or ModelResponse()
            response.model = full_model
            response.choices[0].message.content = result["choices"][0]["message"]["content"]
            response.choices[0].finish_reason = result["choices"][0].get("finish_reason") or "stop"
            usage = result.get("usage") or {}
            setattr(response, "usage", litellm.Usage(
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
                total_tokens=usage.get("total_tokens", 0),
            ))
            response._hidden_params["latency_s"] = time.monotonic() - started
            return response

    handler = LlamaCppProvider()
    entries = [e for e in (litellm.custom_provider_map or []) if e.get("provider") != "local"]
    litellm.custom_provider_map = entries + [{"provider": "local", "custom_handler": handler}]
