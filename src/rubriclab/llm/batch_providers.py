"""Which provider batch adapter serves a model (`api_for`): OpenAI's (`batch_openai`), Gemini's
(`batch_gemini`) or Anthropic's (`batch_anthropic`), each a `rubriclab.llm.batch_api.BatchAPI`.
The adapters know nothing of this registry; a new provider's batch API is one entry here."""

from __future__ import annotations

from collections.abc import Callable

from .batch_anthropic import AnthropicBatchAPI
from .batch_api import BatchAPI
from .batch_gemini import GeminiBatchAPI
from .batch_openai import OpenAIBatchAPI
from .pricing import provider_of
from .settings import BatchNotSupported

# provider (as `pricing.provider_of` names it) -> its batch adapter
BATCH_APIS: dict[str, Callable[[], BatchAPI]] = {
    "openai": OpenAIBatchAPI,
    "gemini": GeminiBatchAPI,
    "anthropic": AnthropicBatchAPI,
}


def api_for(model: str) -> BatchAPI:
    provider = provider_of(model)
    make = BATCH_APIS.get(provider)
    if make is None:
        raise BatchNotSupported(f"model {model!r}: no batch API for provider {provider!r}")
    return make()
