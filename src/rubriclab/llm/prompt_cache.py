"""Provider prompt caching: which prefix of a request other requests share, and whether the
provider caches it when asked.

Anthropic caches a prompt prefix only when asked (a `cache_control` marker on the content block
that ends it) and only from a minimum length; OpenAI, Gemini and DeepSeek cache long prefixes
on their own. The prompts of this project put the shared part (task, item, output) first, so
within one batch of requests the prefix a request shares with others is found by comparing
them: the longest common prefix with any other request of the same model, cut back to the
end of a line or of a whole message so that requests sharing it split it identically.

Marking is transport only: the request, and so its cache key, stays as it is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from .request import Request

CACHE_CONTROL = {"type": "ephemeral"}

# Minimum cacheable prompt lengths in tokens, from Anthropic's prompt-caching docs
# (docs.claude.com/en/docs/build-with-claude/prompt-caching, "Cache limitations"): 4,096 for
# Claude Opus 4.5 and later Opus 4, and Haiku 4.5; 2,048 for Sonnet 4.6, Haiku 3.5 and Haiku 3;
# 1,024 for the other models (Sonnet 4.5, Opus 4.1, Opus 4, Sonnet 4, Sonnet 3.7); 512 for
# Claude Opus 5 ("What's new in Claude Opus 5", platform.claude.com/docs/en/about-claude/models/
# whats-new-opus-5: "The minimum cacheable prompt length on Claude Opus 5 is 512 tokens"). A
# shorter prefix marked cacheable is processed uncached. First match wins.
_ANTHROPIC_MINIMUMS: tuple[tuple[re.Pattern[str], int], ...] = (
    (re.compile(r"opus-5(?:$|[^-]|-\d{8})"), 512),
    (re.compile(r"opus-4-(?:[5-9]|\d\d)|haiku-4-(?:[5-9]|\d\d)|(?:opus|haiku)-[5-9]"), 4096),
    (re.compile(r"sonnet-4-(?:[6-9]|\d\d)|3-5-haiku|3-haiku|haiku-3"), 2048),
)
_ANTHROPIC_DEFAULT_MINIMUM = 1024


def min_cacheable_tokens(model: str) -> int | None:
    """The shortest prefix (tokens) the provider caches when asked; None where the provider
    caches on its own (OpenAI, Gemini, DeepSeek) or not at all: nothing to mark."""
    provider, _, name = model.partition("/")
    if provider != "anthropic" or not name:
        return None
    for pattern, minimum in _ANTHROPIC_MINIMUMS:
        if pattern.search(name):
            return minimum
    return _ANTHROPIC_DEFAULT_MINIMUM


def qualifies(model: str, prefix_tokens: int) -> bool:
    """Whether a shared prefix of this many tokens is worth marking cacheable for the model."""
    minimum = min_cacheable_tokens(model)
    return minimum is not None and prefix_tokens >= minimum


def _serialized(request: Request) -> str:
    # A message counts as shared only with its role and its end: "\x00" closes each message.
    return "".join(f"{m.role}\x01{m.content}\x00" for m in request.messages)


def _common_length(a: str, b: str) -> int:
    # Binary search over slice comparisons (done in C): a few dozen of them per pair instead
    # of one Python step per shared character.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _cut(request: Request, common: int) -> int:
    """Characters of message content within `common` serialized characters, cut back to the end
    of the last whole message or line inside it."""
    chars = pos = 0
    for message in request.messages:
        start = pos + len(message.role) + 1
        end = start + len(message.content) + 1  # with its terminator
        if common >= end:
            chars += len(message.content)
            pos = end
            continue
        if common > start:
            shared = message.content[:common - start]
            chars += shared.rfind("\n") + 1
        break
    return chars


def shared_prefixes(requests: Sequence[Request]) -> list[int]:
    """Per request, how many characters of its message contents (in order, concatenated) it
    shares with at least one other request of the same model, cut at a line or message end.
    0 where it shares nothing (or is the only request of its model)."""
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, request in enumerate(requests):
        by_model[request.model].append(i)
    result = [0] * len(requests)
    for indices in by_model.values():
        if len(indices) < 2:
            continue
        texts = {i: _serialized(requests[i]) for i in indices}
        # The longest prefix a string shares with any other is shared with a neighbour in
        # sorted order.
        ordered = sorted(indices, key=texts.__getitem__)
        for rank, i in enumerate(ordered):
            common = max(_common_length(texts[i], texts[j])
                         for j in ordered[max(0, rank - 1):rank + 2] if j != i)
            result[i] = _cut(requests[i], common)
    return result


def split_point(request: Request, chars: int) -> tuple[int, int]:
    """(message index, characters of that message) where a prefix of `chars` content
    characters ends; a prefix ending with a message is (that message, its length)."""
    if chars <= 0:
        raise ValueError(f"a prefix needs at least one character, got {chars}")
    for index, message in enumerate(request.messages):
        if chars <= len(message.content):
            return index, chars
        chars -= len(message.content)
    raise ValueError(f"prefix of {chars} more characters than the request of {request.model} has")


def prefix_text(request: Request, chars: int) -> str:
    return "".join(m.content for m in request.messages)[:chars]


def prefix_tokens(model: str, text: str) -> int:
    """Tokens of a prefix by litellm's counter for the model (litellm is imported here)."""
    from .litellm_import import import_litellm

    return int(import_litellm().token_counter(model=model, text=text))


def cache_marked_messages(request: Request, chars: int) -> list[dict[str, Any]]:
    """The request's messages with the first `chars` content characters ending in a text block
    marked cacheable: the message where the prefix ends becomes two text blocks (or one, marked,
    when the prefix ends with it)."""
    index, offset = split_point(request, chars)
    messages: list[dict[str, Any]] = request.message_dicts()
    content = messages[index]["content"]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": content[:offset],
                                     "cache_control": dict(CACHE_CONTROL)}]
    if offset < len(content):
        blocks.append({"type": "text", "text": content[offset:]})
    messages[index] = {"role": messages[index]["role"], "content": blocks}
    return messages


def cacheable_prefixes(requests: Sequence[Request],
                       count_tokens: Any = prefix_tokens) -> list[int]:
    """Per request, the shared prefix (characters) to mark cacheable, or 0: shared with another
    request of its model, and at least the provider's minimum length (`count_tokens(model,
    text)` counts it). Only models whose provider needs a marker are counted."""
    marked = [0] * len(requests)
    needs_marker = [min_cacheable_tokens(r.model) is not None for r in requests]
    if not any(needs_marker):
        return marked
    counted: dict[tuple[str, str], int] = {}
    for i, chars in enumerate(shared_prefixes(requests)):
        if not chars or not needs_marker[i]:
            continue
        model = requests[i].model
        text = prefix_text(requests[i], chars)
        if (model, text) not in counted:
            counted[(model, text)] = count_tokens(model, text)
        if qualifies(model, counted[(model, text)]):
            marked[i] = chars
    return marked
