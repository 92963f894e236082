"""What a model call is: the request, its cache key, and the completion it returns."""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

# The version of the key derivation, recorded with every entry stored (the cache's key_version
# column) and in export headers; each version finds the entries of those before it:
#   1  the first release: a remote model's fingerprint held no endpoint, and numbers kept the
#      type they were written with (temperature 0 keyed apart from 0.0);
#   2  a remote model at an `api_base` with no declared fingerprint has the endpoint in its
#      fingerprint (`Backends.fingerprint`; version 1's is `Backends.earlier_fingerprints`),
#      and numbers take the type their field declares (version 1's integer forms:
#      `legacy_cache_keys`). LLMClient.lookup finds a version-1 entry and stores it again
#      under its version-2 key.
# The hashed payload still says 1 (`_HASHED_KEY_VERSION`): a request both versions key alike
# (fake and local models, a remote one at its provider's endpoint or with a declared
# fingerprint, numbers as floats) keeps its one key. A version whose change touches every key
# hashes its own number.
CACHE_KEY_VERSION = 2
_HASHED_KEY_VERSION = 1
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

    Settings that cannot change the answer (timeouts, retry counts, re-ask budget, API keys)
    live in `ModelSettings` instead and never reach the key; a remote model's endpoint (or the
    fingerprint declared for it) is part of the model's fingerprint. The one exception is
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
        # Canonical types, so that equal requests are equal (and key the same) however their
        # numbers were written: temperature 0 (YAML, --config) is temperature 0.0.
        for name in ("temperature", "top_p"):
            object.__setattr__(self, name, _real_or_none(name, getattr(self, name)))
        for name in ("max_tokens", "sample_index", "reasoning_tokens"):
            object.__setattr__(self, name, _integer(name, getattr(self, name)))
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        if self.stop is not None and not isinstance(self.stop, tuple):
            object.__setattr__(self, "stop", tuple(self.stop))
        if not isinstance(self.model, str) or not self.model:
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


def request_from_dict(values: Any) -> Request:
    """A request from its JSON form (`dataclasses.asdict`), every field present and typed."""
    if not isinstance(values, dict):
        raise ValueError(f"a request must be an object, got {type(values).__name__}")
    names = {f.name for f in fields(Request)}
    if set(values) != names:
        missing, unknown = sorted(names - set(values)), sorted(set(values) - names)
        raise ValueError(f"request fields differ from this version's (missing {missing}, "
                         f"unknown {unknown})")
    for name in ("model", "response_format"):
        if not isinstance(values[name], str):
            raise ValueError(f"request {name} must be a string, got {values[name]!r}")
    for name in ("reasoning_effort", "role"):
        if values[name] is not None and not isinstance(values[name], str):
            raise ValueError(f"request {name} must be a string or null, got {values[name]!r}")
    messages = values["messages"]
    if not isinstance(messages, (list, tuple)) or not all(
            isinstance(m, dict) and set(m) == {"role", "content"}
            and all(isinstance(v, str) for v in m.values()) for m in messages):
        raise ValueError("request messages must be a list of {role, content} strings")
    stop = values["stop"]
    if stop is not None and not (isinstance(stop, (list, tuple)) and all(isinstance(s, str) for s in stop)):
        raise ValueError(f"request stop must be a list of strings or null, got {stop!r}")
    return Request(**{**values, "messages": tuple(Message(**m) for m in messages),
                      "stop": None if stop is None else tuple(stop)})


def _real_or_none(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if type(value) is float and math.isfinite(value):  # the usual case, without abc checks
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"Request.{name} must be a number or None, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"Request.{name} must be finite, got {value!r}")
    return value


def _integer(name: str, value: Any) -> int:
    if type(value) is int:  # the usual case, without abc checks (a paper run builds 700,000)
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"Request.{name} must be an integer, got {value!r}")
    if isinstance(value, numbers.Integral):
        return int(value)
    if not float(value).is_integer():
        raise ValueError(f"Request.{name} must be an integer, got {value!r}")
    # int() of a Real truncates through __trunc__ (numbers.Real's abstract method), called here
    # directly since typeshed's int() does not take a Real.
    return int(math.trunc(value))


def cache_key(request: Request, model_fingerprint: str) -> str:
    """sha256 over every output-changing field of the request and the model's fingerprint."""
    return _key(asdict(request), model_fingerprint)


def legacy_cache_keys(request: Request, model_fingerprint: str) -> list[str]:
    """Keys an entry of the same request may have been stored under before numbers were
    normalised: an integral temperature or top_p written as an integer (0 rather than 0.0)."""
    integral = [name for name in ("temperature", "top_p")
                if getattr(request, name) is not None and getattr(request, name).is_integer()]
    keys = []
    for mask in range(1, 2 ** len(integral)):
        payload = asdict(request)
        for bit, name in enumerate(integral):
            if mask >> bit & 1:
                payload[name] = int(payload[name])
        keys.append(_key(payload, model_fingerprint))
    return keys


def _key(payload: dict[str, Any], model_fingerprint: str) -> str:
    del payload["role"]  # selects settings; the settings it selects are fields of their own
    for name, default in _KEYED_WHEN_SET.items():
        if payload[name] == default:
            del payload[name]
    payload["messages"] = [[m["role"], m["content"]] for m in payload["messages"]]
    payload["model_fingerprint"] = model_fingerprint
    payload["cache_key_version"] = _HASHED_KEY_VERSION
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
    # Of usage.prompt_tokens, those of the askings after the first (re-asks, and askings again
    # with a doubled budget after a cut-off answer): what the model's misbehaviour cost.
    repeat_prompt_tokens: int = 0
    error: str = ""
    batch: bool = False  # answered (at first) through the provider's batch API
