"""What a call costs: standard, as a batch, and with cached prompt tokens; and how much a request
may think.

Prices come from the model's configured price (`llm.per_model.<model>.price`, a ModelPrice)
where it has one, else from litellm's price map. Used by the client for ordinary calls and
batch answers, and by `rubriclab plan` before any call. A model with neither costs None
(unknown), never $0; `fake/` and `local/` models cost $0.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from .litellm_import import import_litellm
from .providers import provider_for
from .request import Request
from .settings import ModelPrice

# Providers whose batch API charges half the standard price (OpenAI: "50% cost discount compared
# to synchronous APIs", platform.openai.com/docs/guides/batch; Anthropic: "Batch processing is
# priced at 50% of standard API prices", docs.anthropic.com/en/docs/build-with-claude/
# batch-processing; Gemini's Batch Mode: half the interactive price, ai.google.dev/gemini-api/
# docs/batch-mode, as litellm's map has it). Used only where neither the configured price nor
# the price map has a batch rate of its own; for other providers such a batch price is unknown.
HALF_PRICE_BATCH_PROVIDERS = frozenset({"openai", "anthropic", "gemini"})
PER_MILLION = 1e-6
# Claude models that think without being asked: the 5 generation on. "On Claude Opus 5, the same
# requests run with adaptive thinking" ("What's new in Claude Opus 5"), "adaptive thinking on by
# default" (Claude Sonnet 5's model page); "On Claude Sonnet 4.6 and earlier and on Claude Haiku
# 4.5, such requests do not think" (Claude Sonnet 5.5 migration guide), all at
# platform.claude.com/docs.
CLAUDE_THINKING_BY_DEFAULT = re.compile(r"claude-(?:opus|sonnet|haiku|fable|mythos)-(?:[5-9]|\d\d)")


def provider_of(model: str) -> str:
    """The litellm provider a model string names (its prefix), e.g. "anthropic"."""
    return model.split("/", 1)[0] if "/" in model else ""


def is_free(model: str) -> bool:
    return not provider_for(model).priced


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


def is_priced(model: str, *, batch: bool = False, configured: ModelPrice | None = None) -> bool:
    """Whether `price` knows this model's price (as a batch request with `batch`)."""
    if is_free(model):
        return True
    if configured is not None:
        return not batch or _configured_batch_rates(model, configured) is not None
    info = _model_info(model)
    if info is None:
        return False
    if batch and info.get("input_cost_per_token_batches") is None:
        return info.get("litellm_provider", provider_of(model)) in HALF_PRICE_BATCH_PROVIDERS
    return True


def price(model: str, prompt_tokens: int, completion_tokens: int, *, batch: bool = False,
          cache_read_tokens: int = 0, cache_write_tokens: int = 0,
          configured: ModelPrice | None = None) -> float | None:
    """Dollars for one call; None when the price is unknown.

    `prompt_tokens` counts every prompt token, those read from and written to the provider's
    prompt cache included (as litellm's usage.prompt_tokens does); `cache_read_tokens` and
    `cache_write_tokens` say how many of them were, and are priced at the cache rates.
    `configured` (the model's settings' `price`) replaces litellm's price map. With `batch`,
    the batch rates, else half the standard rates for the providers of
    HALF_PRICE_BATCH_PROVIDERS (litellm's batch_cost_calculator does exactly this).
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
    if configured is not None:
        return _configured_price(model, configured, prompt_tokens, completion_tokens, batch,
                                 cache_read_tokens, cache_write_tokens)
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


# litellm's price map charges some models other rates for a request whose prompt is above a
# size: keys such as `input_cost_per_token_above_200k_tokens` (litellm_core_utils/llm_cost_calc/
# utils.py applies them when usage.prompt_tokens is above the size, per request).
_TIER_KEY = re.compile(r"_above_(\d+(?:\.\d+)?)(k?)_tokens")


@lru_cache(maxsize=None)
def tier_thresholds(model: str) -> tuple[float, ...]:
    """The prompt sizes (tokens) above which litellm's map prices a request of `model` at other
    rates, ascending; () where one set of rates holds for every request."""
    info = None if is_free(model) else _model_info(model)
    if info is None:
        return ()
    found = {float(m.group(1)) * (1000 if m.group(2) else 1)
             for key, value in info.items() if value is not None
             for m in [_TIER_KEY.search(key)] if m}
    return tuple(sorted(found))


def price_requests(model: str, prompt_tokens_each: Sequence[int], completion_tokens: int, *,
                   batch: bool = False, cache_read_tokens: int = 0, cache_write_tokens: int = 0,
                   configured: ModelPrice | None = None) -> float | None:
    """Dollars for many requests, billed one by one as providers bill them: a tiered price
    (`tier_thresholds`) applies to each request by its own prompt, never to the requests'
    summed tokens. `prompt_tokens_each`: each request's prompt tokens; completion and cache
    tokens are the requests' together, shared out among them (completion tokens alike per
    request, cache tokens in proportion to prompt tokens). Requests are grouped by the tier
    their prompt falls in, and each group is priced at its tier's rates per token (litellm's
    own price of one request of that tier), so this is exact and fast at any number of
    requests. Without tiers, `price` of the sums. None where the price is unknown."""
    thresholds = () if configured is not None else tier_thresholds(model)
    total_prompt = sum(prompt_tokens_each)
    if not thresholds or not prompt_tokens_each:
        return price(model, total_prompt, completion_tokens, batch=batch,
                     cache_read_tokens=cache_read_tokens, cache_write_tokens=cache_write_tokens,
                     configured=configured)
    groups: dict[int, list[int]] = defaultdict(list)
    for tokens in prompt_tokens_each:
        groups[_probe_for(thresholds, tokens)].append(tokens)
    n, total = len(prompt_tokens_each), 0.0
    for probe, members in groups.items():
        prompt = sum(members)
        share = prompt / total_prompt if total_prompt else len(members) / n
        rates = _tier_rates(model, probe, batch)
        if rates is None:
            return None
        input_rate, output_rate, read_rate, write_rate = rates
        read, written = cache_read_tokens * share, cache_write_tokens * share
        if written and write_rate is None:
            return None
        total += (input_rate * (prompt - read - written) + read_rate * read
                  + (write_rate or 0.0) * written
                  + output_rate * completion_tokens * len(members) / n)
    return total


def _probe_for(thresholds: tuple[float, ...], tokens: int) -> int:
    """A prompt size litellm prices exactly as it prices `tokens`: the tier's smallest (a
    prompt exactly at a threshold is its own case, some map entries counting it above)."""
    if tokens in thresholds:
        return int(tokens)
    below = bisect.bisect_left(thresholds, tokens)
    return 1 if below == 0 else int(thresholds[below - 1]) + 1


@lru_cache(maxsize=None)
def _tier_rates(model: str, probe: int, batch: bool
                ) -> tuple[float, float, float, float | None] | None:
    """Dollars per input, output, cache-read and cache-write token (None: unknown) of a
    request of `probe` prompt tokens, by litellm's own price of such requests."""
    many = 1_000_000
    base = price(model, probe, 0, batch=batch)
    answered = price(model, probe, many, batch=batch)
    read = price(model, probe, 0, batch=batch, cache_read_tokens=probe)
    if base is None or answered is None or read is None:
        return None
    written = price(model, probe, 0, batch=batch, cache_write_tokens=probe)
    return (base / probe, (answered - base) / many, read / probe,
            None if written is None else written / probe)


def _configured_batch_rates(model: str, configured: ModelPrice) -> tuple[float, float] | None:
    half = provider_of(model) in HALF_PRICE_BATCH_PROVIDERS
    rates = []
    for given, standard in ((configured.batch_input, configured.input),
                            (configured.batch_output, configured.output)):
        if given is None and not half:
            return None
        rates.append(standard / 2 if given is None else given)
    return rates[0], rates[1]


def _configured_price(model: str, configured: ModelPrice, prompt_tokens: int,
                      completion_tokens: int, batch: bool, cache_read_tokens: int,
                      cache_write_tokens: int) -> float | None:
    """A configured price (ModelPrice, dollars per million tokens). A batch's cache rates are
    the standard cache rates at the batch's discount on input (Anthropic's discounts stack)."""
    input_rate, output_rate = configured.input, configured.output
    discount = 1.0
    if batch:
        rates = _configured_batch_rates(model, configured)
        if rates is None:
            return None
        discount = rates[0] / input_rate if input_rate else 1.0
        input_rate, output_rate = rates
    if cache_write_tokens and configured.cache_write is None:
        return None
    read_rate = (configured.input if configured.cache_read is None
                 else configured.cache_read) * discount
    write_rate = (configured.cache_write or 0.0) * discount
    uncached = prompt_tokens - cache_read_tokens - cache_write_tokens
    return PER_MILLION * (uncached * input_rate + cache_read_tokens * read_rate
                          + cache_write_tokens * write_rate + completion_tokens * output_rate)


def thinking_cap(request: Request) -> int:
    """The most thinking tokens one asking of `request` can be billed for (as completion
    tokens): the thinking budget litellm sends for the request's reasoning effort where the
    provider takes one (Gemini 2.5, Anthropic), else the model's room for thinking
    (`reasoning_tokens`); never more than the whole completion budget.

    litellm 1.110 maps efforts to budgets in llms/vertex_ai/gemini/
    vertex_and_google_ai_studio_gemini.py (`_map_reasoning_effort_to_thinking_budget`:
    minimal -> 1 on 2.5 Flash, 512 on Flash-Lite, 128 on Pro; low / medium / high -> 1,024 /
    2,048 / 4,096) and llms/anthropic/chat/transformation.py (`_map_reasoning_effort`: the same
    three, minimal -> 1,024, Anthropic's least); the numbers are litellm.constants'. Claude
    models before the 5 generation think only when asked (no effort: 0); Claude 5 models think
    by default, adaptively (CLAUDE_THINKING_BY_DEFAULT), so without an effort their room
    (`reasoning_tokens`) bounds them; DeepSeek's chat model thinks only when given an effort,
    with no budget (llms/deepseek/chat/transformation.py); OpenAI, xAI and OpenRouter models
    take no budget, so their room bounds them.
    """
    provider, effort = provider_of(request.model), request.reasoning_effort
    name = request.model.lower()
    if provider == "anthropic":
        cap = (_effort_budgets(request.model)[effort] if effort
               else request.reasoning_tokens if CLAUDE_THINKING_BY_DEFAULT.search(name) else 0)
    elif provider in ("gemini", "vertex_ai") and "gemini-2.5" in name and effort:
        cap = _effort_budgets(request.model)[effort]
    elif provider == "deepseek" and not effort:
        cap = 0
    else:
        cap = request.reasoning_tokens
    return max(0, min(cap, request.budget))


@lru_cache(maxsize=None)
def _effort_budgets(model: str) -> dict[str, int]:
    import_litellm()
    from litellm import constants as c

    name = model.lower()
    if provider_of(model) == "anthropic":
        minimal = max(c.DEFAULT_REASONING_EFFORT_MINIMAL_THINKING_BUDGET,
                      c.ANTHROPIC_MIN_THINKING_BUDGET_TOKENS)
    elif "gemini-2.5-flash-lite" in name:
        minimal = c.DEFAULT_REASONING_EFFORT_MINIMAL_THINKING_BUDGET_GEMINI_2_5_FLASH_LITE
    elif "gemini-2.5-pro" in name:
        minimal = c.DEFAULT_REASONING_EFFORT_MINIMAL_THINKING_BUDGET_GEMINI_2_5_PRO
    elif "gemini-2.5-flash" in name:
        minimal = c.DEFAULT_REASONING_EFFORT_MINIMAL_THINKING_BUDGET_GEMINI_2_5_FLASH
    else:
        minimal = c.DEFAULT_REASONING_EFFORT_MINIMAL_THINKING_BUDGET
    return {"minimal": minimal, "low": c.DEFAULT_REASONING_EFFORT_LOW_THINKING_BUDGET,
            "medium": c.DEFAULT_REASONING_EFFORT_MEDIUM_THINKING_BUDGET,
            "high": c.DEFAULT_REASONING_EFFORT_HIGH_THINKING_BUDGET}
