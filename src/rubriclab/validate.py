"""Checks made before the first job, each problem on one line naming the config key.

- `coerce_command_line`: values given with `snakemake --config` in nested form arrive as
  strings (Snakemake reads them with YAML's BaseLoader); where the schema wants a number, a
  boolean or null, the string is read as YAML, so `carry="{fig2: {runs: 2}}"` means runs = 2.
- `unknown_keys`: a key the schema does not know, with the closest known key (difflib).
- `model_problems`: every model string the config names has a provider litellm knows
  (`fake/` and `local/` are rubriclab's own); checked at parse time, so a dry run catches it.
- `budget_problems`: under llm.budget_usd, the models of the jobs about to run that have no
  known price, so the budget could not count their calls; checked when the run starts.
- `missing_keys`: remote models of the jobs about to run whose API key is not in the
  environment and of which the cache holds no answer (so the run could not get far); checked
  when the run starts, by the model layer's own credential rule (`Backends.missing_api_keys`).
- `reasoning_effort_problem`: a role's reasoning_effort for a model that takes none (litellm
  would refuse each request of it); checked as each model rule's call settings are computed,
  so a dry run catches it.
- `cache_dir_problems`: the model-call cache folder cannot be written; checked when the run
  starts.
- `mirror_problems`: data_mirror names no folder (parse time); `fetch_problems`: a raw file
  about to be fetched that the mirror lacks (or that needs one); checked when the run starts.
"""

from __future__ import annotations

import copy
import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import yaml

from .config import ConfigError, key_path

OWN_PROVIDERS = ("fake", "local")
_SCALAR_TYPES = {"integer": int, "number": (int, float), "boolean": bool, "null": type(None)}


def _resolve(schema: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    """The schema with its local $ref ("#/$defs/name") followed."""
    while isinstance(schema, dict) and "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema if isinstance(schema, dict) else {}


def _types(schema: dict[str, Any], root: Mapping[str, Any]) -> set[str]:
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        types |= _types(_resolve(branch, root), root)
    return types


def _child_schema(schema: dict[str, Any], key: Any, root: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(key, int):
        return _resolve(schema.get("items", {}), root)
    properties = schema.get("properties", {})
    if key in properties:
        return _resolve(properties[key], root)
    extra = schema.get("additionalProperties")
    return _resolve(extra, root) if isinstance(extra, dict) else {}


def _coerced(value: str, types: set[str]) -> Any:
    if not types or "string" in types:
        return value
    try:
        parsed = yaml.safe_load(value)
    except yaml.YAMLError:
        return value
    for name in types:
        wanted = _SCALAR_TYPES.get(name)
        if wanted and isinstance(parsed, wanted) and not (name != "boolean" and isinstance(parsed, bool)):
            return parsed
    return value


def coerce_command_line(config: dict[str, Any], command_line: Mapping[str, Any] | None,
                        schema: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `config` in which each string that came from --config (`command_line`) and
    stands where the schema wants a number, boolean or null is read as YAML. Strings from
    config files are left as written: a file says what it means."""
    result = copy.deepcopy(config)

    def walk(given: Any, target: Any, where: dict[str, Any]) -> Any:
        if isinstance(given, dict) and isinstance(target, dict):
            for key, value in given.items():
                if key in target:
                    target[key] = walk(value, target[key], _child_schema(where, key, schema))
            return target
        if isinstance(given, list) and isinstance(target, list) and len(given) == len(target):
            return [walk(g, t, _child_schema(where, i, schema))
                    for i, (g, t) in enumerate(zip(given, target))]
        if isinstance(given, str) and given == target:
            return _coerced(given, _types(where, schema))
        return target

    return walk(dict(command_line or {}), result, _resolve(schema, schema))


def unknown_keys(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[str]:
    """One line per key the schema does not allow, with the closest allowed key if any."""
    problems: list[str] = []

    def walk(value: Any, where: dict[str, Any], path: list[Any]) -> None:
        if isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, _child_schema(where, i, schema), path + [i])
            return
        if not isinstance(value, dict):
            return
        properties = where.get("properties", {})
        closed = where.get("additionalProperties") is False
        for key, item in value.items():
            if closed and key not in properties:
                line = f"config key '{key_path(path + [key])}' is not a setting"
                close = difflib.get_close_matches(str(key), list(properties), n=1, cutoff=0.6)
                line += (f"; did you mean '{key_path(path + [close[0]])}'?" if close else
                         f" (known here: {', '.join(sorted(properties))})")
                problems.append(line)
                continue
            walk(item, _child_schema(where, key, schema), path + [key])

    walk(config, _resolve(schema, schema), [])
    return problems


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
    from .llm.cache import open_cache
    from .llm.settings import LLMConfig

    models = configured_models(config)
    if job_params is not None:
        models = models_in(job_params, models)
    remote = {m: k for m, k in models.items() if m.partition("/")[0] not in OWN_PROVIDERS}
    if not remote:
        return [], []
    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    backends = Backends(llm)

    cached: list[str] = []
    if llm.cache_url or llm.cache_path.is_file():
        try:
            with open_cache(llm, read_only=True) as cache:
                cached = [model for model, _ in cache.counts_by_model()]
        except FileNotFoundError:  # a PostgreSQL database with no cache yet
            cached = []
    return missing_keys(remote, backends.missing_api_keys, cached)


def budget_problems(config: Mapping[str, Any],
                    job_params: Iterable[Any] | None = None) -> list[str]:
    """Under a budget (llm.budget_usd), the models of the jobs about to run whose calls it
    cannot count, for want of a price (configured or in litellm's map)."""
    budget = (config.get("llm") or {}).get("budget_usd")
    if budget is None:
        return []
    from .llm.budget import unguarded_message, unguarded_models
    from .llm.settings import LLMConfig

    models = configured_models(config)
    if job_params is not None:
        models = models_in(job_params, models)
    llm = LLMConfig.from_dict(config.get("llm"), cache_dir=config.get("cache_dir"))
    unguarded = unguarded_models(budget, models, {m: llm.settings_for(m).price for m in models})
    return [f"{unguarded_message(budget, [m])} ({models[m]})" for m in unguarded]


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
        from .llm.cache import CacheUnavailable
        from .llm.cache_pg import connect

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
                           fetches: Iterable[tuple[str, str]] = ()) -> None:
    """The Snakefile's onstart: raise ConfigError for models of the jobs about to run (their
    params, `job_params`) that cannot be called at all, or whose calls a budget cannot count,
    for a cache folder that cannot be written while some job calls a model, and for raw files
    about to be fetched (`fetches`: dataset, file name) that cannot be had; `warn` for models
    only the cache can answer."""
    job_params = None if job_params is None else list(job_params)
    raise_if(fetch_problems(config, fetches), "the data cannot be fetched")
    if job_params is None or job_params:
        raise_if(cache_dir_problems(config), "the run cannot start")
    raise_if(budget_problems(config, job_params),
             "the run cannot start under its budget (price these models, or set no budget)")
    errors, warnings = key_problems(config, job_params)
    for line in warnings:
        warn(line)
    raise_if(errors, "the run cannot start (set the keys, or import a cache holding the answers)")


def raise_if(problems: list[str], heading: str) -> None:
    if problems:
        raise ConfigError(heading + ":\n  " + "\n  ".join(problems))
