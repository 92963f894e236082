"""Token counts as litellm counts them for a model (its provider's tokenizer where litellm has
one, tiktoken otherwise): the planner's counts, and the rehearsal server's usage."""

from __future__ import annotations

import functools
from typing import Any

from .litellm_import import import_litellm


@functools.cache
def _litellm() -> Any:
    return import_litellm()


def prompt_tokens(model: str, messages: list[dict[str, str]]) -> int:
    """Prompt tokens of chat messages, per-message overhead included."""
    return int(_litellm().token_counter(model=model, messages=messages))


def text_tokens(model: str, text: str) -> int:
    """Tokens of a text alone (an answer's visible text), no message overhead."""
    return int(_litellm().token_counter(model=model, text=text))
