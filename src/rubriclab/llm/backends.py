"""Where a request is answered: `fake/...` in-process; everything else through litellm (which
family a model string is of, and what follows, is rubriclab.llm.providers').

`local/...` models are served by llama-cpp-python registered as a litellm custom provider, so
that local and remote models share one code path. litellm is imported lazily (it takes seconds).
"""

from __future__ import annotations

import ast
import asyncio
import contextvars
import email.utils
import json
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

from .fake import fake_answer, fake_fingerprint
from .formats import get_format
from .litellm_import import import_litellm
from .pricing import price
from .providers import provider_for
from .request import Request
from .settings import LLMConfig, ModelSettings

RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
RETRYABLE_NAMES = {
    "RateLimitError", "InternalServerError", "ServiceUnavailableError", "Timeout",
    "APITimeoutError", "APIConnectionError", "EmptyAnswer", "UnreadableReply",
}
# Errors that the same request cannot get past by asking again. The first three kinds are the
# model's, not the request's: every other request of the batch to that model would meet them.
MODEL_FATAL_NAMES = {"AuthenticationError", "PermissionDeniedError", "NotFoundError",
                     "MissingAPIKey"}
FATAL_NAMES = MODEL_FATAL_NAMES | {"BadRequestError", "UnprocessableEntityError",
                                   "ContextWindowExceededError", "ContentPolicyViolationError",
                                   "UnsupportedParamsError"}
FATAL_STATUS = {400, 401, 403, 404, 422}
# litellm reports a client that has no key as a server error (500, "Missing credentials").
_MISSING_CREDENTIALS = re.compile(
    r"missing credentials|api_key client option must be set|no api key|"
    r"(invalid|incorrect) api[ _-]?key|api[ _-]?key (is )?(missing|required|not (set|found|provided))",
    re.IGNORECASE)
# Sent as the key of a server that needs none (`placeholder_api_key`): never a real key.
PLACEHOLDER_API_KEY = "placeholder-no-key-needed"
# Where the key of each provider whose batch API rubriclab drives is read from, in litellm's
# order (the variables litellm.validate_environment names for its models).
PROVIDER_KEY_VARIABLES = {"openai": ("OPENAI_API_KEY",), "anthropic": ("ANTHROPIC_API_KEY",),
                          "gemini": ("GOOGLE_API_KEY", "GEMINI_API_KEY")}
# The hosts of each provider's own API (a subdomain counts: Azure's <resource>.openai.azure.com):
# the only endpoints the provider's key from the environment is sent to. Any other api_base
# (vLLM, a proxy, a test server) gets the key its api_key_env names, or the placeholder.
PROVIDER_HOSTS = {
    "openai": ("api.openai.com",), "anthropic": ("api.anthropic.com",),
    "gemini": ("generativelanguage.googleapis.com",), "deepseek": ("api.deepseek.com",),
    "xai": ("api.x.ai",), "openrouter": ("openrouter.ai",), "mistral": ("api.mistral.ai",),
    "groq": ("api.groq.com",), "together_ai": ("api.together.xyz",),
    "azure": ("openai.azure.com",),
}


class EmptyAnswer(RuntimeError):
    """The model returned no text: a failure, never an answer. `answer`: its usage and cost,
    billed all the same."""

    def __init__(self, message: str, answer: RawAnswer | None = None):
        super().__init__(message)
        self.answer = answer


class MissingAPIKey(RuntimeError):
    pass


class DeadlineExceeded(RuntimeError):
    """A request got no answer within its deadline (`ModelSettings.deadline_s`)."""


class UnreadableReply(RuntimeError):
    """The server answered with a success status, but with a body that is no completion: an
    empty body, an HTML page (a proxy's), JSON cut short. Asked again; the attempt may have
    been billed, and its usage cannot be read."""

    @classmethod
    def of(cls, body: str, problem: str = "") -> UnreadableReply:
        """The plain error for `body`; `problem`: why it did not parse as JSON, if it looked
        like JSON."""
        text = body.strip()
        if not text:
            return cls("the server answered 200 with an empty body")
        if text.startswith("<"):
            return cls(f"the server answered 200 with an HTML page, not JSON (starts "
                       f"{_shortened(text)!r})")
        if problem and text[0] in "{[":
            return cls(f"the server answered 200 with JSON that does not parse ({problem}; "
                       f"{len(body)} characters, ending {_shortened(text, end=True)!r})")
        return cls(f"the server answered 200 with a body that is not JSON (starts "
                   f"{_shortened(text)!r})")


def _shortened(text: str, end: bool = False, keep: int = 40) -> str:
    if len(text) <= keep:
        return text
    return "..." + text[-keep:] if end else text[:keep] + "..."


# litellm's error for a 200 whose body the OpenAI client read as text, not as a JSON object.
_NOT_AN_OBJECT = re.compile(
    r"Empty or invalid response from LLM endpoint\. Received: (?P<body>.*)\. Check the reverse "
    r"proxy", re.DOTALL)


def unreadable_reply(exc: BaseException) -> UnreadableReply | None:
    """The plain error for an exception of litellm's that stands for a success status with an
    unreadable body (litellm reports it as a 500 of its own: "Expecting value: line 1 column
    1"); None for any other. The OpenAI client parses a body only after a success status, so
    a JSON decoding error among the exception's causes is such a body (it holds its text)."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        if isinstance(link, json.JSONDecodeError):
            return UnreadableReply.of(link.doc, f"{link.msg} at character {link.pos}")
        link = link.__cause__ or link.__context__
    found = _NOT_AN_OBJECT.search(str(exc))
    if found is None:
        return None
    try:
        body = ast.literal_eval(found["body"])
    except (ValueError, SyntaxError):
        body = found["body"]
    return UnreadableReply.of(body if isinstance(body, str) else found["body"])


_T = TypeVar("_T")


async def within_deadline(call: Awaitable[_T], seconds: float, model: str,
                          deadline_s: float) -> _T:
    """`call`'s result, or DeadlineExceeded once `seconds` of wall clock have passed, whatever
    the server does (a timeout bounds each read, so a server trickling its reply could stretch
    an attempt without end): the call is cancelled, which closes its HTTP connection."""
    bound = asyncio.timeout(seconds)
    started = time.monotonic()
    try:
        async with bound:
            return await call
    except Exception as exc:
        if not bound.expired():
            raise
        raise DeadlineExceeded(
            f"no answer from {model!r} within its deadline of {deadline_s:g} s: the attempt "
            f"under way was stopped after {time.monotonic() - started:.1f} s, unanswered "
            "(deadline_s bounds the whole request; the attempt may have been billed)") from exc


async def in_own_thread(func: Callable[..., _T], /, **kwargs: Any) -> _T:
    """`func(**kwargs)` in a daemon thread of its own. Unlike `asyncio.to_thread`, whose pool
    `asyncio.run` joins on its way out, nothing waits for it once its caller stops waiting (a
    deadline): no thread can be stopped, so the call runs on unheeded and its result is
    dropped."""
    loop = asyncio.get_running_loop()
    result: asyncio.Future[_T] = loop.create_future()
    context = contextvars.copy_context()

    def deliver(value: Any, error: BaseException | None) -> None:
        if result.done():  # its caller stopped waiting
            return
        if error is not None:
            result.set_exception(error)
        else:
            result.set_result(value)

    def work() -> None:
        value, error = None, None
        try:
            value = context.run(func, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            error = exc
        try:
            loop.call_soon_threadsafe(deliver, value, error)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for it any more

    threading.Thread(target=work, name="rubriclab-model-call", daemon=True).start()
    return await result


@dataclass(frozen=True)
class RawAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    finish_reason: str = "stop"
    cache_read_tokens: int = 0   # of prompt_tokens: read from the provider's prompt cache
    cache_write_tokens: int = 0  # of prompt_tokens: written to it


class AnswerCutOff(RuntimeError):
    """The answer stopped at its token budget (finish_reason "length"): never parsed as is."""

    def __init__(self, model: str, max_tokens: int, answer: RawAnswer):
        shown = repr(answer.text[:60]) if answer.text else "no content"
        super().__init__(f"model {model!r} used its whole budget of {max_tokens} completion "
                         f"tokens (finish_reason 'length', {shown})")
        self.answer = answer


def placeholder_key(settings: ModelSettings) -> str | None:
    """The key every call to a server that needs none sends (`placeholder_api_key`), so that
    no client falls back on the environment's real key; None for any other server."""
    return PLACEHOLDER_API_KEY if settings.placeholder_api_key else None


def is_providers_endpoint(provider: str, api_base: str | None) -> bool:
    """Whether `api_base` is the provider's own API (https, at one of PROVIDER_HOSTS), to
    which the provider's key from the environment may go; no api_base: the provider's."""
    if not api_base:
        return True
    parts = urlsplit(api_base.strip())
    host = (parts.hostname or "").lower()
    return parts.scheme.lower() == "https" and any(
        host == known or host.endswith("." + known) for known in PROVIDER_HOSTS.get(provider, ()))


def provider_key_variables(provider: str) -> tuple[str, ...]:
    """Where the environment holds a provider's key (litellm's names for the three batch
    providers; PROVIDER_API_KEY for the others, as litellm names most)."""
    return PROVIDER_KEY_VARIABLES.get(provider, (f"{provider.upper()}_API_KEY",))


def endpoint_key_problem(model: str, settings: ModelSettings, where: str) -> str | None:
    """Why a config must say which key a model's endpoint gets: its `api_base` is not its
    provider's own API, so the provider's key in the environment is never sent there, and it
    names neither `api_key_env` nor `placeholder_api_key`. None where nothing is to say."""
    provider = model.partition("/")[0]
    if (not provider_for(model).remote or settings.placeholder_api_key
            or settings.api_key_env
            or is_providers_endpoint(provider, settings.api_base)):
        return None
    shown = endpoint_identity(settings.api_base or "")
    return (f"{where}.api_base: {shown!r} is not {provider}'s own API, so rubriclab never "
            f"sends it the environment's {' or '.join(provider_key_variables(provider))}; say "
            f"which key that server gets: {where}.api_key_env: NAME (the environment variable "
            "that holds its key), or placeholder_api_key: true (a server that needs none)")


def api_key_to_send(provider: str, settings: ModelSettings) -> str | None:
    """The key a call to the model sends, the one credential rule (ordinary and batch calls):
    the placeholder for a server that needs none; the value of `api_key_env` where it names a
    variable (None where that is not set); for an `api_base` that is not the provider's own
    API, the placeholder (never the environment's key: an endpoint that is not the
    provider's never receives it); else the provider's key from the environment, None where
    it is not set."""
    placeholder = placeholder_key(settings)
    if placeholder is not None:
        return placeholder
    if settings.api_key_env:
        return os.environ.get(settings.api_key_env) or None
    if not is_providers_endpoint(provider, settings.api_base):
        return PLACEHOLDER_API_KEY
    for name in PROVIDER_KEY_VARIABLES.get(provider, ()):
        value = os.environ.get(name)
        if value:
            return value
    return None


def explicit_api_key(model: str, settings: ModelSettings) -> str | None:
    """The key an ordinary call passes to litellm itself, by `api_key_to_send`'s rule; None
    where litellm may read the provider's from the environment (the provider's own API, no
    `api_key_env`). MissingAPIKey where `api_key_env` names a variable that is not set."""
    provider = model.partition("/")[0]
    if (not settings.placeholder_api_key and not settings.api_key_env
            and is_providers_endpoint(provider, settings.api_base)):
        return None
    key = api_key_to_send(provider, settings)
    if key is None:
        raise MissingAPIKey(f"model {model!r} sends the key in the environment variable "
                            f"{settings.api_key_env} (api_key_env), which is not set; set it "
                            "before running")
    return key


def _names(exc: BaseException) -> set[str]:
    return {cls.__name__ for cls in type(exc).__mro__}


def is_model_fatal(exc: BaseException) -> bool:
    """Authentication, missing credentials, an unknown model: no request to the model can
    succeed, so the batch stops asking it at once."""
    status = getattr(exc, "status_code", None)
    return (bool(_names(exc) & MODEL_FATAL_NAMES) or status in (401, 403, 404)
            or bool(_MISSING_CREDENTIALS.search(str(exc))))


def is_retryable(exc: BaseException) -> bool:
    if is_model_fatal(exc) or _names(exc) & FATAL_NAMES:
        return False
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and status in FATAL_STATUS:
        return False
    if isinstance(status, int) and status in RETRYABLE_STATUS:
        return True
    return bool(_names(exc) & RETRYABLE_NAMES)


def is_rate_limited(exc: BaseException) -> bool:
    """A 429 (or litellm's RateLimitError): the provider's limit for the model, which every
    process calling it shares."""
    return getattr(exc, "status_code", None) == 429 or "RateLimitError" in _names(exc)


def made_no_completion(exc: BaseException) -> bool:
    """The provider answered with an error status (or the request never went out), so no
    completion was made to bill; a timeout or a dropped connection may have been billed."""
    if isinstance(exc, MissingAPIKey):
        return True
    if _names(exc) & {"Timeout", "APITimeoutError", "APIConnectionError"}:
        return False  # litellm gives these a status (408, 500) of its own
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status >= 400


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a provider asks for (Retry-After, in seconds or as an HTTP date, or OpenAI's
    retry-after-ms), from the headers litellm keeps on its exception; None when it asks none."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if not headers:
        return None
    try:
        lowered = {str(k).lower(): str(v) for k, v in dict(headers).items()}
    except (TypeError, ValueError):
        return None
    if "retry-after-ms" in lowered:
        try:
            return max(0.0, float(lowered["retry-after-ms"]) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


def endpoint_identity(api_base: str, keep_userinfo: bool = False) -> str:
    """An endpoint as part of a model's identity: scheme and host lower-cased, no trailing /,
    and no user:password@ (credentials are not the endpoint, and what is keyed is stored in
    cache rows and exports). `keep_userinfo`: the identity as it was before credentials were
    stripped, for finding the answers stored under it."""
    parts = urlsplit(api_base.strip())
    netloc = parts.netloc if keep_userinfo else parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme.lower(), netloc.lower(), parts.path.rstrip("/"),
                       parts.query, ""))


class Backends:
    """Model fingerprints, API-key checks and the actual calls, per model string."""

    def __init__(self, config: LLMConfig):
        self.config = config
        self._fingerprints: dict[str, str] = {}
        self._priced: dict[str, bool] = {}
        self._litellm: Any = None

    @property
    def litellm(self) -> Any:
        if self._litellm is None:
            self._litellm = import_litellm()
            from .local import register_local_provider

            register_local_provider(self._litellm, self.config)
        return self._litellm

    def fingerprint(self, model: str) -> str:
        """The model's identity beside its string, part of every key: "fake-v1", a GGUF's
        sha256, and for a remote model its endpoint (`api_base`) unless a fingerprint is
        declared for it (then the declared one, so the model can move between servers)."""
        if model not in self._fingerprints:
            settings = self.config.settings_for(model)
            declared = settings.fingerprint
            family = provider_for(model)
            if family.scripted:
                value = fake_fingerprint(model)
            elif family.embedded:
                from .embedded import resolve_local_model

                value = "gguf-sha256:" + resolve_local_model(model, self.config.models_dir).sha256
            else:
                value = ""
                if not declared and settings.api_base:
                    declared = "endpoint=" + endpoint_identity(settings.api_base)
            self._fingerprints[model] = f"{value}|{declared}" if declared else value
        return self._fingerprints[model]

    def earlier_fingerprints(self, model: str) -> list[str]:
        """The fingerprints earlier key versions gave the model where they differ from
        `fingerprint`: version 1's for a remote model at an `api_base` with none declared
        (no endpoint: it did not yet key one)."""
        settings = self.config.settings_for(model)
        if (not provider_for(model).remote or settings.fingerprint
                or not settings.api_base):
            return []
        return [""]

    def credentialed_fingerprints(self, model: str) -> list[str]:
        """Fingerprints this model had before credentials were stripped from its endpoint:
        answers stored under them are the same endpoint's (looked up, then stored again under
        the current key)."""
        settings = self.config.settings_for(model)
        if (settings.fingerprint or not settings.api_base or "@" not in settings.api_base
                or not provider_for(model).remote):
            return []
        earlier = "|endpoint=" + endpoint_identity(settings.api_base, keep_userinfo=True)
        return [earlier] if earlier != self.fingerprint(model) else []

    def missing_api_keys(self, model: str) -> list[str]:
        """The environment variables a remote model needs and lacks: the one its
        `api_key_env` names, else litellm's validate_environment for the provider's own API;
        none for fake/ and local/ models, nor where the model's settings say
        placeholder_api_key: true or check_api_key: false (which does not skip `api_key_env`),
        nor for an api_base that is not the provider's (it gets the placeholder, never the
        environment's key). The one credential rule: the check before the first job asks it too."""
        settings = self.config.settings_for(model)
        if not provider_for(model).remote or settings.placeholder_api_key:
            return []
        if settings.api_key_env:
            return [] if os.environ.get(settings.api_key_env) else [settings.api_key_env]
        if (not settings.check_api_key
                or not is_providers_endpoint(model.partition("/")[0], settings.api_base)):
            return []
        report = self.litellm.validate_environment(model=model)
        return list(report.get("missing_keys") or [])

    def check_api_key(self, model: str) -> None:
        """Raise MissingAPIKey naming the environment variables a remote model lacks."""
        missing = self.missing_api_keys(model)
        if missing:
            raise MissingAPIKey(
                f"model {model!r} needs the environment variable(s) {', '.join(missing)}; "
                "set them before running (keys are read from the environment, never from config)"
            )

    async def complete(self, request: Request, messages: list[dict[str, str]],
                       settings: ModelSettings) -> RawAnswer:
        if not provider_for(request.model).through_litellm:
            text = await in_own_thread(fake_answer, request=request, messages=messages)
            answer = RawAnswer(text, _approx_tokens(messages), _approx_tokens(text), 0.0)
        else:
            answer = await self._complete_with_litellm(request, messages, settings)
        cut_off = answer.finish_reason == "length"
        if cut_off and not (answer.text.strip() and get_format(request.response_format).free_text):
            # A structured answer cut off is incomplete, and an empty one spent its budget
            # thinking: both need a larger budget, not the same request again.
            raise AnswerCutOff(request.model, request.budget, answer)
        if not answer.text.strip():
            raise EmptyAnswer(f"model {request.model!r} returned an empty answer", answer)
        return answer

    async def _complete_with_litellm(self, request: Request, messages: list[dict[str, str]],
                                     settings: ModelSettings) -> RawAnswer:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "max_tokens": request.budget,
            "timeout": settings.timeout_s,
            "num_retries": 0,  # retries are ours: bounded, logged, and around empty answers too
            "max_retries": 0,
        }
        if request.temperature is not None:  # None: the provider's default
            kwargs["temperature"] = request.temperature
        embedded = provider_for(request.model).embedded
        if request.reasoning_effort is not None:
            if embedded:
                raise ValueError(f"model {request.model!r} is an embedded llama.cpp model and "
                                 "takes no reasoning effort (llm.roles sets one for it)")
            kwargs["reasoning_effort"] = request.reasoning_effort
        if request.top_p is not None:
            kwargs["top_p"] = request.top_p
        if request.stop:
            kwargs["stop"] = list(request.stop)
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if provider_for(request.model).remote:
            # The key of `api_key_env`, or a placeholder for a server that needs none or is
            # not the provider's (litellm's OpenAI client refuses to send none): never the
            # environment's provider key to an endpoint that is not the provider's.
            key = explicit_api_key(request.model, settings)
            if key is not None:
                kwargs["api_key"] = key
        if embedded:
            # One llama.cpp context per process; the call runs in a worker thread.
            grammar = get_format(request.response_format).gbnf_grammar
            kwargs["seed"] = request.sample_index
            if grammar:
                kwargs["grammar"] = grammar
            response = await in_own_thread(self.litellm.completion, **kwargs)
            cost: float | None = 0.0
        else:
            try:
                response = await self.litellm.acompletion(**kwargs)
            except Exception as exc:
                unreadable = unreadable_reply(exc)
                if unreadable is None:
                    raise
                raise unreadable from exc
            cost = self._cost(request.model, response)
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = getattr(response, "usage", None)
        read, written = prompt_cache_tokens(usage)
        return RawAnswer(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=cost,
            finish_reason=str(getattr(choice, "finish_reason", None) or "stop"),
            cache_read_tokens=read,
            cache_write_tokens=written,
        )

    def _cost(self, model: str, response: Any) -> float | None:
        """The call's price: the model's configured price (llm.per_model.<model>.price) where
        it has one, else litellm's price map; None (unknown, never $0) for a model the map does
        not price (litellm's completion_cost returns 0.0 for some of them)."""
        configured = self.config.settings_for(model).price
        if configured is not None:
            usage = getattr(response, "usage", None)
            read, written = prompt_cache_tokens(usage)
            return price(model, int(getattr(usage, "prompt_tokens", 0) or 0),
                         int(getattr(usage, "completion_tokens", 0) or 0),
                         cache_read_tokens=read, cache_write_tokens=written,
                         configured=configured)
        if model not in self._priced:
            try:
                info = self.litellm.get_model_info(model=model)
                self._priced[model] = bool(info.get("input_cost_per_token")
                                           or info.get("output_cost_per_token"))
            except Exception:  # not in the map
                self._priced[model] = False
        if not self._priced[model]:
            return None
        try:
            return float(self.litellm.completion_cost(completion_response=response))
        except Exception:  # unknown price: reported as such, never as $0
            return None


def prompt_cache_tokens(usage: Any) -> tuple[int, int]:
    """(read, written) prompt-cache tokens of a usage (litellm's object or a usage dict):
    Anthropic's cache_read_input_tokens / cache_creation_input_tokens, else OpenAI's, Gemini's
    and DeepSeek's prompt_tokens_details.cached_tokens (they write no cache one pays for)."""
    def field(obj: Any, name: str) -> Any:
        return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)

    if usage is None:
        return 0, 0
    written = int(field(usage, "cache_creation_input_tokens") or 0)
    read = field(usage, "cache_read_input_tokens")
    if read is None:
        details = field(usage, "prompt_tokens_details")
        read = field(details, "cached_tokens") if details is not None else 0
    return int(read or 0), written


def _approx_tokens(content: Any) -> int:
    if isinstance(content, list):
        return sum(_approx_tokens(m["content"]) for m in content)
    return max(1, len(str(content).split()))
