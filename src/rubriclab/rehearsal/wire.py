"""The three providers' wire formats as the rehearsal server (rubriclab.rehearsal.server) reads
and writes them: which format a path or a GET speaks, the key a request carries, one request
read into model, messages and budgets, the requests a provider refuses outright, its error and
answer bodies, and prompt tokens counted as the provider counts them."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from rubriclab.llm.tokens import prompt_tokens as prompt_tokens_of

GEMINI_PATH = re.compile(r"/models/([^/:]+):generateContent")


def wire_of_get(path: str, headers: Any) -> str:
    """The provider whose format a request (a GET above all) is answered in: Anthropic's when
    it says anthropic-version, Google's under /v1beta, else OpenAI's."""
    route = urlsplit(path).path
    if headers.get("anthropic-version") or "/v1/messages" in route:
        return "anthropic"
    if route.startswith(("/v1beta", "/upload/v1beta", "/download/v1beta")):
        return "gemini"
    return "openai"


def presented_key(path: str, headers: Any) -> str | None:
    """The key a request carries: Bearer, x-api-key, x-goog-api-key or Google's ?key=."""
    bearer = headers.get("Authorization") or ""
    if bearer.lower().startswith("bearer "):
        return bearer[7:].strip()
    for name in ("x-api-key", "x-goog-api-key"):
        if headers.get(name):
            return headers.get(name)
    keys = parse_qs(urlsplit(path).query).get("key")
    return keys[0] if keys else None


def wire_of_path(path: str) -> str | None:
    """The wire format a POST to `path` speaks; None for a path no provider serves."""
    path = path.split("?", 1)[0]
    if path.endswith("/chat/completions"):
        return "openai"
    if path.endswith("/v1/messages"):
        return "anthropic"
    if GEMINI_PATH.search(path):
        return "gemini"
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


# The model string litellm's token counter takes for the model a wire names (an Anthropic
# model counts with Anthropic's tokenizer only under its provider's prefix).
COUNTER_PREFIX = {"anthropic": "anthropic/", "gemini": "gemini/"}


def prompt_token_count(wire: str, request: dict) -> int:
    """Prompt tokens as litellm counts them for the model: the count `rubriclab plan` plans
    with, as a provider counts with its own tokenizer."""
    return max(1, prompt_tokens_of(COUNTER_PREFIX.get(wire, "") + request["model"],
                                   request["messages"]))


def request_key(wire: str, request: dict) -> str:
    """One request as the provider bills it: its wire format and everything `read_request`
    reads (model, messages, budget, effort, thinking budget, temperature)."""
    return json.dumps([wire, request], sort_keys=True)


def read_request(wire: str, body: dict, gemini_model: str) -> dict:
    """model, messages (role/content), max_tokens, effort, thinking_budget, temperature."""
    if wire == "openai":
        messages = [{"role": m["role"], "content": _text_of(m.get("content"))}
                    for m in body.get("messages", [])]
        return dict(model=body.get("model", ""), messages=messages,
                    max_tokens=int(body.get("max_completion_tokens") or body.get("max_tokens")
                                   or 4096),
                    effort=body.get("reasoning_effort"), thinking_budget=None,
                    temperature=body.get("temperature"))
    if wire == "anthropic":
        system = body.get("system")
        messages = ([{"role": "system", "content": _text_of(system)}] if system else [])
        messages += [{"role": m["role"], "content": _text_of(m.get("content"))}
                     for m in body.get("messages", [])]
        thinking = body.get("thinking") or {}
        budget = thinking.get("budget_tokens") if thinking.get("type") == "enabled" else None
        return dict(model=body.get("model", ""), messages=messages,
                    max_tokens=int(body.get("max_tokens") or 0), effort=None,
                    thinking_budget=budget, temperature=body.get("temperature"))
    system = body.get("system_instruction") or body.get("systemInstruction") or {}
    messages = ([{"role": "system", "content": _text_of(system.get("parts"))}]
                if system else [])
    for turn in body.get("contents", []):
        role = "assistant" if turn.get("role") == "model" else "user"
        messages.append({"role": role, "content": _text_of(turn.get("parts"))})
    config = body.get("generationConfig") or body.get("generation_config") or {}
    thinking = config.get("thinkingConfig") or config.get("thinking_config") or {}
    budget = thinking.get("thinkingBudget", thinking.get("thinking_budget"))
    return dict(model=gemini_model, messages=messages,
                max_tokens=int(config.get("max_output_tokens") or config.get("maxOutputTokens")
                               or 8192),
                effort=None, thinking_budget=budget, temperature=config.get("temperature"))


def marked_prefix(body: dict) -> str | None:
    """The text of an Anthropic request up to and including its last cache_control block."""
    blocks: list[dict] = []
    system = body.get("system")
    if isinstance(system, list):
        blocks += [b for b in system if isinstance(b, dict)]
    elif system:
        blocks.append({"text": system})
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, list):
            blocks += [b for b in content if isinstance(b, dict)]
        else:
            blocks.append({"text": content or ""})
    marked = [i for i, b in enumerate(blocks) if b.get("cache_control")]
    if not marked:
        return None
    return "".join(b.get("text", "") for b in blocks[:marked[-1] + 1])


def refused_outright(wire: str, request: dict) -> tuple[int, dict, dict] | None:
    """The requests a provider refuses outright, as its API does."""
    if wire == "anthropic":
        budget = request["thinking_budget"]
        if not request["max_tokens"]:
            return error_reply(wire, 400, "max_tokens: Field required")
        if budget is not None and budget >= request["max_tokens"]:
            return error_reply(wire, 400, "`max_tokens` must be greater than "
                                          "`thinking.budget_tokens`")
        if budget is not None and request["temperature"] not in (None, 1, 1.0):
            return error_reply(wire, 400, "`temperature` may only be set to 1 when thinking "
                                          "is enabled")
    return None


def error_reply(wire: str, status: int, message: str,
                headers: dict | None = None) -> tuple[int, dict, dict]:
    """A provider's error body for `status`, in its wire format."""
    if wire == "anthropic":
        kind = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}
        return status, {"type": "error", "error": {"type": kind.get(status, "api_error"),
                                                   "message": message}}, headers or {}
    if wire == "gemini":
        return status, {"error": {"code": status, "message": message,
                                  "status": "RESOURCE_EXHAUSTED" if status == 429 else
                                  "INTERNAL"}}, headers or {}
    return status, {"error": {"message": message, "type": "server_error" if status >= 500
                              else "rate_limit_error" if status == 429
                              else "invalid_request_error"}}, headers or {}


def reply_body(wire: str, model: str, text: str, finish: str, prompt_tokens: int,
               completion_tokens: int, thinking: int, cache_read: int = 0,
               cache_write: int = 0) -> dict:
    """A provider's answer body in its wire format, with the usage it reports."""
    if wire == "anthropic":
        content = ([{"type": "thinking", "thinking": "(rehearsal thinking)",
                     "signature": "rehearsal"}] if thinking else [])
        if text:
            content.append({"type": "text", "text": text})
        return {"id": "msg_rehearsal", "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": "max_tokens" if finish == "length"
                else "end_turn", "stop_sequence": None,
                # Anthropic's input_tokens leave out the tokens read from or written to cache.
                "usage": {"input_tokens": prompt_tokens - cache_read - cache_write,
                          "output_tokens": completion_tokens,
                          "cache_creation_input_tokens": cache_write,
                          "cache_read_input_tokens": cache_read}}
    if wire == "gemini":
        parts = ([{"text": "(rehearsal thinking)", "thought": True}] if thinking else [])
        if text:
            parts.append({"text": text})
        return {"candidates": [{"content": {"role": "model", "parts": parts},
                                "finishReason": "MAX_TOKENS" if finish == "length" else "STOP",
                                "index": 0}],
                "usageMetadata": {"promptTokenCount": prompt_tokens,
                                  "candidatesTokenCount": completion_tokens - thinking,
                                  "thoughtsTokenCount": thinking,
                                  "totalTokenCount": prompt_tokens + completion_tokens},
                "modelVersion": model}
    return {"id": "chatcmpl-rehearsal", "object": "chat.completion", "created": 0,
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens,
                      "completion_tokens_details": {"reasoning_tokens": thinking}}}
