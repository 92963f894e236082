"""Checks made before the first job, each problem on one line naming the config key.

- The config against its schema (--config strings coerced, unknown keys named):
  rubriclab.config_schema.
- `model_problems`: every model string the config names has a provider litellm knows
  (`fake/` and `local/` are rubriclab's own); checked at parse time, so a dry run catches it.
- `stand_in_problems`: a `stand_ins` key that is not a model the config names (parse time).
- `budget_problems`: under llm.budget_usd, the models of the jobs about to run that have no
  known price, so the budget could not count their calls; checked when the run starts.
- `endpoint_problems`: a remote model at an `api_base` that is not its provider's own API,
  with neither `api_key_env` nor `placeholder_api_key`: the provider's key in the environment
  is never sent there, so the config says which key it gets (parse time).
- `retirement_problems`: the models of the jobs about to run whose provider no longer serves
  them (rubriclab.llm.retirement: config's `retires`, else litellm's map), and, as warnings,
  those retiring before the run may end (the plan's worst-case hours, else 30 days); checked
  when the run starts.
- `missing_keys`: remote models of the jobs about to run whose API key is not in the
  environment and of which the cache holds no answer (so the run could not get far); checked
  when the run starts, by the model layer's own credential rule (`Backends.missing_api_keys`).
- `reasoning_effort_problem`: a role's reasoning_effort for a model that takes none (litellm
  would refuse each request of it); checked as each model rule's call settings are computed,
  so a dry run catches it.
- `cache_dir_problems`: the model-call cache folder cannot be written; checked when the run
  starts.
- `preflight_problems`: remote models of the jobs about to run that their provider does not
  serve (unknown, retired), whose key it refuses, or whose batch API the key does not reach,
  by a free lookup on each provider's models endpoint (rubriclab.llm.preflight; llm.preflight
  turns it off); checked when the run starts, after the keys.
- `mirror_problems`: data_mirror names no folder (parse time); `fetch_problems`: a raw file
  about to be fetched that the mirror lacks (or that needs one); checked when the run starts.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import Any

from .config import ConfigError, config_digest
from .config_schema import coerce_command_line, unknown_keys

OWN_PROVIDERS = ("fake", "local")


def configured_models(config: Mapping[str, Any]) -> dict[str, str]:
    """Every chat model string the config names -> the first config key naming it."""
    named: dict[str, str] = {}

    def add(model: Any, key: str) -> None:
        if isinstance(model, str) and model:
            named.setdefault(model, key)

    models = config.get("models") or {}
    for role in ("judge", "agent", "generator", "reviser"):
        add(models.get(role), f"models.{role}")
    for i, model in enumerate(models.get("revisers") or []):
        add(model, f"models.revisers[{i}]")
    for i, model in enumerate((config.get("carry") or {}).get("judges") or []):
        add(model, f"carry.judges[{i}]")
    transfer = config.get("transfer") or {}
    for role in ("judge", "restater", "matcher", "response_model", "degrader"):
        add(transfer.get(role), f"transfer.{role}")
    for listed in ("generators", "it_response_models", "degradation_models"):
        for i, model in enumerate(transfer.get(listed) or []):
            add(model, f"transfer.{listed}[{i}]")
    for i, entry in enumerate(transfer.get("panel") or []):
        if isinstance(entry, str):
            add(entry.partition("@")[0], f"transfer.panel[{i}]")
    return named


def stand_in_problems(config: Mapping[str, Any]) -> list[str]:
    """One line per `stand_ins` key that is not a model the config names (configured_models):
    its "(stand-in for ...)" would show nowhere, so it is a typo or a model since replaced."""
    named = configured_models(config)
    return [f"config key 'stand_ins.{model}': {model!r} is not a model this config runs "
            f"(a stand-in is one of its model strings, written as models, carry.judges or "
            f"transfer name it)"
            for model in (config.get("stand_ins") or {}) if model not in named]


def provider_list() -> list[str]:
    from .llm.litellm_import import import_litellm

    return [str(getattr(p, "value", p)) for p in import_litellm().provider_list]


def model_problems(models: Mapping[str, str],
                   providers: Callable[[], Iterable[str]] = provider_list) -> list[str]:
    """One line per model string whose provider is unknown. litellm is imported (seconds) only
    when some model is neither fake/ nor local/."""
    problems: list[str] = []
    known: list[str] | None = None
    for model, key in models.items():
        provider, slash, name = model.partition("/")
        if not slash or not provider or not name:
            problems.append(f"config key '{key}': model {model!r} has no provider prefix; write "
                            "provider/model as litellm names it (e.g. openai/gpt-4o), "
                            "local/<gguf> or fake/<kind>")
            continue
        if provider == "fake":
            from .llm.fake import parse_fake_model

            try:
                parse_fake_model(model)
            except ValueError as exc:
                problems.append(f"config key '{key}': {exc}")
            continue
        if provider in OWN_PROVIDERS:
            continue
        if known is None:
            known = sorted(providers())
        if provider not in known:
            close = difflib.get_close_matches(provider, known, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}/{name}'?" if close else ""
            problems.append(f"config key '{key}': model {model!r}: litellm knows no provider "
                            f"{provider!r}{hint}")
    return problems


def endpoint_problems(config: Mapping[str, Any]) -> list[str]:
    """One line per remote model (named by the config, or in llm.per_model) whose `api_base`
    is not its provider's own API and names neither `api_key_env` nor `placeholder_api_key`
    (`rubriclab.llm.backends.endpoint_key_problem`)."""
    from .llm.backends import endpoint_key_problem
    from .llm.settings import LLMConfig

    raw = config.get("llm") or {}
    llm = LLMConfig.from_dict(raw, cache_dir=config.get("cache_dir"))
    models = [*(raw.get("per_model") or {}), *configured_models(config)]
    problems: list[str] = []
    for model in dict.fromkeys(models):
        where = f"llm.per_model[{model!r}]" if model in llm.per_model else "llm.defaults"
        problem = endpoint_key_problem(model, llm.settings_for(model), where)
        if problem and problem not in problems:
            problems.append(problem)
    return problems


def missing_keys(models: Mapping[str, str], missing_variables: Callable[[str], list[str]],
                 cached_models: Iterable[str]) -> tuple[list[str], list[str]]:
    """(errors, warnings) for remote models without their API key in the environment.

    A model none of whose answers is in the cache cannot get far without its key: an error
    now. One with cached answers may be served entirely from the cache: a warning now; a job
    that still needs a call of it stops naming the variable before its first call.
    """
    cached = set(cached_models)
    errors: list[str] = []
    warnings: list[str] = []
    for model, key in models.items():
        if model.partition("/")[0] in OWN_PROVIDERS:
            continue
        missing = missing_variables(model)
        if not missing:
            continue
        variables = ", ".join(missing)
        if model in cached:
            warnings.append(f"model {model!r} ({key}) has no {variables} in the environment; "
                            "the cache holds answers of it, so only jobs needing new calls "
                            "will stop")
        else:
            errors.append(f"model {model!r} ({key}) needs {variables} in the environment, and "
                          "the cache holds no answer of it")
    return errors, warnings


def models_in(values: Iterable[Any], models: Mapping[str, str]) -> dict[str, str]:
    """The models among `models` that `values` (jobs' params, nested) name: a job's params
    name every model it calls (a responder as "model|k")."""
    found: dict[str, str] = {}

    def walk(value: Any) -> None:
        if isinstance(value, str):
            model = value if value in models else value.rpartition("|")[0]
            if model in models:
                found[model] = models[model]
        elif isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)

    walk(list(values))
    return {model: models[model] for model in models if model in found}


def key_problems(config: Mapping[str, Any],
                 job_params: Iterable[Any] | None = None) -> tuple[list[str], list[str]]:
    """`missing_keys` for the remote models of a validated pipeline config (only those the
    jobs about to run name in their params, when `job_params` is given), asking litellm which
    variables each needs (none where llm.per_model sets check_api_key: false or
    placeholder_api_key: true, as the model layer decides) and the cache which models it holds
    answers of (read only; a missing cache holds none)."""
    from .llm.backends import Backends
    from .llm.settings import LLMConfig

    remote = remote_models(config, job_params)
    if not remote:
        return [], []
    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    return missing_keys(remote, Backends(llm).missing_api_keys, _models_with_answers(llm))


def remote_models(config: Mapping[str, Any],
                  job_params: Iterable[Any] | None = None) -> dict[str, str]:
    """The remote models (neither fake/ nor local/) of a validated config, each with the config
    key naming it: only those the jobs about to run name in their params, when `job_params` is
    given."""
    return {m: k for m, k in job_models(config, job_params).items()
            if m.partition("/")[0] not in OWN_PROVIDERS}


def job_models(config: Mapping[str, Any],
               job_params: Iterable[Any] | None = None) -> dict[str, str]:
    """The models of a validated config, each with the config key naming it: only those the
    jobs about to run name in their params, when `job_params` is given."""
    models = configured_models(config)
    return models if job_params is None else models_in(job_params, models)


def budget_problems(config: Mapping[str, Any],
                    job_params: Iterable[Any] | None = None) -> list[str]:
    """Under a budget (llm.budget_usd), the models of the jobs about to run whose calls it
    cannot count, for want of a price (configured or in litellm's map) or of a cache-write
    price: the client's own test (rubriclab.llm.budget.guard_problem)."""
    budget = (config.get("llm") or {}).get("budget_usd")
    if budget is None:
        return []
    from .llm.budget import unguarded_message, unguarded_models
    from .llm.settings import LLMConfig

    models = job_models(config, job_params)
    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    settings = {m: llm.settings_for(m) for m in models}
    unguarded = unguarded_models(budget, models, settings=settings)
    return [f"{unguarded_message(budget, [m], settings)} ({models[m]})" for m in unguarded]


# A model retiring within this many days is warned of when no plan of the config
# (results/plan/plan.json, `rubriclab plan`) says how long the run may take.
DEFAULT_RETIREMENT_HORIZON_DAYS = 30
PLAN_JSON = Path("results/plan/plan.json")


def run_horizon(config: Mapping[str, Any], plan: Path = PLAN_JSON) -> tuple[float, str]:
    """(hours the run may take at worst, the words saying where that figure comes from): the
    `worst_case_hours` of the plan in the working directory when it is this config's plan,
    else DEFAULT_RETIREMENT_HORIZON_DAYS."""
    import json

    try:
        written = json.loads(plan.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        written = {}
    hours = written.get("worst_case_hours") if isinstance(written, dict) else None
    if (isinstance(hours, (int, float)) and not isinstance(hours, bool) and hours >= 0
            and written.get("config_digest") == config_digest(dict(config))):
        return float(hours), f"the run's worst case of {hours:,.0f} h ({plan})"
    return (DEFAULT_RETIREMENT_HORIZON_DAYS * 24.0,
            f"{DEFAULT_RETIREMENT_HORIZON_DAYS} days (the default horizon: no plan of this "
            f"config at {plan} gives the run's worst-case hours; `rubriclab plan` writes one)")


def retirement_problems(config: Mapping[str, Any], job_params: Iterable[Any] | None = None,
                        today: date | None = None,
                        plan: Path = PLAN_JSON) -> tuple[list[str], list[str]]:
    """(errors, warnings) for the models of the jobs about to run: one whose retirement day
    (rubriclab.llm.retirement) has come is an error; one retiring before the run may end
    (`run_horizon`) a warning."""
    from .llm.retirement import RETIRED, RETIRING, classify, retirement_date, retires_key
    from .llm.retirement import source_text
    from .llm.settings import LLMConfig

    models = job_models(config, job_params)
    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    dated = {m: retirement_date(m, llm.settings_for(m).retires) for m in models}
    if not any(day for day, _ in dated.values()):
        return [], []
    hours, horizon = run_horizon(config, plan)
    errors: list[str] = []
    warnings: list[str] = []
    for model, (day, source) in dated.items():
        key, status = models[model], classify(day, hours, today)
        if status == RETIRED:
            errors.append(f"model {model!r} ({key}) retired on {day} ({source_text(model, source)})"
                          f"; name a model its provider still serves in {key}, or, if the "
                          f"provider still serves it, set {retires_key(model)} to a later day")
        elif status == RETIRING:
            warnings.append(f"model {model!r} ({key}) retires on {day} "
                            f"({source_text(model, source)}), within {horizon}; calls after "
                            f"that day will fail: name another model in {key}, or set "
                            f"{retires_key(model)} if the provider serves it longer")
    return errors, warnings


def reasoning_effort_problem(llm: Any, role: str, model: str) -> str | None:
    """A line naming the config key when the reasoning effort `llm` (an LLMConfig) gives `role`
    for `model` is one the model does not take (rubriclab.llm.capabilities asks litellm)."""
    effort = llm.role_settings_for(role, model).reasoning_effort
    if effort is None:
        return None
    from .llm.capabilities import reasoning_effort_refusal

    why = reasoning_effort_refusal(model)
    if why is None:
        return None
    own = f"llm.roles.{role}.per_model[{model!r}].reasoning_effort"
    if model in llm.roles.get(role, {}):
        key, fix = own, "set it to null (the model's default) or remove it"
    else:
        key, fix = (f"llm.roles.{role}.reasoning_effort",
                    f"set {own}: null for this model, or give the role no effort")
    return f"config key '{key}' ({effort!r}) for model {model!r}: {why}; {fix}"


def check_call_settings(llm: Any, role: str, model: str) -> None:
    """Raise ConfigError when what `role` asks of `model` is something the model cannot take:
    what common.smk's call_settings checks for each model rule, before any job runs."""
    problem = reasoning_effort_problem(llm, role, model)
    raise_if([problem] if problem else [], "a setting the model cannot take")


def cache_dir_problems(config: Mapping[str, Any]) -> list[str]:
    """The model-call cache folder (RUBRICLAB_CACHE, else cache_dir, else .cache/rubriclab)
    made if missing and written to once (a file created and removed), as the first call's
    answer would be; a line naming the setting when that fails."""
    import os
    import tempfile

    from .llm.settings import LLMConfig

    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    if llm.cache_url:
        from .llm.cache_records import CacheUnavailable
        from .llm.pg_connection import connect

        try:
            connect(llm.cache_url).close()
        except CacheUnavailable as exc:  # naming the server, without its password
            return [f"the model-call cache: {exc}; start the server, or name another cache "
                    "(RUBRICLAB_CACHE, cache_dir or llm.cache_url)"]
        named = "the folder of what stays per host (cache_dir, else .cache/rubriclab)"
    elif os.environ.get("RUBRICLAB_CACHE"):
        named = "the environment variable RUBRICLAB_CACHE"
    elif config.get("cache_dir"):
        named = "config key 'cache_dir'"
    else:
        named = "the default cache folder (config key 'cache_dir' unset)"
    folder = llm.cache_dir
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".write-check-")
        os.close(handle)
        os.unlink(probe)
        if llm.cache_url is None and llm.cache_path.exists():
            with open(llm.cache_path, "r+b"):
                pass
    except OSError as exc:
        return [f"{named}: the model-call cache folder {folder} cannot be written "
                f"({exc.strerror or exc}); name a writable folder (cache_dir, or "
                "RUBRICLAB_CACHE), or make this one writable"]
    return []


def mirror_problems(config: Mapping[str, Any]) -> list[str]:
    """A data mirror that is set but is not a folder."""
    from pathlib import Path

    mirror = config.get("data_mirror")
    if not mirror or Path(mirror).is_dir():
        return []
    what = "does not exist" if not Path(mirror).exists() else "is not a folder"
    return [f"config key 'data_mirror' (or the environment variable RUBRICLAB_DATA_MIRROR): "
            f"{mirror} {what}; name the folder holding one subfolder per dataset "
            "(summedits/, ragtruth/, healthbench/), or unset it to download the files"]


def fetch_problems(config: Mapping[str, Any], fetches: Iterable[tuple[str, str]]) -> list[str]:
    """For the raw files about to be fetched ((dataset, file name) of each fetch_raw job): one
    line per file the data mirror does not hold, or that only a mirror has when none is set."""
    from pathlib import Path

    from .data.download import dataset_files

    mirror = config.get("data_mirror")
    problems: list[str] = []
    for dataset, name in fetches:
        (spec,) = dataset_files(dataset, [name])
        if not mirror:
            if not spec.get("url"):
                problems.append(f"datasets.{dataset}: {name} exists only in a data mirror (it "
                                "has no public URL); set data_mirror (or RUBRICLAB_DATA_MIRROR), "
                                "or leave the file out of the config")
            continue
        if not spec.get("mirror_name"):
            problems.append(f"datasets.{dataset}: {name} has no mirror copy; unset data_mirror "
                            f"to download it from {spec['url']}, or leave it out of the config")
            continue
        copy = Path(mirror) / dataset / spec["mirror_name"]
        if not copy.is_file():
            problems.append(f"config key 'data_mirror': {copy} is missing (the copy of "
                            f"{dataset}'s {name}); add it, or point data_mirror at a mirror "
                            "that has it")
    return problems


def check_before_first_job(config: Mapping[str, Any], warn: Callable[[str], None],
                           job_params: Iterable[Any] | None = None,
                           fetches: Iterable[tuple[str, str]] = (),
                           today: date | None = None) -> None:
    """The Snakefile's onstart: raise ConfigError for models of the jobs about to run (their
    params, `job_params`) that cannot be called at all (retired, or without their key), or
    whose calls a budget cannot count, for a cache folder that cannot be written while some
    job calls a model, and for raw files about to be fetched (`fetches`: dataset, file name)
    that cannot be had; `warn` for models only the cache can answer and models retiring
    before the run may end."""
    job_params = None if job_params is None else list(job_params)
    raise_if(fetch_problems(config, fetches), "the data cannot be fetched")
    if job_params is None or job_params:
        raise_if(cache_dir_problems(config), "the run cannot start")
    raise_if(budget_problems(config, job_params),
             "the run cannot start under its budget (price these models, or set no budget)")
    retired, retiring = retirement_problems(config, job_params, today)
    for line in retiring:
        warn(line)
    raise_if(retired, "the run cannot start (models their providers no longer serve)")
    errors, warnings = key_problems(config, job_params)
    for line in warnings:
        warn(line)
    raise_if(errors, "the run cannot start (set the keys, or import a cache holding the answers)")
    refused, warned = preflight_problems(config, job_params)
    for line in warned:
        warn(line)
    raise_if(refused, "the preflight refused these models before any paid call (change them "
                      "as each line says, or turn it off with llm.preflight: false)")


def preflight_problems(config: Mapping[str, Any], job_params: Iterable[Any] | None = None,
                       ) -> tuple[list[str], list[str]]:
    """(refused, warnings): rubriclab.llm.preflight's free lookup of each remote model of the
    jobs about to run (all the config names, without `job_params`) on its provider's models
    endpoint, one line per model naming the config key that names it. Nothing is looked up
    where llm.preflight is false. Every model is looked up, even one the cache holds answers of
    (a named run shares the cache with the pilot before it): only where its provider cannot be
    reached, or it has no key (key_problems has warned of that), and the cache holds its
    answers is the refusal a warning (an offline replay). Warnings also say which models were
    not checked and which retire within the run's horizon (`run_horizon`)."""
    from .llm.preflight import preflight
    from .llm.settings import LLMConfig

    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    if not llm.preflight:
        return [], []
    remote = remote_models(config, job_params)
    if not remote:
        return [], []
    hours, _ = run_horizon(config)
    verdicts = preflight({m: llm.settings_for(m) for m in remote}, horizon_hours=hours)
    cached = set(_models_with_answers(llm)) if any(v.offline for v in verdicts) else set()
    refused: list[str] = []
    warnings: list[str] = []
    for v in verdicts:
        named = f"model {v.model!r} ({remote[v.model]}), {v.provider}"
        if v.refused and v.offline and v.model in cached:
            if v.unreachable:
                warnings.append(f"{named}: {v.reason}; the cache holds its answers, so only "
                                "calls it answers can be made (an offline replay)")
        elif v.refused:
            refused.append(f"{named}: {v.message()}")
        elif v.status == "unchecked":
            warnings.append(f"{named}: not checked: {v.message()}")
        else:
            warnings += [f"{named}: {line}" for line in v.warnings]
    return refused, warnings


def _models_with_answers(llm: Any) -> list[str]:
    """The models the call cache holds answers of (read only; a missing cache holds none)."""
    from .llm.storage import open_cache

    if not (llm.cache_url or llm.cache_path.is_file()):
        return []
    try:
        with open_cache(llm, read_only=True) as cache:
            return [model for model, _ in cache.counts_by_model()]
    except FileNotFoundError:  # a PostgreSQL database with no cache yet
        return []


def raise_if(problems: list[str], heading: str) -> None:
    if problems:
        raise ConfigError(heading + ":\n  " + "\n  ".join(problems))


def pipeline_config(configfiles: list[str | Path], config_args: list[str]) -> dict[str, Any]:
    """The config a run with these --configfile and --config arguments would use: the named
    files (config/config.yaml where none is named, as the Snakefile reads it) merged in order,
    --config on top (`merged_config`), the environment variables that stand in for config
    keys, then the schema's checks and defaults, as workflow/rules/common.smk does.
    ConfigError for a config that is not valid."""
    from .config import (apply_env_overrides, config_overrides, load_yaml, merge_config,
                         merged_config, validate_config)
    from .schema_doc import schema_path

    files = configfiles or [schema_path().parents[2] / "config" / "config.yaml"]
    merged = merged_config(files)
    command_line = config_overrides(config_args)
    merge_config(merged, command_line)
    schema = load_yaml(schema_path())
    given = coerce_command_line(apply_env_overrides(merged), command_line, schema)
    raise_if(unknown_keys(given, schema), "invalid configuration")
    return validate_config(given, schema)
