"""A loopback server that answers as the providers of config/paper.yaml do, faults included.

It speaks the three wire formats litellm sends for paper.yaml's model strings
(rubriclab.rehearsal.wire):

    POST .../chat/completions             OpenAI's, also used by litellm for deepseek/, xai/
                                          and openrouter/ (OpenAI-compatible providers)
    POST .../v1/messages                  Anthropic's messages API (anthropic/)
    POST .../models/<model>:generateContent   Google AI Studio's (gemini/)

plus the three providers' batch endpoints (rubriclab.rehearsal.batches), and answers every
request format of the pipeline (rubriclab.llm.standins), with what real
providers do now and then (`FaultMix`): latency, 429 with Retry-After, 5xx, a hang past the
client's timeout, answers in markdown fences, truncated JSON and refusals. Reasoning models
spend part of the completion budget thinking: a budget too small for the thinking and the
answer comes back empty with finish_reason "length" (Anthropic refuses a thinking budget not
below max_tokens, as its API does). Anthropic's prompt cache is played too: a prefix marked
with cache_control, at least `min_cacheable_tokens` long, is written on
first sight and read afterwards, and the usage says so (cache_creation_input_tokens,
cache_read_input_tokens). It binds 127.0.0.1 only.

It answers the free GET requests a preflight makes (rubriclab.llm.preflight), in each provider's
wire format, from a `ModelCatalog` (default: every model served, any key taken):

    GET /v1/models/{id}, /v1/models       OpenAI's retrieve and list (xAI's, DeepSeek's,
                                          Nebius's and Z.ai's lists take the same form);
                                          Anthropic's when asked with anthropic-version
    GET /v1beta/models/{id}, /v1beta/models   Gemini's models.get and models.list
    GET /api/v1/models, /api/v1/key (and /v1/key)   OpenRouter's public list and key check

and the batch list endpoints (rubriclab.rehearsal.batches). A retired model answers as the
provider's API does once it is gone (404), and lists carry its date where the provider's format
has one (OpenAI's `shutdown_date`, OpenRouter's `expiration_date`); with `keys`, a request with
any other key is refused as the provider refuses one (401; Google: 400 API_KEY_INVALID). These
GETs are counted apart from the paid requests (`free_requests` in /stats).
"""

from __future__ import annotations

import json
import random
import datetime as dt
import hashlib
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from rubriclab.llm.tokens import prompt_tokens as prompt_tokens_of

from rubriclab.llm.standins import answer

from .batches import AnthropicBatches, GeminiBatches, OpenAIBatches
from .wire import (COUNTER_PREFIX, GEMINI_PATH, error_reply, marked_prefix, presented_key,
                   prompt_token_count, read_request, refused_outright, reply_body, request_key,
                   wire_of_get, wire_of_path)

EFFORT_THINKING = {"minimal": 64, "low": 256, "medium": 512, "high": 1024}
REFUSAL = "I'm sorry, but I can't help with that request."
_TRANSPORT_FAULTS = ("rate_limited", "server_error", "hang")
_JSON_FORMATS = ("verdict_list_", "rubric_", "agent_action", "transfer_rubric",
                 "transfer_restated", "transfer_match_", "transfer_scores_")


@dataclass(frozen=True)
class FaultMix:
    """Shares of requests that meet each fault (drawn per request attempt from a hash of the
    seed, the request and how often it was asked, `RehearsalServer._draws`)."""

    rate_limited: float = 0.02     # 429 with Retry-After
    server_error: float = 0.01     # 500, 503 or 529 (Anthropic's "overloaded")
    hang: float = 0.001            # no answer until after the client's timeout
    fenced: float = 0.01           # a JSON answer wrapped in a markdown code fence (read as is)
    truncated: float = 0.005       # a JSON answer cut short (finish_reason "stop")
    refusal: float = 0.003         # a polite refusal instead of the answer
    long_think: float = 0.03       # a reasoning model thinks 16 times its usual amount
    latency_s: tuple[float, float] = (0.0, 0.02)
    retry_after_s: float = 1.0
    hang_s: float = 5.0
    # Transport faults the first ordinary calls meet, one each in this order, before the drawn
    # mix takes over: a small run, whose calls mostly go in batches, is then sure to meet each.
    opening: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = [name for name in self.opening if name not in _TRANSPORT_FAULTS]
        if unknown:
            raise ValueError(f"FaultMix.opening: {unknown} are not transport faults "
                             f"(one of {', '.join(_TRANSPORT_FAULTS)})")

    @classmethod
    def none(cls) -> FaultMix:
        return cls(0, 0, 0, 0, 0, 0, 0, (0.0, 0.0))


@dataclass(frozen=True)
class ReasoningModel:
    """Thinking tokens spent when no effort is asked for (the provider's default)."""

    default_thinking: int = 384


@dataclass(frozen=True)
class ModelCatalog:
    """What the models endpoints say, by model id as the provider names it (the model string
    without litellm's prefix: "gpt-5", "qwen/qwq-32b").

    `served`: the models served; None: every model asked for by itself (a retrieve) is served,
    and the lists (which cannot name every model) name the retired ones only. `retired`: model
    id -> the date it retires (YYYY-MM-DD): once passed, the model is gone (404); lists keep it
    with the date where the format has one. `unknown`: models no endpoint knows. `keys`: the
    keys taken (None: any key, or none). `today`: the day the dates are judged on (None: the
    wall clock's, UTC), so that a test's dates mean the same on any day it runs."""

    served: frozenset[str] | None = None
    retired: Mapping[str, str] = field(default_factory=dict)
    unknown: frozenset[str] = frozenset()
    keys: frozenset[str] | None = None
    today: dt.date | None = None

    @classmethod
    def of(cls, served: Iterable[str] | None = None, *, retired: Mapping[str, str] | None = None,
           unknown: Iterable[str] = (), keys: Iterable[str] | None = None,
           today: dt.date | None = None) -> ModelCatalog:
        return cls(None if served is None else frozenset(served), dict(retired or {}),
                   frozenset(unknown), None if keys is None else frozenset(keys), today)

    def day(self) -> dt.date:
        return self.today or dt.datetime.now(dt.timezone.utc).date()

    def status(self, model: str, today: dt.date | None = None) -> str:
        """"served", "retired" (its date has passed) or "unknown". A date that has passed
        reads as retired; otherwise a model `served` does not name is unknown, dated or not."""
        today = today or self.day()
        if model in self.unknown:
            return "unknown"
        if model in self.retired and dt.date.fromisoformat(self.retired[model]) <= today:
            return "retired"
        if self.served is not None and model not in self.served:
            return "unknown"
        return "served"

    def listed(self) -> list[str]:
        return sorted((set(self.served or ()) | set(self.retired)) - self.unknown)


@dataclass
class Stats:
    requests: Counter = field(default_factory=Counter)   # by wire format
    faults: Counter = field(default_factory=Counter)     # by fault
    formats: Counter = field(default_factory=Counter)    # by inferred response format
    batch_rows: Counter = field(default_factory=Counter)  # of requests: answered in a batch
    cut_off: int = 0
    # GET requests, which no provider bills (models lookups and lists, key checks, batch lists
    # and polls), by kind; never counted among `requests`
    free: Counter = field(default_factory=Counter)
    refused_keys: int = 0  # requests refused for their key


class RehearsalServer:
    def __init__(self, *, faults: FaultMix = FaultMix(), seed: int = 0,
                 reasoning: dict[str, ReasoningModel] | None = None, port: int = 0,
                 min_cacheable_tokens: int = 1024, models: ModelCatalog | None = None):
        self.faults = faults
        self.models = models or ModelCatalog()
        self.batches = OpenAIBatches(self.handle)
        self.gemini_batches = GeminiBatches(self.handle)
        self.anthropic_batches = AnthropicBatches(self.handle)
        self.batch_apis: dict[str, OpenAIBatches | GeminiBatches | AnthropicBatches] = {
            "openai": self.batches, "gemini": self.gemini_batches,
            "anthropic": self.anthropic_batches}
        self.min_cacheable_tokens = min_cacheable_tokens
        self._prompt_cache: set[tuple[str, str]] = set()  # (model, marked prefix) written
        self.reasoning = reasoning or {}
        self.stats = Stats()
        self.bodies: list[tuple[str, dict]] = []  # (path, body) of every request, for tests
        self.keep_bodies = False
        # (method, path, headers) of every HTTP request, batch calls included, for tests
        self.headers_seen: list[tuple[str, str, dict[str, str]]] = []
        self.keep_headers = False
        self._random = random.Random(seed)  # batch polls' transport faults
        self._seed = seed
        self._attempts: Counter = Counter()  # requests received, by model and messages
        self._asked: Counter = Counter()
        # Answers served (status 200), by the request they answer: what a provider bills.
        # Several hosts sharing one call cache pay once per distinct request when each of
        # these counts is 1 (rubriclab.rehearsal.cluster).
        self._answered: Counter = Counter()
        self._opening = list(faults.opening)
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def note_headers(self) -> None:
                if server.keep_headers:
                    with server._lock:
                        server.headers_seen.append((self.command, self.path, {
                            k.lower(): v for k, v in self.headers.items()}))

            def do_GET(self) -> None:
                self.note_headers()
                api = server.batch_api(self.path)
                if self.path == "/stats":
                    self.reply(200, server.stats_dict())
                    return
                refused = server.refuse_key(self.path, self.headers)
                if refused is not None:
                    self.reply(*refused)
                    return
                free = server.free_get(self.path, self.headers)
                if free is not None:
                    self.reply(*free)
                elif api is not None:
                    with server._lock:
                        server.stats.free["batches"] += 1
                    fault = server.poll_fault(api)
                    if fault == "hang":  # the client has given up by now
                        self.close_connection = True
                        return
                    self.reply(*(fault or api.get(self.path, self.headers)))
                else:
                    self.reply(404, {"error": {"message": f"no such path {self.path}"}})

            def do_POST(self) -> None:
                self.note_headers()
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                refused = server.refuse_key(self.path, self.headers)
                if refused is not None:
                    self.reply(*refused)
                    return
                api = server.batch_api(self.path)
                if api is not None:
                    self.reply(*api.post(self.path, self.headers, raw))
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self.reply(400, {"error": {"message": "body is not JSON"}})
                    return
                status, payload, headers = server.handle(self.path, body)
                if status is None:  # a hang: the client has given up by now
                    self.close_connection = True
                    return
                self.reply(status, payload, headers)

            def reply(self, status: int, payload: dict | bytes,
                      headers: dict | None = None) -> None:
                raw = isinstance(payload, bytes)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/octet-stream" if raw
                                     else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def start(self) -> RehearsalServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> RehearsalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stats_dict(self) -> dict:
        with self._lock:
            return {"requests": dict(self.stats.requests), "faults": dict(self.stats.faults),
                    "formats": dict(self.stats.formats), "cut_off": self.stats.cut_off,
                    "batch_rows": dict(self.stats.batch_rows),
                    "batch_calls": {name: dict(api.calls)
                                    for name, api in self.batch_apis.items()},
                    "answers": sum(self._answered.values()),
                    "distinct_requests": len(self._answered),
                    "free_requests": dict(self.stats.free),
                    "refused_keys": self.stats.refused_keys,
                    "fault_mix": asdict(self.faults)}

    # --- the free GETs of a preflight -----------------------------------------------------

    def refuse_key(self, path: str, headers: Any) -> tuple[int, dict, dict] | None:
        """The provider's refusal of a request whose key is not among `models.keys`."""
        keys = self.models.keys
        if keys is None or urlsplit(path).path == "/api/v1/models":  # OpenRouter's is public
            return None
        wire = wire_of_get(path, headers)
        if presented_key(path, headers) in keys:
            return None
        with self._lock:
            self.stats.refused_keys += 1
        if wire == "gemini":  # Google answers an unknown key with 400, not 401
            return 400, {"error": {"code": 400, "status": "INVALID_ARGUMENT",
                                   "message": "API key not valid. Please pass a valid API key.",
                                   "details": [{"@type": "type.googleapis.com/google.rpc."
                                                         "ErrorInfo",
                                                "reason": "API_KEY_INVALID",
                                                "domain": "googleapis.com"}]}}, {}
        if wire == "anthropic":
            return 401, {"type": "error", "error": {"type": "authentication_error",
                                                    "message": "invalid x-api-key"}}, {}
        return 401, {"error": {"message": "Incorrect API key provided.",
                               "type": "invalid_request_error", "param": None,
                               "code": "invalid_api_key"}}, {}

    def free_get(self, path: str, headers: Any) -> tuple[int, dict, dict] | None:
        """A models lookup or list, or OpenRouter's key check, in the provider's format; None
        for any other path."""
        route = unquote(urlsplit(path).path).rstrip("/")
        wire = wire_of_get(path, headers)
        if route in ("/api/v1/key", "/v1/key", "/key"):
            with self._lock:
                self.stats.free["key"] += 1
            return 200, {"data": {"label": "rehearsal", "limit": None, "usage": 0,
                                  "is_free_tier": False}}, {}
        today = self.models.day()
        for prefix in ("/v1beta/models", "/api/v1/models", "/v1/models", "/models",
                       "/api/paas/v4/models"):
            if route == prefix:
                with self._lock:
                    self.stats.free["models_list"] += 1
                return 200, self._model_list(prefix, wire, today), {}
            if route.startswith(prefix + "/"):
                model = route[len(prefix) + 1:]
                with self._lock:
                    self.stats.free["model"] += 1
                return self._model(model, prefix, wire, today)
        return None

    def _model(self, model: str, prefix: str, wire: str,
               today: dt.date) -> tuple[int, dict, dict]:
        status = self.models.status(model, today)
        if status != "served":
            why = (f"The model `{model}` has been retired" if status == "retired"
                   else f"The model `{model}` does not exist or you do not have access to it.")
            if wire == "anthropic":
                return 404, {"type": "error", "error": {"type": "not_found_error",
                                                        "message": f"model: {model}"}}, {}
            if wire == "gemini":
                return 404, {"error": {"code": 404, "status": "NOT_FOUND",
                                       "message": f"models/{model} is not found for API "
                                                  "version v1beta"}}, {}
            return 404, {"error": {"message": why, "type": "invalid_request_error",
                                   "param": None, "code": "model_not_found"}}, {}
        return 200, self._entry(model, prefix, wire), {}

    def _entry(self, model: str, prefix: str, wire: str) -> dict:
        date = self.models.retired.get(model)
        if wire == "gemini":
            return {"name": f"models/{model}", "baseModelId": model, "version": "001",
                    "displayName": model, "inputTokenLimit": 1048576,
                    "outputTokenLimit": 65536,
                    "supportedGenerationMethods": ["generateContent", "countTokens",
                                                   "batchGenerateContent"]}
        if wire == "anthropic":
            return {"type": "model", "id": model, "display_name": model,
                    "created_at": "2025-01-01T00:00:00Z",
                    "capabilities": {"batch": {"supported": True}}}
        if prefix == "/api/v1/models":  # OpenRouter's
            return {"id": model, "canonical_slug": model, "name": model, "created": 0,
                    "context_length": 131072, "pricing": {"prompt": "0", "completion": "0"},
                    "expiration_date": date}
        return {"id": model, "object": "model", "created": 0, "owned_by": "rehearsal",
                "shutdown_date": date}

    def _model_list(self, prefix: str, wire: str, today: dt.date) -> dict:
        names = [m for m in self.models.listed() if self.models.status(m, today) != "unknown"]
        if wire in ("gemini", "anthropic"):  # their formats carry no date: gone is gone
            names = [m for m in names if self.models.status(m, today) == "served"]
        entries = [self._entry(m, prefix, wire) for m in names]
        if wire == "gemini":
            return {"models": entries}
        if wire == "anthropic":
            return {"data": entries, "has_more": False,
                    "first_id": names[0] if names else None,
                    "last_id": names[-1] if names else None}
        return {"object": "list", "data": entries}

    def batch_api(self, path: str) -> OpenAIBatches | GeminiBatches | AnthropicBatches | None:
        return next((api for api in self.batch_apis.values() if api.serves(path)), None)

    def poll_fault(self, api: Any) -> str | tuple[int, dict, dict] | None:
        """The transport fault a batch API read (a poll, a list, a download) meets, drawn from
        the same mix as ordinary calls: "hang" (after hang_s), an error reply, or None.
        Uploads and creations meet none: the imitation keeps each batch created once."""
        with self._lock:
            fault = self._fault(self._random.random())
            if fault not in _TRANSPORT_FAULTS:
                return None
            self.stats.faults[fault] += 1
        wire = next(name for name, known in self.batch_apis.items() if known is api)
        if fault == "hang":
            time.sleep(self.faults.hang_s)
            return "hang"
        if fault == "rate_limited":
            return error_reply(wire, 429, "rate limit reached, retry later",
                               {"Retry-After": str(self.faults.retry_after_s)})
        return error_reply(wire, 503, "the server had an error processing your request")

    # --- one request ---------------------------------------------------------------------

    def handle(self, path: str, body: dict, in_batch: bool = False
               ) -> tuple[int | None, dict, dict]:
        """The answer to one request. `in_batch`: a row of a batch, which meets the answer
        faults but not the transport ones (latency, hangs, 429s, 5xx are the HTTP call's)."""
        wire = wire_of_path(path)
        if wire is None:
            return 404, {"error": {"message": f"no such path {path}"}}, {}
        gemini_model = GEMINI_PATH.search(path)
        request = read_request(wire, body, gemini_model.group(1) if gemini_model else "")
        with self._lock:
            self.stats.requests[wire] += 1
            if in_batch:
                self.stats.batch_rows[wire] += 1
            if self.keep_bodies:
                self.bodies.append((path, body))
            key = (request["model"], json.dumps(request["messages"]))
            draw, latency_draw, think_draw = self._draws(key, self._attempts[key])
            self._attempts[key] += 1
            low, high = self.faults.latency_s
            latency = low + (high - low) * latency_draw
            long_think = think_draw < self.faults.long_think
            fault = self._fault(draw)
            if in_batch:
                latency = 0.0
                if fault in _TRANSPORT_FAULTS:
                    fault = ""
            elif self._opening:
                fault = self._opening.pop(0)
            if fault:
                self.stats.faults[fault] += 1
        time.sleep(latency)
        if fault == "hang":
            time.sleep(self.faults.hang_s)
            return None, {}, {}
        if fault == "rate_limited":
            return error_reply(wire, 429, "rate limit reached, retry later",
                               {"Retry-After": str(self.faults.retry_after_s)})
        if fault == "server_error":
            status = (500, 503, 529)[int(draw * 1e6) % 3]
            return error_reply(wire, status, "the server had an error processing your request")
        refused = refused_outright(wire, request)
        if refused:
            return refused
        with self._lock:
            nth = self._asked[(request["model"], json.dumps(request["messages"]))]
            self._asked[(request["model"], json.dumps(request["messages"]))] += 1
        response_format, text = answer(request["messages"], request["model"], nth)
        if fault == "refusal":
            text = REFUSAL
        elif fault == "fenced" and response_format.startswith(_JSON_FORMATS):
            text = f"```json\n{text}\n```"
        elif fault == "truncated" and response_format.startswith(_JSON_FORMATS):
            text = text[:max(1, len(text) // 2)]
        answer_tokens = max(1, len(text) // 4)
        thinking = self._thinking(request, 16 if long_think else 1)
        budget = request["max_tokens"]
        finish = "stop"
        if thinking + answer_tokens > budget:
            finish = "length"
            if thinking >= budget:
                text, thinking = "", budget
            else:
                text = text[:4 * (budget - thinking)]
            with self._lock:
                self.stats.cut_off += 1
        with self._lock:
            self.stats.formats[response_format] += 1
            self._answered[request_key(wire, request)] += 1
        completion = (answer_tokens if finish == "stop" else budget - thinking) + thinking
        prompt_tokens = prompt_token_count(wire, request)
        cache_read = cache_write = 0
        marked = marked_prefix(body) if wire == "anthropic" else None
        # The marked prefix's tokens, by the same counter as the prompt's.
        marked_tokens = 0 if marked is None else min(prompt_tokens, prompt_tokens_of(
            COUNTER_PREFIX.get(wire, "") + request["model"],
            [{"role": "user", "content": marked}]))
        if marked is not None and marked_tokens >= self.min_cacheable_tokens:
            with self._lock:
                seen = (request["model"], marked) in self._prompt_cache
                self._prompt_cache.add((request["model"], marked))
            if seen:
                cache_read = marked_tokens
            else:
                cache_write = marked_tokens
        return 200, reply_body(wire, request["model"], text, finish, prompt_tokens,
                               completion, thinking, cache_read, cache_write), {}

    def _draws(self, key: tuple[str, str], attempt: int) -> tuple[float, float, float]:
        """Three uniform draws for one attempt at a request, from a hash of the seed, the
        request and the attempt's number, not from a stream in arrival order: which request
        meets which fault (and so which answers are asked again, and get another answer) is
        then the same in every run, whatever the threads' timing, and so are the rubrics the
        chains write and the tokens the judges are sent."""
        digest = hashlib.sha256(json.dumps([self._seed, *key, attempt]).encode()).digest()
        first, second, third = (int.from_bytes(digest[k:k + 8], "big") / 2 ** 64
                                for k in (0, 8, 16))
        return first, second, third

    def _fault(self, draw: float) -> str:
        mix, edge = self.faults, 0.0
        for name in ("rate_limited", "server_error", "hang", "fenced", "truncated", "refusal"):
            edge += getattr(mix, name)
            if draw < edge:
                return name
        return ""

    def _thinking(self, request: dict, factor: int) -> int:
        """Tokens spent thinking: by effort (or the model's default), at most a declared budget."""
        model = self.reasoning.get(request["model"])
        if request["effort"]:
            usual = EFFORT_THINKING[request["effort"]]
        elif request["thinking_budget"] is not None:
            usual = EFFORT_THINKING["medium"]
        else:
            usual = model.default_thinking if model else 0
        thinking = usual * factor
        if request["thinking_budget"] is not None:  # Anthropic and Gemini: a budget was set
            thinking = min(thinking, request["thinking_budget"])
        return thinking
