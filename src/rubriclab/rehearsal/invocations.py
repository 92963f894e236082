"""The snakemake invocations of the cluster rehearsals: started against a loopback model server,
bounded, and compared (answers at the server against the ledgers' distinct requests, and the
tables of two runs byte for byte)."""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from .run import (PLACEHOLDER_KEYS, REPO, THINKING_BY_DEFAULT, RehearsalFailed, merged_config,
                  overlay, serve_models_of, snakemake_command, stop_group)
from .server import FaultMix, ReasoningModel, RehearsalServer

# Tables compared between runs: every csv of the figures and results, but for what records a
# run's own history (the ledger of calls, per-job timings, logs).
CLIENT_TIMEOUT_S = 300.0
SKIPPED = ("results/ledger/", "results/benchmarks/", "results/plan/", "logs/")


def fresh_server() -> RehearsalServer:
    reasoning = {name: ReasoningModel() for name in THINKING_BY_DEFAULT}
    return RehearsalServer(faults=FaultMix.none(), reasoning=reasoning)


def run_env(cache: str, spool: Path | None = None, store: Path | None = None,
            extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, **{key: "rehearsal-placeholder" for key in PLACEHOLDER_KEYS},
           "RUBRICLAB_CACHE": cache,
           # The profile's submit command runs `python`: this one, with this rubriclab.
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"),
                                          *filter(None, [os.environ.get("PYTHONPATH")])]),
           **(extra or {})}
    if spool is not None:
        spool.mkdir(parents=True, exist_ok=True)
        env["RUBRICLAB_HOSTS_SPOOL"] = str(spool)
    if store is not None:
        store.mkdir(parents=True, exist_ok=True)
        env["RUBRICLAB_STORE"] = str(store)
    return env


def run_command(configfiles: list[Path], workdir: Path, server: RehearsalServer, cores: int,
                data_mirror: str, profile: Path | None, targets: tuple[str, ...] = (),
                extra: tuple[str, ...] = ()) -> list[str]:
    """The snakemake command of a run of `configfiles` against `server` in `workdir`, through
    the workflow profile `profile` (None: the default one, Snakemake's local executor)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = merged_config(configfiles)
    serve_models_of(server, config)  # for the preflight of the checks before the first job
    layer = overlay(config, server.url, workdir, data_mirror)
    for settings in layer["llm"]["per_model"].values():
        # The server here never hangs (no faults): a client that gave up on a slow answer on
        # a busy machine would ask again, and the second answer would count as paid twice.
        settings["timeout_s"] = CLIENT_TIMEOUT_S
    overlay_path = workdir / "rehearsal_overlay.yaml"
    overlay_path.write_text(yaml.safe_dump(layer))
    extra_args = [*targets, *(["--workflow-profile", str(profile)] if profile else []), *extra]
    return snakemake_command([*configfiles, overlay_path], workdir, cores, extra_args)


def start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "a", encoding="utf-8") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=REPO, start_new_session=True)


def finish(process: subprocess.Popen, log: Path, what: str, timeout_s: float) -> None:
    try:
        code = process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_group(process)
        raise RehearsalFailed(f"{what}: still running after {timeout_s:.0f} s; see {log}")
    if code != 0:
        raise RehearsalFailed(f"{what}: snakemake exited {code}; the end of {log}:\n"
                              + log.read_text()[-3000:])


def ledger_keys(*outputs: Path) -> set[str]:
    """The cache keys of every request the runs' ledgers record, asked or answered from the
    cache: the distinct requests of the runs (a trial asked again as another sample is another
    request, though its body is the same)."""
    keys: set[str] = set()
    for folder in outputs:
        for path in sorted((folder / "results" / "ledger").glob("*.jsonl")):
            keys |= {json.loads(line)["key"] for line in path.read_text().splitlines() if line}
    return keys


def answer_counts(server: RehearsalServer, *outputs: Path) -> dict[str, Any]:
    """Answers the server served against the distinct requests of the runs' ledgers: 1.000
    when no request was paid for twice."""
    stats = server.stats_dict()
    requests = len(ledger_keys(*outputs))
    return {"answers": stats["answers"], "distinct_requests": requests,
            "distinct_bodies": stats["distinct_requests"],
            "answers_per_request": round(stats["answers"] / requests, 3) if requests else None}


def tables_of(outputs: Path) -> dict[str, Path]:
    """Every csv table of a run's figures and results, by its path in the run."""
    found = {}
    for folder in ("figures", "results"):
        for path in sorted((outputs / folder).rglob("*.csv")):
            name = path.relative_to(outputs).as_posix()
            if not name.startswith(SKIPPED):
                found[name] = path
    return found


def differing_tables(first: Path, second: Path) -> list[str]:
    """Tables one run has and the other lacks, or whose bytes differ."""
    a, b = tables_of(first), tables_of(second)
    problems = [f"{name}: only in {first}" for name in sorted(set(a) - set(b))]
    problems += [f"{name}: only in {second}" for name in sorted(set(b) - set(a))]
    problems += [f"{name}: differs" for name in sorted(set(a) & set(b))
                 if not filecmp.cmp(a[name], b[name], shallow=False)]
    return problems
