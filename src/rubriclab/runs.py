"""Named runs: `run: <name>` in config gives a run its own folder, runs/<name>/, for everything it
writes (data/, results/, figures/, logs/, Snakemake's own metadata), so a baseline and its
ablations sit side by side. The model-call cache, the assembled models and the data mirror stay
where the launching directory has them, so an ablation pays only for the calls it changes.

A run without a name keeps today's layout (results/, figures/ in the working directory).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, MutableMapping, overload

from .config import ConfigError
from .llm.settings import DEFAULT_CACHE_DIR, is_cache_url

RUNS_DIR = "runs"
RUN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Well under a file name's 255 bytes, as in the schema (run, base_run: maxLength).
MAX_RUN_NAME = 100
# Environment variables naming folders: made absolute so a job in runs/<name>/ finds the same.
PATH_VARIABLES = ("RUBRICLAB_CACHE", "RUBRICLAB_MODELS_DIR", "RUBRICLAB_DATA_MIRROR")
# Set only by rubriclab.reuse for the process that loads a named run's workflow in its base
# run's folder, to ask Snakemake which jobs are up to date there (see rubriclab.reuse).
EVALUATE_IN_VARIABLE = "RUBRICLAB_EVALUATE_RUN_IN"


@overload
def run_directory(name: None, launch_dir: str | Path) -> None: ...


@overload
def run_directory(name: str, launch_dir: str | Path) -> Path: ...


def run_directory(name: str | None, launch_dir: str | Path) -> Path | None:
    """runs/<name> under the launching directory, or None for the unnamed default run."""
    if name is None:
        return None
    check_run_name(name, "run")
    return Path(launch_dir).resolve() / RUNS_DIR / name


def check_run_name(name: Any, key: str) -> None:
    """Raise ConfigError, naming `key`, unless `name` can be a folder name under runs/."""
    if not isinstance(name, str) or not RUN_NAME.match(name) or name in (".", ".."):
        shown = repr(name) if len(str(name)) <= 40 else repr(str(name)[:40]) + "..."
        raise ConfigError(f"config key '{key}': {shown} is not a folder name (letters, digits, "
                          "'.', '_' and '-', starting with a letter or digit)")
    if len(name) > MAX_RUN_NAME:
        raise ConfigError(f"config key '{key}': a run name of {len(name)} characters "
                          f"({name[:40]!r}...) is too long for a folder; at most {MAX_RUN_NAME}")


def anchor_to_launch_dir(config: dict[str, Any], launch_dir: str | Path,
                         environ: MutableMapping[str, str] | None = None) -> dict[str, Any]:
    """The config of a named run with its shared folders made absolute, so that the run's jobs,
    which work inside runs/<name>/, use the launching directory's cache, models and mirror.

    The cache folder is written into `cache_dir` (the default one included) unless
    RUBRICLAB_CACHE names it; relative folders in those environment variables are made absolute
    in `environ` (the jobs inherit it).
    """
    environ = os.environ if environ is None else environ
    base = Path(launch_dir).resolve()

    def absolute(path: str | Path) -> str:
        return str(base / Path(path).expanduser())

    for variable in PATH_VARIABLES:
        if environ.get(variable) and not is_cache_url(environ[variable]):
            environ[variable] = absolute(environ[variable])
    anchored = dict(config)
    if anchored.get("data_mirror"):
        anchored["data_mirror"] = absolute(anchored["data_mirror"])
    # A postgresql:// cache is the same from every folder; the folder of its per-host files
    # (cache_dir) is anchored like a SQLite cache's folder (the default one, where cache_dir
    # holds the URL).
    cache_env = environ.get("RUBRICLAB_CACHE")
    if is_cache_url(anchored.get("cache_dir")):
        anchored["cache_dir"] = None
        anchored.setdefault("llm", {})
        anchored["llm"] = {**(anchored["llm"] or {}), "cache_url": config["cache_dir"]}
    if not cache_env or is_cache_url(cache_env):
        anchored["cache_dir"] = absolute(anchored.get("cache_dir") or DEFAULT_CACHE_DIR)
    return anchored


def enter_named_run(config: dict[str, Any], launch_dir: str | Path, directory_option: Any,
                    environ: MutableMapping[str, str] | None = None) -> tuple[dict[str, Any], Path | None]:
    """(the config to run with, the run's folder or None): what common.smk applies before any
    rule is defined. `directory_option` is Snakemake's --directory, which a named run replaces."""
    environ = os.environ if environ is None else environ
    folder = run_directory(config.get("run"), launch_dir)
    if folder is None:
        return config, None
    if environ.get(EVALUATE_IN_VARIABLE):
        folder = Path(environ[EVALUATE_IN_VARIABLE])
    if directory_option is not None:
        raise ConfigError(f"config key 'run' ({config['run']!r}) chooses the run's folder "
                          f"({RUNS_DIR}/{config['run']}/), so --directory cannot be given too; "
                          "leave one of them out")
    return anchor_to_launch_dir(config, launch_dir, environ), folder


def base_run_directory(config: dict[str, Any], launch_dir: str | Path) -> Path | None:
    """The folder of the run named by `base_run` (runs/<name>/, or the launching directory for
    "."), checked: a named run's ablation of another run that Snakemake has finished jobs of."""
    name = config.get("base_run")
    if name is None:
        return None
    if config.get("run") is None:
        raise ConfigError(f"config key 'base_run' ({name!r}) needs a named run: give 'run' too "
                          "(its outputs go to runs/<run>/, the base run's are only read)")
    if name == config["run"]:
        raise ConfigError(f"config key 'base_run': {name!r} is this run itself; name the run "
                          "this one is an ablation of")
    launch = Path(launch_dir).resolve()
    if name != ".":
        check_run_name(name, "base_run")
    folder = launch if name == "." else run_directory(name, launch)
    if not (folder / ".snakemake" / "metadata").is_dir():
        runs = sorted(p.parent.parent.name
                      for p in (launch / RUNS_DIR).glob("*/.snakemake/metadata"))
        known = ", ".join(runs) if runs else "none"
        raise ConfigError(f"config key 'base_run': {name!r}: {folder} holds no finished jobs "
                          f"(no .snakemake/metadata there); named runs in {launch / RUNS_DIR}: "
                          f"{known}")
    return folder


def targets_in_run(targets: Any, run: str | None) -> list[str]:
    """The command line's targets as the run's jobs see them. A named run works in
    runs/<name>/, so Snakemake reads a target relative to that folder: `runs/<name>/figures/x`
    would name runs/<name>/runs/<name>/figures/x, which no rule makes. The run's own prefix is
    taken off; a target in another run's folder is refused with what to type instead."""
    mapped = []
    for target in targets:
        parts = Path(target).parts
        if len(parts) < 3 or parts[0] != RUNS_DIR or os.path.isabs(target):
            mapped.append(target)
            continue
        inner = str(Path(*parts[2:]))
        if parts[1] == run:
            mapped.append(inner)
            continue
        this = f"run {run!r}" if run else "the unnamed run (no --config run=...)"
        raise ConfigError(
            f"target {target!r} is a file of run {parts[1]!r}, but this is {this}; name the "
            f"file inside the run's folder and give that run's config: snakemake --configfile "
            f"{RUNS_DIR}/{parts[1]}/results/effective_config.yaml -- {inner} (the config run "
            f"{parts[1]!r} recorded), or the config files it was started with and --config "
            f"run={parts[1]} -- {inner}")
    return mapped
