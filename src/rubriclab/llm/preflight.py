"""A free preflight: before a paid run, one look at each remote model on its provider's models
endpoint, a check that the key is taken, and, for a model sent to a batch API, that this key
reaches it. Only GET requests of endpoints the providers do not bill; no completion is asked for.

Per provider (the litellm model-string prefix), where its calls go (`api_base`, else the
provider's base variable litellm reads, API_BASE_VARIABLES, else litellm's own base for the
provider) and what is asked there:

    openai      GET {base}/models/{id}        Bearer    base https://api.openai.com/v1
    anthropic   GET {base}/v1/models/{id}     x-api-key, anthropic-version: 2023-06-01
                                                        base https://api.anthropic.com
    gemini      GET {base}/v1beta/models/{id} x-goog-api-key
                                          base https://generativelanguage.googleapis.com
    xai         GET {base}/models/{id}        Bearer    base https://api.x.ai/v1
    deepseek    GET {base}/models (a list)    Bearer    base https://api.deepseek.com
    openrouter  GET {base}/models (a public list), GET {base}/key (the key)
                                              Bearer    base https://openrouter.ai/api/v1
    nebius      GET {base}/models (a list)    Bearer    base https://api.studio.nebius.ai/v1
    zai         GET {base}/models (a list)    Bearer    base https://api.z.ai/api/paas/v4

Sources: OpenAI's API reference, "Retrieve model" and "List models" (GET /models/{model};
a model's `shutdown_date`); Anthropic's "Get a Model" (GET /v1/models/{model_id}, headers
X-Api-Key and anthropic-version; `capabilities.batch.supported`); Google AI's models.get (GET
https://generativelanguage.googleapis.com/v1beta/{name=models/*}), with the x-goog-api-key
header litellm's GeminiModelInfo.get_models sends; xAI's REST models API (GET
/v1/models/{model_id}, bearer); DeepSeek's "Lists Models" (GET https://api.deepseek.com/models,
bearer); OpenRouter's "List all models" (GET https://openrouter.ai/api/v1/models, public, a
model's `expiration_date`) and "Get current API key" (GET https://openrouter.ai/api/v1/key,
bearer). The default bases are litellm's (1.110.2): litellm/llms/openrouter/common_utils.py
_DEFAULT_API_BASE, litellm/constants.py XAI_API_BASE, litellm/llms/zai/chat/transformation.py
ZAI_API_BASE, litellm/litellm_core_utils/get_llm_provider_logic.py (nebius); DeepSeek's list is
at the root its documentation names (litellm's chat base adds /beta). Nebius's and Z.ai's lists
follow the OpenAI-compatible form; where an endpoint has no models list at all (404, 405, 501)
the model is reported unchecked, never refused for that.

Batch lists (a batch API the key reaches): OpenAI GET {base}/batches?limit=1, Anthropic GET
{base}/v1/messages/batches?limit=1, Gemini GET {base}/v1beta/batches?pageSize=1.

A model is refused when the provider does not know it (404, 410, or absent from its list),
when the provider says it has retired (OpenAI's `shutdown_date`, OpenRouter's
`expiration_date`, or a `deprecation_date`, that has come: the retirement guard's rule,
rubriclab.llm.retirement.classify), when the key is missing or refused (401, 403, Google's
API_KEY_INVALID), when its provider cannot be reached after bounded retries (once per address:
the other models at an address that could not be reached are not asked again), and, for a
model with `batch: true`, when its provider's batch API is not one this tool drives or the key
does not reach it. A date within `horizon_hours` (the run's horizon), or a model listed as
deprecated, is a warning, not a refusal. A key is never printed: the messages
quoted from a provider have it replaced (rubriclab.llm.redact).

The model layer's leaf for this: it takes model strings and their ModelSettings, and knows
nothing of the works or the pipeline's config keys.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from .backends import (PLACEHOLDER_API_KEY, api_key_to_send, endpoint_identity,
                       is_providers_endpoint, provider_key_variables)
from .redact import redact
from .retirement import RETIRED, RETIRING, classify
from .settings import BATCH_PROVIDERS, ModelSettings

OK, REFUSED, UNCHECKED = "ok", "refused", "unchecked"
UNREACHABLE, NO_KEY = "unreachable", "no key"
RETRYABLE = {408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529}
# An endpoint that has no such route (rather than no such model).
NO_ROUTE = {404, 405, 501}
# Fields of a listed model that date its end, by provider: OpenAI's Model `shutdown_date`,
# OpenRouter's `expiration_date`; `deprecation_date` as litellm's price map names it.
RETIREMENT_FIELDS = ("shutdown_date", "expiration_date", "deprecation_date", "retirement_date")
# A model whose announced end falls within this many hours is warned of (the retirement guard's
# default horizon, rubriclab.validate.DEFAULT_RETIREMENT_HORIZON_DAYS; the checks before the
# first job pass the run's own, validate.run_horizon).
DEFAULT_HORIZON_HOURS = 30 * 24.0
# The environment variables litellm reads a provider's base from where a call names none
# (api_base unset), in litellm's order (1.110.2: main.py for openai, anthropic and openrouter,
# llms/gemini/common_utils.py, llms/xai/chat/transformation.py, llms/zai/chat/transformation.py,
# litellm_core_utils/get_llm_provider_logic.py for deepseek and nebius). The model layer
# passes no api_base then (rubriclab.llm.backends), so the call goes where litellm says.
API_BASE_VARIABLES = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_API_BASE", "ANTHROPIC_BASE_URL"),
    "gemini": ("GEMINI_API_BASE",), "xai": ("XAI_API_BASE",),
    "deepseek": ("DEEPSEEK_API_BASE",), "openrouter": ("OPENROUTER_API_BASE",),
    "nebius": ("NEBIUS_API_BASE",), "zai": ("ZAI_API_BASE",),
}
DEFAULT_TIMEOUT_S = 20.0
MAX_RETRIES = 3


@dataclass(frozen=True)
class Provider:
    """Where a provider's models endpoint is and how it is asked."""

    base: str                 # litellm's own base for the provider (no api_base)
    auth: str                 # "bearer", "anthropic" or "gemini"
    models_path: str          # appended to the base
    lookup: str               # "retrieve": {models_path}/{id}; "list": {models_path}
    key_path: str | None = None    # a separate key check (a public models list)
    batch_path: str | None = None  # the batch list, where this tool drives the batch API


PROVIDERS: dict[str, Provider] = {
    "openai": Provider("https://api.openai.com/v1", "bearer", "/models", "retrieve",
                       batch_path="/batches?limit=1"),
    "anthropic": Provider("https://api.anthropic.com", "anthropic", "/v1/models", "retrieve",
                          batch_path="/v1/messages/batches?limit=1"),
    "gemini": Provider("https://generativelanguage.googleapis.com", "gemini", "/v1beta/models",
                       "retrieve", batch_path="/v1beta/batches?pageSize=1"),
    "xai": Provider("https://api.x.ai/v1", "bearer", "/models", "retrieve"),
    "deepseek": Provider("https://api.deepseek.com", "bearer", "/models", "list"),
    "openrouter": Provider("https://openrouter.ai/api/v1", "bearer", "/models", "list",
                           key_path="/key"),
    "nebius": Provider("https://api.studio.nebius.ai/v1", "bearer", "/models", "list"),
    "zai": Provider("https://api.z.ai/api/paas/v4", "bearer", "/models", "list"),
}


@dataclass(frozen=True)
class Verdict:
    """What the preflight found for one model."""

    model: str
    provider: str
    status: str               # OK, REFUSED or UNCHECKED
    reason: str               # what was checked, or why the model is refused
    fix: str = ""             # what to change, where refused
    notes: tuple[str, ...] = ()
    requests: int = 0         # GET requests made for it
    warnings: tuple[str, ...] = ()  # what may stop a long run (a retirement within its horizon)
    cause: str = ""           # UNREACHABLE or NO_KEY: a refusal a cache's answers may stand in for

    @property
    def refused(self) -> bool:
        return self.status == REFUSED

    @property
    def unreachable(self) -> bool:
        return self.cause == UNREACHABLE

    @property
    def offline(self) -> bool:
        """Refused for want of the provider (not reached) or of a key, not for its answer."""
        return self.cause in (UNREACHABLE, NO_KEY)

    def message(self) -> str:
        """Why (or what was checked), the warnings, the notes, and what to change."""
        return "; ".join([self.reason, *(f"WARNING: {w}" for w in self.warnings), *self.notes,
                          *([self.fix] if self.fix else [])])

    def line(self, where: str = "") -> str:
        """One line: model, provider, OK / REFUSED / UNCHECKED and why."""
        named = f"{self.model} ({where})" if where else self.model
        return f"{named}  [{self.provider}]  {self.status.upper()}: {self.message()}"


@dataclass
class _Reply:
    status: int | None        # None: no answer (a connection error or a timeout)
    body: Any = None
    text: str = ""
    error: str = ""


@dataclass
class _Asker:
    """GET requests with bounded retries; counts them; keeps the key out of every message."""

    key: str | None
    headers: dict[str, str]
    timeout_s: float
    sleep: Callable[[float], None]
    client: Any
    count: int = 0

    def get(self, url: str) -> _Reply:
        reply = _Reply(None)
        for attempt in range(MAX_RETRIES + 1):
            self.count += 1
            try:
                response = self.client.get(url, headers=self.headers, timeout=self.timeout_s)
            except Exception as exc:  # noqa: BLE001 - a timeout, a refused or dropped connection
                reply = _Reply(None, error=self.clean(f"{type(exc).__name__}: {exc}"))
                wait = 0.5 * 2 ** attempt
            else:
                text = self.clean(response.text)  # a server may echo the key back
                try:
                    body = json.loads(text)
                except ValueError:
                    body = None
                reply = _Reply(response.status_code, body, text[:300])
                if response.status_code not in RETRYABLE:
                    return reply
                wait = _retry_after(response.headers.get("retry-after"), 0.5 * 2 ** attempt)
            if attempt < MAX_RETRIES:
                self.sleep(wait)
        return reply

    def clean(self, text: str) -> str:
        if self.key and len(self.key) >= 4:
            text = text.replace(self.key, "[redacted]")
        return redact(text)


def _retry_after(value: str | None, default: float) -> float:
    try:
        return min(5.0, max(0.0, float(value))) if value is not None else default
    except ValueError:
        return default


def provider_of(model: str) -> str:
    return model.partition("/")[0]


def model_id(model: str) -> str:
    """The model as its provider names it: the model string without litellm's prefix."""
    return model.partition("/")[2]


def base_of(model: str, settings: ModelSettings) -> str:
    """Where the model's calls go, as litellm decides for the call the model layer makes: its
    api_base, else the provider's base variable in the environment (API_BASE_VARIABLES), else
    litellm's base for the provider."""
    provider = provider_of(model)
    spec = PROVIDERS.get(provider)
    from_environment = next((os.environ[name] for name in API_BASE_VARIABLES.get(provider, ())
                             if os.environ.get(name)), None)
    base = settings.api_base or from_environment or (spec.base if spec else "")
    return base.strip().rstrip("/")


def key_of(model: str, settings: ModelSettings) -> tuple[str | None, str]:
    """(the key a call to the model sends, where it comes from), by the model layer's one
    credential rule (backends.api_key_to_send), with the provider's own variable for the
    providers whose key the batch layer does not name (DEEPSEEK_API_KEY, ...)."""
    provider = provider_of(model)
    key = api_key_to_send(provider, settings)
    if settings.placeholder_api_key or (key == PLACEHOLDER_API_KEY and not settings.api_key_env):
        return key, "the placeholder key"
    if settings.api_key_env:
        return key, f"the environment variable {settings.api_key_env} (api_key_env)"
    names = provider_key_variables(provider)
    for name in names:
        value = os.environ.get(name)
        if value:
            return value, name
    return None, " or ".join(names)


def _headers(auth: str, key: str | None) -> dict[str, str]:
    headers = {"Accept": "application/json"}
    if auth == "anthropic":
        headers["anthropic-version"] = "2023-06-01"
        if key:
            headers["x-api-key"] = key
    elif auth == "gemini":
        if key:
            headers["x-goog-api-key"] = key
    elif key:
        headers["Authorization"] = f"Bearer {key}"
    return headers


def _message(reply: _Reply) -> str:
    """The provider's own error message, short."""
    body = reply.body
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])[:200]
        if isinstance(error, str):
            return error[:200]
        if body.get("message"):
            return str(body["message"])[:200]
    return (reply.error or reply.text or "no message")[:200]


def _key_refused(reply: _Reply) -> bool:
    """401 or 403; Google answers a key it does not know with 400 API_KEY_INVALID."""
    if reply.status in (401, 403):
        return True
    if reply.status == 400:
        found = (reply.text or "") + " " + str(reply.body)
        return "API_KEY_INVALID" in found or "API key not valid" in found
    return False


def _retirement(entry: Any, today: dt.date | None,
                horizon_hours: float) -> tuple[str | None, list[str], list[str]]:
    """(why refused, warnings, notes) from a listed model's retirement fields, by the
    retirement guard's rule (rubriclab.llm.retirement.classify): a day that has come refuses,
    one within `horizon_hours` is a warning, a later one a note."""
    if not isinstance(entry, dict):
        return None, [], []
    warnings: list[str] = []
    if entry.get("deprecated") is True:
        warnings.append("the provider lists it as deprecated (it still serves it)")
    for name in RETIREMENT_FIELDS:
        value = entry.get(name)
        if value in (None, "", 0):
            continue
        when = _date(value)
        if when is None:
            return None, warnings, [f"the provider lists {name} {value!r}"]
        status = classify(when, horizon_hours, today)
        if status == RETIRED:
            return f"the provider says it retired on {when.isoformat()} ({name})", warnings, []
        if status == RETIRING:
            warnings.append(f"the provider says it retires on {when.isoformat()} ({name}), "
                            f"within the run's horizon ({horizon_hours:,.0f} h): calls after "
                            "that day will fail")
            return None, warnings, []
        return None, warnings, [f"retires on {when.isoformat()} ({name})"]
    return None, warnings, []


def _date(value: Any) -> dt.date | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return dt.datetime.fromtimestamp(float(value), dt.timezone.utc).date()
        except (OverflowError, OSError, ValueError):
            return None
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value.strip()[:10])
        except ValueError:
            return None
    return None


def _listed(body: Any) -> list[dict]:
    """The model entries of a list: OpenAI's {"data": [...]}, Gemini's {"models": [...]}."""
    if isinstance(body, dict):
        for name in ("data", "models"):
            if isinstance(body.get(name), list):
                return [e for e in body[name] if isinstance(e, dict)]
    if isinstance(body, list):
        return [e for e in body if isinstance(e, dict)]
    return []


def _entry_id(entry: dict) -> str:
    return str(entry.get("id") or entry.get("name") or "").removeprefix("models/")


def check_model(model: str, settings: ModelSettings, *, client: Any = None,
                today: dt.date | None = None, horizon_hours: float = DEFAULT_HORIZON_HOURS,
                timeout_s: float | None = None,
                sleep: Callable[[float], None] = time.sleep) -> Verdict:
    """The preflight of one remote model with its settings: free GET requests only."""
    provider = provider_of(model)
    name = model_id(model)
    spec = PROVIDERS.get(provider)
    if spec is None or not name:
        return Verdict(model, provider, UNCHECKED,
                       f"the preflight knows no models endpoint of provider {provider!r} "
                       f"(it knows {', '.join(sorted(PROVIDERS))})")
    where = f"llm.per_model[{model!r}]"
    if settings.batch and provider not in BATCH_PROVIDERS:
        return Verdict(model, provider, REFUSED,
                       f"batch: true, but this tool drives no batch API of {provider}",
                       fix=f"remove {where}.batch (batch APIs: "
                           f"{', '.join(sorted(BATCH_PROVIDERS))})")
    key, source = key_of(model, settings)
    if key is None and settings.api_key_env:
        return Verdict(model, provider, REFUSED, f"{source} is not set",
                       fix=f"set {settings.api_key_env} before running", cause=NO_KEY)
    if key is None and settings.check_api_key:
        return Verdict(model, provider, REFUSED, f"no key: {source} is not set",
                       fix=f"set {source} (keys are read from the environment, never from "
                           "config)", cause=NO_KEY)
    base = base_of(model, settings)
    shown_base = endpoint_identity(base)
    own = is_providers_endpoint(provider, base)
    timeout = min(settings.timeout_s, DEFAULT_TIMEOUT_S) if timeout_s is None else timeout_s
    own_client = client is None
    if own_client:
        import httpx

        client = httpx.Client(follow_redirects=False)
    asker = _Asker(key, _headers(spec.auth, key), timeout, sleep, client)
    try:
        return _check(model, provider, name, spec, settings, asker, base, shown_base, own,
                      source, today, horizon_hours, where)
    finally:
        if own_client:
            client.close()


def _check(model: str, provider: str, name: str, spec: Provider, settings: ModelSettings,
           asker: _Asker, base: str, shown_base: str, own: bool, source: str,
           today: dt.date | None, horizon_hours: float, where: str) -> Verdict:
    notes: list[str] = []
    warnings: list[str] = []

    def verdict(status: str, reason: str, fix: str = "", cause: str = "") -> Verdict:
        return Verdict(model, provider, status, reason, fix, tuple(notes), asker.count,
                       tuple(warnings), cause)

    def unreachable(reply: _Reply) -> Verdict:
        what = (f"HTTP {reply.status}: {_message(reply)}" if reply.status is not None
                else reply.error)
        return verdict(REFUSED, f"{provider} could not be reached at {shown_base} after "
                                f"{MAX_RETRIES} retries ({what})",
                       f"try again later, or check {where}.api_base", UNREACHABLE)

    def key_refused(reply: _Reply) -> Verdict:
        return verdict(REFUSED, f"{provider} refused the key from {source} "
                                f"(HTTP {reply.status}: {_message(reply)})",
                       "set a valid key" if "placeholder" not in source
                       else f"say which key {shown_base} takes ({where}.api_key_env)")

    def unknown(reply: _Reply | None, listed: int | None = None) -> Verdict:
        if reply is not None:
            found = f"HTTP {reply.status}: {_message(reply)}"
        else:
            found = f"not among the {listed} models {shown_base} lists"
        return verdict(REFUSED, f"{provider} does not serve {name!r} ({found})",
                       "name a model the provider serves, in the config key that names this "
                       "one")

    entry: Any = None
    checked = ""
    if spec.lookup == "retrieve":
        url = f"{base}{spec.models_path}/{quote(name, safe='/')}"
        reply = asker.get(url)
        if reply.status == 200:
            entry, checked = reply.body, f"{provider} serves it"
        elif _key_refused(reply):
            return key_refused(reply)
        elif reply.status in (404, 410) and own:
            return unknown(reply)
        elif reply.status is None or reply.status in RETRYABLE:
            return unreachable(reply)
        elif reply.status not in NO_ROUTE:
            return verdict(REFUSED, f"{provider} answered the model lookup with HTTP "
                                    f"{reply.status} ({_message(reply)})")
    if entry is None:  # a list provider, or a server (not the provider's) without retrieve
        url = f"{base}{spec.models_path}"
        reply = asker.get(url)
        if reply.status == 200:
            listed = _listed(reply.body)
            entry = next((e for e in listed if _entry_id(e) == name), None)
            if entry is None:
                return unknown(None, len(listed))
            checked = f"{shown_base} lists it"
        elif _key_refused(reply):
            return key_refused(reply)
        elif reply.status is None or reply.status in RETRYABLE:
            return unreachable(reply)
        elif reply.status in NO_ROUTE:
            if own:
                return verdict(REFUSED, f"{provider}'s models endpoint "
                                        f"{shown_base}{spec.models_path} answered HTTP "
                                        f"{reply.status} ({_message(reply)})")
            notes.append(f"{shown_base} has no models list (HTTP {reply.status}): the model "
                         "was not looked up")
        else:
            return verdict(REFUSED, f"{provider} answered the models list with HTTP "
                                    f"{reply.status} ({_message(reply)})")
    why, warned, noted = _retirement(entry, today, horizon_hours)
    warnings += warned
    notes += noted
    if why:
        return verdict(REFUSED, why, "name a model the provider still serves, in the config "
                                     "key that names this one")
    if spec.key_path:  # the list is public: ask about the key itself
        reply = asker.get(f"{base}{spec.key_path}")
        if _key_refused(reply):
            return key_refused(reply)
        if reply.status is None or reply.status in RETRYABLE:
            return unreachable(reply)
        if reply.status == 200:
            checked += ", the key is taken"
        else:
            notes.append(f"the key check answered HTTP {reply.status}")
    elif entry is not None and asker.key is not None:
        checked += ", the key is taken"
    if settings.batch:
        refused = _check_batch(provider, spec, entry, asker, base, shown_base, where)
        if refused:
            return verdict(REFUSED, *refused)
        checked += ", its batch API answers"
    if entry is None:
        return verdict(UNCHECKED, checked or "not looked up")
    return verdict(OK, checked)


def _check_batch(provider: str, spec: Provider, entry: Any, asker: _Asker, base: str,
                 shown_base: str, where: str) -> tuple[str, str] | None:
    """(why, fix) where the model's batch API cannot be used with this key; None if it can."""
    capabilities = entry.get("capabilities") if isinstance(entry, dict) else None
    batch = capabilities.get("batch") if isinstance(capabilities, dict) else None
    if isinstance(batch, dict) and batch.get("supported") is False:
        return (f"batch: true, but {provider} says the model takes no batches "
                "(capabilities.batch.supported: false)", f"remove {where}.batch")
    if spec.batch_path is None:
        return (f"batch: true, but this tool drives no batch API of {provider}",
                f"remove {where}.batch")
    reply = asker.get(f"{base}{spec.batch_path}")
    if reply.status == 200:
        return None
    if _key_refused(reply):
        return (f"the key does not reach {provider}'s batch API at {shown_base} "
                f"(HTTP {reply.status}: {_message(reply)})",
                f"use a key allowed to batch, or remove {where}.batch")
    what = (f"HTTP {reply.status}: {_message(reply)}" if reply.status is not None
            else reply.error)
    return (f"{provider}'s batch API at {shown_base} does not answer ({what})",
            f"remove {where}.batch, or point {where}.api_base at a server with the batch API")


def preflight(models: Mapping[str, ModelSettings] | Iterable[tuple[str, ModelSettings]], *,
              client: Any = None, today: dt.date | None = None,
              horizon_hours: float = DEFAULT_HORIZON_HOURS, timeout_s: float | None = None,
              sleep: Callable[[float], None] = time.sleep) -> list[Verdict]:
    """The preflight of each model (fake/ and local/ ones are not remote: none is asked). An
    address that could not be reached (after its bounded retries) is not asked again: the
    other models sent there are refused with the same reason, without a request, so an
    unreachable provider costs one model's retries, not every model's."""
    items = models.items() if isinstance(models, Mapping) else models
    shared = client
    if shared is None:
        import httpx

        shared = httpx.Client(follow_redirects=False)
    unreached: dict[str, Verdict] = {}  # by base: the verdict of the first model not reaching it
    verdicts: list[Verdict] = []
    try:
        for model, settings in items:
            if provider_of(model) in ("fake", "local"):
                continue
            base = base_of(model, settings)
            first = unreached.get(base)
            if first is not None:
                verdicts.append(Verdict(
                    model, provider_of(model), REFUSED,
                    f"{first.reason} (not asked again: {first.model!r} is at the same address)",
                    first.fix.replace(f"llm.per_model[{first.model!r}]",
                                      f"llm.per_model[{model!r}]"), cause=UNREACHABLE))
                continue
            verdict = check_model(model, settings, client=shared, today=today,
                                  horizon_hours=horizon_hours, timeout_s=timeout_s, sleep=sleep)
            if verdict.unreachable:
                unreached[base] = verdict
            verdicts.append(verdict)
        return verdicts
    finally:
        if client is None:
            shared.close()
