"""What a call costs, from litellm's price map: standard, as a batch, and with cached prompt tokens.

Used by the client for batch answers (a batch result is not a completion response that
litellm's completion_cost could price) and by `rubriclab plan` before any call. A model the map
does not price costs None (unknown), never $0; `fake/` and `local/` models cost $0.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from .litellm_import import import_litellm

# Providers whose batch API charges half the standard price (OpenAI: "50% cost discount compared
# to synchronous APIs", platform.openai.com/docs/guides/batch; Anthropic: "Batch processing is
# priced at 50% of standard API prices", docs.anthropic.com/en/docs/build-with-claude/
# batch-processing). Used only where the price map has no *_batches rate of its own; for other
# providers a batch price the map does not give stays unknown.
HALF_PRICE_BATCH_PROVIDERS = frozenset({"openai", "anthropic"})


def provider_of(model: str) -> str:
    """The litellm provider a model string names (its prefix), e.g. "anthropic"."""
    return model.split("/", 1)[0] if "/" in model else ""


def is_free(model: str) -> bool:
    return model.startswith(("fake/", "local/"))


@lru_cache(maxsize=None)
def _model_info(model: str) -> dict[str, Any] | None:
    litellm = import_litellm()
    try:
        info = dict(litellm.get_model_info(model=model))
    except Exception:  # noqa: BLE001 - litellm raises several kinds for a model not in its map
        return None
    if not (info.get("input_cost_per_token") or info.get("output_cost_per_token")):
        return None  # listed without a price: litellm would price it at $0
    return info


def is_priced(model: str, *, batch: bool = False) -> bool:
    """Whether `price` knows this model's price (as a batch request with `batch`)."""
    if is_free(model):
        return True
    info = _model_info(model)
    if info is None:
        return False
    if batch and info.get("input_cost_per_token_batches") is None:
        return info.get("litellm_provider", provider_of(model)) in HALF_PRICE_BATCH_PROVIDERS
    return True


def price(model: str, prompt_tokens: int, completion_tokens: int, *, batch: bool = False,
          cache_read_tokens: int = 0, cache_write_tokens: int = 0) -> float | None:
    """Dollars for one call; None when the price is unknown.

    `prompt_tokens` counts every prompt token, those read from and written to the provider's
    prompt cache included (as litellm's usage.prompt_tokens does); `cache_read_tokens` and
    `cache_write_tokens` say how many of them were, and are priced at the map's cache rates.
    With `batch`, the map's *_batches rates, else half the standard rates for the providers
    of HALF_PRICE_BATCH_PROVIDERS (litellm's batch_cost_calculator does exactly this).
    """
    if min(prompt_tokens, completion_tokens, cache_read_tokens, cache_write_tokens) < 0:
        raise ValueError(f"token counts must be >= 0, got prompt {prompt_tokens}, completion "
                         f"{completion_tokens}, cache read {cache_read_tokens}, cache write "
                         f"{cache_write_tokens}")
    if cache_read_tokens + cache_write_tokens > prompt_tokens:
        raise ValueError(f"{cache_read_tokens} cache-read and {cache_write_tokens} cache-write "
                         f"tokens are more than the {prompt_tokens} prompt tokens they are part of")
    if is_free(model):
        return 0.0
    if not is_priced(model, batch=batch):
        return None
    litellm = import_litellm()
    from litellm.cost_calculator import batch_cost_calculator
    from litellm.types.utils import Usage

    usage = Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                  total_tokens=prompt_tokens + completion_tokens,
                  cache_read_input_tokens=cache_read_tokens,
                  cache_creation_input_tokens=cache_write_tokens)
    if batch:
        prompt_cost, completion_cost = batch_cost_calculator(usage, model)
    else:
        prompt_cost, completion_cost = litellm.cost_per_token(model=model, usage_object=usage)
    return float(prompt_cost) + float(completion_cost)
