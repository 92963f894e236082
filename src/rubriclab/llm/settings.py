"""How to call each model: settings that never change an answer, so never enter the cache key
(except `reasoning_tokens`, which LLMClient writes into each request), and the settings of each
role (`RoleSettings`), which LLMClient writes into the requests of that role."""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields, replace
from datetime import date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .providers import provider_for

DEFAULT_CACHE_DIR = Path(".cache/rubriclab")
# A cache named by one of these URLs lives on a PostgreSQL server (rubriclab.llm.cache_pg)
# instead of in a SQLite file in the cache folder.
CACHE_URL_SCHEMES = ("postgresql://", "postgres://")


def is_cache_url(value: object) -> bool:
    """Whether a cache location (RUBRICLAB_CACHE, `cache_dir`, `llm.cache_url`) is a
    PostgreSQL URL rather than a folder."""
    return isinstance(value, str) and value.startswith(CACHE_URL_SCHEMES)


def shown_url(url: str) -> str:
    """A cache URL as it may be written to a log or an error: without its password."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return parts._replace(netloc=f"{user}@{netloc[-1]}").geturl()


# How long a PostgreSQL cache whose server went away keeps reconnecting (llm.cache_reconnect_s).
CACHE_RECONNECT_S = 60.0
# Providers whose batch API rubriclab.llm.batch drives: OpenAI and Gemini (AI Studio) through
# litellm, Anthropic's Message Batches through the anthropic SDK.
BATCH_PROVIDERS = frozenset({"openai", "gemini", "anthropic"})
BATCH_FALLBACKS = ("call", "fail")


@dataclass(frozen=True)
class ModelPrice:
    """A model's price in US dollars per million tokens (`llm.per_model.<model>.price`); it
    replaces litellm's price map for that model everywhere: the plan, batch answers, ordinary
    calls (rubriclab.llm.pricing reads it).

    Where a rate is not given: a batch is half the standard rate for providers whose batch API
    is documented at half price (rubriclab.llm.pricing.HALF_PRICE_BATCH_PROVIDERS), else its
    price is unknown; a prompt token read from the provider's cache costs the input rate (the
    most any provider bills for one, so a bill is never understated), and one written to it
    makes the call's price unknown (Anthropic bills writes above the input rate).
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    batch_input: float | None = None
    batch_output: float | None = None

    @classmethod
    def from_dict(cls, values: Any, where: str) -> ModelPrice:
        if not isinstance(values, dict):
            raise ValueError(f"{where}: a price is a mapping of US dollars per million tokens "
                             f"(input, output, ...), got {values!r}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"{where}: unknown price key(s) {unknown}; known: {known}")
        missing = [k for k in ("input", "output") if values.get(k) is None]
        if missing:
            raise ValueError(f"{where}: {' and '.join(missing)} must be given (US dollars per "
                             "million tokens)")
        for key, value in values.items():
            if value is None and key not in ("input", "output"):
                continue
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not math.isfinite(value) or value < 0):
                raise ValueError(f"{where}.{key}: a price is a number >= 0 of US dollars per "
                                 f"million tokens, got {value!r}")
        prices: dict[str, Any] = {k: None if v is None else float(v) for k, v in values.items()}
        return cls(**prices)


@dataclass(frozen=True)
class ModelSettings:
    concurrency: int = 4
    # Shared by every job of the run: requests and tokens (prompt + completion) per minute for
    # this model at the provider; None: no limit.
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    # For providers that count input and output apart (the schema says which): prompt tokens a
    # minute (Anthropic's ITPM counts uncached input only: cache reads are free of it) and
    # completion tokens a minute (OTPM); None: no such limit.
    input_tokens_per_minute: float | None = None
    output_tokens_per_minute: float | None = None
    timeout_s: float = 120.0
    num_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0
    max_reasks: int = 2
    # Everything one request may take: every attempt, wait, re-ask and doubling. An attempt's
    # timeout is cut to what is left, and no retry starts past it.
    deadline_s: float = 300.0
    # A batch stops asking a model after this many requests in a row failed in the same way
    # (after their own retries), and says which; the rest are reported as not attempted.
    max_consecutive_failures: int = 5
    # A job stops asking a model once this many of its answers in a row were unusable (never
    # in the format after every re-ask, or cut off at every budget), or once it has at least
    # `unusable_min_answers` answers of the model and more than `max_unusable_share` of them
    # are unusable (1.0: never by share); the job then fails, saying which, with an example.
    max_unusable_in_a_row: int = 10
    max_unusable_share: float = 0.5
    unusable_min_answers: int = 10
    # Endpoint of an OpenAI-compatible server (vLLM, Ollama, a proxy). The model string names
    # the model, the endpoint is part of its identity (its cache keys), unless `fingerprint`
    # is declared.
    api_base: str | None = None
    check_api_key: bool = True
    # For a server that needs no key: a placeholder is sent as the key (never the
    # environment's real one) and no key is checked.
    placeholder_api_key: bool = False
    # The environment variable whose value is sent as this model's key (to its api_base, or
    # to its provider). An api_base that is not the provider's own API is never sent the
    # provider's key from the environment: it gets this variable's value, else the
    # placeholder (and a pipeline config must say which: rubriclab.validate.endpoint_problems).
    api_key_env: str | None = None
    # Part of the cache key: e.g. a model revision, so that new weights are new entries. For a
    # remote model it takes the endpoint's place (declare it to keep entries when the server
    # moves, or when one endpoint can serve different weights).
    fingerprint: str = ""
    # Threads for an in-process llama.cpp model.
    n_threads: int | None = None
    n_ctx: int = 4096
    # Room for a reasoning model's thinking, sent on top of every answer budget (max_tokens) of
    # this model. It changes the request, so LLMClient writes it into the request (and its key).
    reasoning_tokens: int = 0
    # An answer cut off by its budget (finish_reason "length") is asked again with twice the
    # budget, at most this many times, then counted as failed; it is never parsed.
    budget_doublings: int = 2
    # Cache misses of this model go to the provider's batch API (half price, answers within the
    # provider's 24-hour window); only for the providers of BATCH_PROVIDERS. The batch is
    # polled every `batch_poll_s` for at most `batch_max_wait_s` per run; a batch still
    # running then stays stored and a rerun collects it. Requests a failed or expired batch
    # did not answer are asked as ordinary calls (`batch_fallback: call`; cached only if they
    # parse) or counted as failed (`fail`).
    batch: bool = False
    batch_poll_s: float = 60.0
    batch_max_wait_s: float = 26 * 3600.0
    batch_fallback: str = "call"
    # Mark the prefix a request shares with others of its batch cacheable where the provider
    # caches only what is marked (Anthropic); transport only, never part of the key.
    prompt_cache: bool = True
    # US dollars per million tokens, over litellm's price map (ModelPrice); per model only.
    price: ModelPrice | None = None
    # The day the provider stops serving the model, over litellm's map (`deprecation_date`);
    # per model only (rubriclab.llm.retirement).
    retires: date | None = None


class BatchNotSupported(ValueError):
    pass


def check_unusable_settings(settings: ModelSettings, where: str) -> None:
    """Refuse, naming the setting, limits of unusable answers that cannot work."""
    for name in ("max_unusable_in_a_row", "unusable_min_answers"):
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{where}.{name}: a whole number of answers >= 1, got {value!r}")
    share = settings.max_unusable_share
    if (isinstance(share, bool) or not isinstance(share, (int, float)) or math.isnan(share)
            or not 0 <= share <= 1):
        raise ValueError(f"{where}.max_unusable_share: a share from 0 to 1 (1: no limit by "
                         f"share), got {share!r}")


def check_batch_settings(model: str, settings: ModelSettings, where: str) -> None:
    """Refuse, naming the setting, batch settings that cannot work; before any call."""
    if settings.batch_fallback not in BATCH_FALLBACKS:
        raise ValueError(f"{where}: batch_fallback must be one of {list(BATCH_FALLBACKS)}, got "
                         f"{settings.batch_fallback!r}")
    if settings.batch_poll_s <= 0 or settings.batch_max_wait_s <= 0:
        raise ValueError(f"{where}: batch_poll_s and batch_max_wait_s must be > 0, got "
                         f"{settings.batch_poll_s} and {settings.batch_max_wait_s}")
    provider = model.split("/", 1)[0] if "/" in model else ""
    if settings.batch and provider not in BATCH_PROVIDERS:
        raise BatchNotSupported(
            f"{where}: batch: true, but model {model!r} is not of a provider with a batch API "
            f"this tool drives ({', '.join(f'{p}/' for p in sorted(BATCH_PROVIDERS))} models); "
            "remove batch for this model")


def check_api_base(value: Any, where: str) -> None:
    """Refuse, naming the setting, an endpoint that is not an http(s) URL with a host (for
    example "localhost:8000/v1", which litellm would send as a path of the provider's own
    endpoint, or "http:/127.0.0.1"): before any call, not once per request."""
    if value is None:
        return
    problem = ""
    if not isinstance(value, str) or not value.strip():
        problem = "it is not a URL"
    elif any(c.isspace() for c in value.strip()):
        problem = "it holds whitespace"
    else:
        parts = urlsplit(value.strip())
        try:
            parts.port  # noqa: B018 - raises ValueError on a port that is not a number
        except ValueError:
            problem = "its port is not a number from 0 to 65535"
        if parts.scheme.lower() not in ("http", "https"):
            problem = problem or "it does not start with http:// or https://"
        elif not parts.hostname:
            problem = problem or "it names no host"
    if problem:
        shown = _without_credentials(str(value))
        raise ValueError(f"{where}.api_base: {shown!r} is not an http(s) URL with a host "
                         f"({problem}); write the server's address in full, e.g. "
                         "http://127.0.0.1:8000/v1")


_VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_api_key_env(value: Any, where: str) -> None:
    """Refuse an `api_key_env` that is not the name of an environment variable (a key
    pasted in its place, above all: keys are read from the environment, never from config)."""
    if value is None:
        return
    if not isinstance(value, str) or not _VARIABLE_NAME.fullmatch(value):
        shown = "a value that is not a variable name" if isinstance(value, str) else repr(value)
        raise ValueError(f"{where}.api_key_env: the name of the environment variable that holds "
                         f"the key (e.g. VLLM_API_KEY), got {shown}; keys are read from the "
                         "environment, never from config")


def _without_credentials(url: str) -> str:
    """`url` with whatever precedes an "@" in its host part (a user name and password) hidden."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "***@" + authority.rpartition("@")[2]
    return (scheme + sep if sep else "") + authority + slash + path


@dataclass(frozen=True)
class RoleSettings:
    """What a role (judge, reviser, ...) asks of a model besides its prompt: part of the key,
    except `batch`, which is transport only."""

    reasoning_effort: str | None = None
    # False: this role's requests are never sent to a batch, whatever its model's `batch`
    # (a revision chain, each of whose rounds would wait on a batch of its own); None: the
    # model's own setting.
    batch: bool | None = None


def _role_settings(values: dict[str, Any], where: str) -> RoleSettings:
    known = {f.name for f in fields(RoleSettings)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"{where}: unknown role setting(s) {sorted(unknown)}; known: "
                         f"{sorted(known)}")
    if values.get("batch") not in (False, None):
        raise ValueError(f"{where}: batch is false (never batch this role's requests) or null "
                         f"(the model's own llm.per_model.<model>.batch), got {values['batch']!r}")
    return RoleSettings(**values)


@dataclass(frozen=True)
class LLMConfig:
    cache_dir: Path = DEFAULT_CACHE_DIR
    # A postgresql:// URL: the answers, claims, batch store and ledger rows live on that server
    # (shared by every host of a run); None: in SQLite files in `cache_dir`. The folder then
    # still holds what stays per host (`local_dir`) and the assembled models.
    cache_url: str | None = None
    defaults: ModelSettings = field(default_factory=ModelSettings)
    per_model: dict[str, ModelSettings] = field(default_factory=dict)
    progress_interval_s: float = 5.0
    # Where assembled GGUF files live; default <cache_dir>/models (RUBRICLAB_MODELS_DIR overrides).
    models_dir_override: Path | None = None
    # role -> model (None: every model of the role) -> its settings.
    roles: dict[str, dict[str | None, RoleSettings]] = field(default_factory=dict)
    # The most the run's paid calls may cost together, in dollars (None: no limit): counted
    # across every job of the run in its spend record (rubriclab.llm.budget).
    budget_usd: float | None = None
    # No paid call starts while the cache's or the ledger's folder has less free space than
    # this, in MiB (0: never checked), so that every answer paid for can be stored.
    min_free_disk_mb: float = 100.0
    # Whether answers of `fake/` models go into the call cache. They are deterministic and free,
    # so a run has no need of them there (at paper scale they filled 1.7 GB): the pipeline's
    # config says false (llm.cache_fake_answers). The model layer's own default keeps them, for
    # the tests that use a fake model as the stand-in for a paid one (resume, claims, keys).
    cache_fake_answers: bool = True
    # Whether the checks before a run's first job look up each remote model of the jobs about
    # to run on its provider's models endpoint, for free (rubriclab.llm.preflight).
    preflight: bool = True
    # On SIGINT or SIGTERM a job sends no new request and waits this long, in seconds, for the
    # calls in flight to be answered and stored (rubriclab.llm.stopping).
    stop_grace_s: float = 30.0
    # How long, in seconds, a PostgreSQL cache that lost its server (a restart, a cut network)
    # keeps reconnecting, with backoff, before a claim or read gives up with CacheUnavailable
    # (rubriclab.llm.cache_pg). Answers stay journaled meanwhile.
    cache_reconnect_s: float = CACHE_RECONNECT_S

    def caches(self, model: str) -> bool:
        """Whether a model's answers are cached (every model's but fakes', unless asked)."""
        return self.cache_fake_answers or provider_for(model).durable

    @property
    def cache_path(self) -> Path:
        return self.cache_dir / "llm_cache.sqlite"

    @property
    def local_dir(self) -> Path:
        """The folder of what stays on this host: the answer journals (locked with flock, taken
        over by a later process of the same host), the rate-limit schedule and the embedding
        cache. The cache folder itself with SQLite; with a PostgreSQL cache, a folder per host
        inside it, so that hosts sharing the folder over a network filesystem never lock or
        take over each other's files."""
        if self.cache_url is None:
            return self.cache_dir
        import socket

        return self.cache_dir / "hosts" / socket.gethostname()

    @property
    def cache_location(self) -> str:
        """The cache as named in messages: its URL without password, or its file."""
        return shown_url(self.cache_url) if self.cache_url else str(self.cache_path)

    @property
    def models_dir(self) -> Path:
        env = os.environ.get("RUBRICLAB_MODELS_DIR")
        if env:
            return Path(env)
        return self.models_dir_override or self.cache_dir / "models"

    def settings_for(self, model: str) -> ModelSettings:
        return self.per_model.get(model, self.defaults)

    def batch_for(self, model: str, role: str | None) -> bool:
        """Whether a request of this role to this model goes to the provider's batch API."""
        return (self.settings_for(model).batch
                and self.role_settings_for(role, model).batch is not False)

    def role_settings_for(self, role: str | None, model: str) -> RoleSettings:
        by_model = self.roles.get(role or "", {})
        return by_model.get(model) or by_model.get(None) or RoleSettings()

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None, cache_dir: str | Path | None = None) -> LLMConfig:
        """Build from the `llm:` block of the pipeline config.

        The cache is, in order: RUBRICLAB_CACHE, `cache_dir` given here, `llm.cache_url`,
        `llm.cache_dir`, then `.cache/rubriclab` (relative to the working directory). Each may
        be a folder (SQLite files in it) or a postgresql:// URL (the cache on that server, with
        the first folder among the others, else `.cache/rubriclab`, for what stays per host).
        """
        raw = dict(raw or {})
        known = {f.name for f in fields(ModelSettings)}

        def settings(base: ModelSettings, values: dict[str, Any], where: str) -> ModelSettings:
            unknown = set(values) - known
            if unknown:
                raise ValueError(f"{where}: unknown model setting(s) {sorted(unknown)}")
            check_api_base(values.get("api_base"), where)
            check_api_key_env(values.get("api_key_env"), where)
            if values.get("price") is not None:
                values = {**values, "price": ModelPrice.from_dict(values["price"],
                                                                  f"{where}.price")}
            if values.get("retires") is not None:
                values = {**values, "retires": _retires(values["retires"], f"{where}.retires")}
            return replace(base, **values)

        if (raw.get("defaults") or {}).get("price") is not None:
            raise ValueError("llm.defaults: price is set per model (llm.per_model.<model>."
                             "price), in US dollars per million tokens")
        if (raw.get("defaults") or {}).get("retires") is not None:
            raise ValueError("llm.defaults: retires is set per model (llm.per_model.<model>."
                             "retires), as the day its provider stops serving it")
        defaults = settings(ModelSettings(), raw.get("defaults") or {}, "llm.defaults")
        check_unusable_settings(defaults, "llm.defaults")
        if defaults.batch:
            raise ValueError("llm.defaults: batch: true is set per model (llm.per_model.<model>."
                             "batch), for models whose provider has a batch API")
        per_model = {
            model: settings(defaults, values or {}, f"llm.per_model[{model!r}]")
            for model, values in (raw.get("per_model") or {}).items()
        }
        for model, model_settings in per_model.items():
            check_batch_settings(model, model_settings, f"llm.per_model[{model!r}]")
            check_unusable_settings(model_settings, f"llm.per_model[{model!r}]")
        roles: dict[str, dict[str | None, RoleSettings]] = {}
        for role, values in (raw.get("roles") or {}).items():
            values = dict(values or {})
            models = values.pop("per_model", None) or {}
            base = _role_settings(values, f"llm.roles.{role}")
            roles[role] = {None: base}
            for model, own in models.items():
                roles[role][model] = _role_settings({**vars(base), **(own or {})},
                                                    f"llm.roles.{role}.per_model[{model!r}]")
        url = raw.get("cache_url")
        if url is not None and not is_cache_url(url):
            raise ValueError(f"llm.cache_url: expected a postgresql:// URL (or null: the SQLite "
                             f"cache in cache_dir), got {shown_url(str(url))!r}")
        named = [os.environ.get("RUBRICLAB_CACHE") or None, cache_dir or None, url,
                 raw.get("cache_dir") or None]
        chosen = next((n for n in named if n), None)
        folder = next((n for n in named if n and not is_cache_url(n)), None)
        return cls(
            cache_dir=Path(folder) if folder else DEFAULT_CACHE_DIR,
            cache_url=str(chosen) if is_cache_url(chosen) else None,
            defaults=defaults,
            per_model=per_model,
            progress_interval_s=float(raw.get("progress_interval_s", 5.0)),
            roles=roles,
            budget_usd=_budget(raw.get("budget_usd")),
            min_free_disk_mb=_min_free(raw.get("min_free_disk_mb", 100.0)),
            cache_fake_answers=_flag(raw.get("cache_fake_answers", True),
                                     "llm.cache_fake_answers"),
            preflight=_flag(raw.get("preflight", True), "llm.preflight"),
            stop_grace_s=_grace(raw.get("stop_grace_s", 30.0)),
            cache_reconnect_s=_reconnect(raw.get("cache_reconnect_s", CACHE_RECONNECT_S)),
        )


def _flag(value: Any, key: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{key}: expected true or false, got {value!r}")
    return value


def _retires(value: Any, key: str) -> date:
    """A retirement day from config: YAML reads an unquoted 2026-12-01 as a date, a quoted one
    (or --config) as a string."""
    if isinstance(value, datetime):
        return value.date()
    if isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{key}: expected a date as YYYY-MM-DD (the day the provider stops serving "
                     f"the model), got {value!r}")


def _min_free(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"llm.min_free_disk_mb: expected a number of MiB >= 0 (0: no check), "
                         f"got {value!r}")
    return float(value)


def _grace(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"llm.stop_grace_s: expected a number of seconds >= 0 (0: the calls "
                         f"in flight are ended at once), got {value!r}")
    return float(value)


def _reconnect(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ValueError(f"llm.cache_reconnect_s: expected a number of seconds >= 0 (0: a lost "
                         f"cache server fails the job at once), got {value!r}")
    return float(value)


def _budget(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"llm.budget_usd: expected a number of dollars above 0 (or null: no "
                         f"budget), got {value!r}")
    return float(value)
