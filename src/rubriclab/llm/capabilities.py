"""What a model takes, asked of litellm before the first call, so that a setting the model
cannot take stops the run at its start instead of failing every request of it.

`reasoning_effort_refusal`: litellm refuses a request whose `reasoning_effort` is not among the
model's supported OpenAI parameters (UnsupportedParamsError, before anything is sent; this
project never sets drop_params). That list, `get_supported_openai_params`, is what is asked
here, not `supports_reasoning` (litellm's model map), which is False for models that take an
effort and pass it on (deepseek/deepseek-chat, openrouter/..., an openai/ model behind
api_base) and would refuse configs that work.
"""

from __future__ import annotations

from .litellm_import import import_litellm

_refusals: dict[str, str | None] = {}


def reasoning_effort_refusal(model: str) -> str | None:
    """Why a request of `model` with a reasoning_effort would be refused, or None when it
    would be sent (or litellm cannot tell, or the model is rubriclab's fake/)."""
    provider = model.partition("/")[0]
    if provider == "fake":
        return None
    if provider == "local":
        return "it is an embedded llama.cpp model, which takes no reasoning effort"
    if model not in _refusals:
        _refusals[model] = _ask_litellm(model)
    return _refusals[model]


def _ask_litellm(model: str) -> str | None:
    litellm = import_litellm()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model)
        supported = litellm.get_supported_openai_params(model=name, custom_llm_provider=provider)
    except Exception:  # noqa: BLE001 - litellm cannot tell; the request itself will
        return None
    if supported is None or "reasoning_effort" in supported:
        return None
    try:
        thinks = bool(litellm.supports_reasoning(model=model))
    except Exception:  # noqa: BLE001 - only for the message
        thinks = False
    return (f"litellm sends no reasoning_effort to {provider} model {name!r} (it is not among "
            f"the model's supported parameters; litellm's model map: "
            f"supports_reasoning={thinks}), so every request of it would be refused")
