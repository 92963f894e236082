"""What a model call is: the request, its cache key, and the completion it returns."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

CACHE_KEY_VERSION = 1
# litellm's reasoning_effort values (mapped per provider: OpenAI reasoning_effort, Anthropic
# thinking budgets, Gemini thinking config).
REASONING_EFFORTS = ("minimal", "low", "medium", "high")
# Fields added after key version 1: left out of the key at their default, so every entry made
# before they existed keeps its key.
_KEYED_WHEN_SET = {"reasoning_effort": None, "reasoning_tokens": 0}

Outcome = Literal["ok", "unparseable", "failed"]


@dataclass(frozen=True)
class Message:
    role: str
    content: str


@dataclass(frozen=True)
class Request:
    """Every field here can change what the model answers, so every field is in the cache key.

    Settings that cannot change the answer (timeouts, retry counts, re-ask budget, API keys,
    endpoints) live in `ModelSettings` instead and never reach the key. The one exception is
    `role`: it names the part a model plays (judge, reviser, ...), which selects settings that
    `LLMClient` writes into the key fields (reasoning effort, answer budget) before keying.

    `temperature=None` sends no temperature (the provider's default); `reasoning_effort=None`
    sends none (the model's default).
    """

    model: str
    messages: tuple[Message, ...]
    temperature: float | None = 0.0
    max_tokens: int = 16
    response_format: str = "text"
    sample_index: int = 0
    top_p: float | None = None
    stop: tuple[str, ...] | None = None
    reasoning_effort: str | None = None
    # Room for thinking, sent on top of max_tokens (LLMClient sets it from the model's
    # settings); `budget` is what the provider is asked for.
    reasoning_tokens: int = 0
    role: str | None = None

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("Request.model is empty")
        if not self.messages:
            raise ValueError(f"Request for {self.model} has no messages")
        if self.sample_index < 0:
            raise ValueError(f"Request.sample_index must be >= 0, got {self.sample_index}")
        if self.max_tokens <= 0:
            raise ValueError(f"Request.max_tokens must be > 0, got {self.max_tokens}")
        if self.reasoning_tokens < 0:
            raise ValueError(f"Request.reasoning_tokens must be >= 0, got {self.reasoning_tokens}")
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"Request.reasoning_effort must be one of {list(REASONING_EFFORTS)} "
                             f"or None, got {self.reasoning_effort!r}")

    @classmethod
    def chat(cls, model: str, messages: list[dict[str, str]], **fields: Any) -> Request:
        """Build a request from OpenAI-style message dicts."""
        return cls(
            model=model,
            messages=tuple(Message(m["role"], m["content"]) for m in messages),
            **fields,
        )

    @property
    def budget(self) -> int:
        """Completion tokens the provider is asked for: the answer's and the thinking's."""
        return self.max_tokens + self.reasoning_tokens

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": m.role, "content": m.content} for m in self.messages]


def cache_key(request: Request, model_fingerprint: str) -> str:
    """sha256 over every output-changing field of the request and the model's fingerprint."""
    payload = asdict(request)
    del payload["role"]  # selects settings; the settings it selects are fields of their own
    for name, default in _KEYED_WHEN_SET.items():
        if payload[name] == default:
            del payload[name]
    payload["messages"] = [[m["role"], m["content"]] for m in payload["messages"]]
    payload["model_fingerprint"] = model_fingerprint
    payload["cache_key_version"] = CACHE_KEY_VERSION
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Usage:
    """Tokens of a call. `prompt_tokens` counts all prompt tokens; of them, `cache_read_tokens`
    were read from and `cache_write_tokens` written to the provider's prompt cache."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class Completion:
    """The answer to one request.

    `outcome` is "ok" (parsed), "unparseable" (the model answered but never in the requested
    format after the allowed re-asks, or never within its budget after the allowed doublings)
    or "failed" (no answer after the allowed retries).
    Only "ok" completions are ever cached.
    """

    request: Request
    key: str
    outcome: Outcome
    text: str = ""
    parsed: Any = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = 0.0
    cached: bool = False
    latency_s: float = 0.0
    attempts: int = 0
    reasks: int = 0
    error: str = ""
    batch: bool = False  # answered (at first) through the provider's batch API
