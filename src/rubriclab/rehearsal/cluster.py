"""`make rehearse-cluster`: the rehearsal as a run on several hosts, on one machine.

Three checks, each against the loopback model server (rubriclab.rehearsal.server), which counts
every answer it serves (what a provider bills), against the distinct requests (cache keys) the
runs' ledgers record:

1. **one machine**: the config's run with Snakemake's local executor (the default profile);
2. **hosts**: the same run through `profiles/cluster-generic/`: every job a separate process in
   an empty folder of its own (rubriclab.rehearsal.hosts), its inputs and outputs moved through
   Snakemake's fs storage plugin, sharing with the others only the call cache and the server.
   Its figures' and results' tables must equal the one-machine run's, and every distinct
   request must have been answered once (answers / distinct requests = 1.000);
3. **two invocations on one cache**: two such runs started together on one fresh cache, the
   first killed (SIGKILL, its jobs left running as a cluster's would be) once the server has
   answered a share of the requests, then started again: still 1.000 answers per distinct
   request over all three invocations.

The cache is a parameter (`--cache`: a folder for the default SQLite cache, or a
postgresql://... URL), handed to every job as RUBRICLAB_CACHE. The timings go to
`<workdir>/cluster_report.json` and `.md`; benchmarks/README.md records them.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from .run import (PLACEHOLDER_KEYS, REPO, THINKING_BY_DEFAULT, RehearsalFailed, expected_sizes,
                  ledger_summary, measured_sizes, merged_config, overlay, serve_models_of,
                  snakemake_command, stop_group)
from .server import FaultMix, ReasoningModel, RehearsalServer

PROFILE = REPO / "profiles" / "cluster-generic"
# Tables compared between runs: every csv of the figures and results, but for what records a
# run's own history (the ledger of calls, per-job timings, logs).
CLIENT_TIMEOUT_S = 300.0
SKIPPED = ("results/ledger/", "results/benchmarks/", "results/plan/", "logs/")


def _server() -> RehearsalServer:
    reasoning = {name: ReasoningModel() for name in THINKING_BY_DEFAULT}
    return RehearsalServer(faults=FaultMix.none(), reasoning=reasoning)


def _env(cache: str, spool: Path | None = None, store: Path | None = None) -> dict[str, str]:
    env = {**os.environ, **{key: "rehearsal-placeholder" for key in PLACEHOLDER_KEYS},
           "RUBRICLAB_CACHE": cache,
           # The profile's submit command runs `python`: this one, with this rubriclab.
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": os.pathsep.join([str(REPO / "src"),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    if spool is not None:
        spool.mkdir(parents=True, exist_ok=True)
        env["RUBRICLAB_HOSTS_SPOOL"] = str(spool)
    if store is not None:
        store.mkdir(parents=True, exist_ok=True)
        env["RUBRICLAB_STORE"] = str(store)
    return env


def _command(configfiles: list[Path], workdir: Path, server: RehearsalServer, cores: int,
             data_mirror: str, hosts: bool, targets: tuple[str, ...] = ()) -> list[str]:
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
    extra = [*targets, *(["--workflow-profile", str(PROFILE)] if hosts else [])]
    return snakemake_command([*configfiles, overlay_path], workdir, cores, extra)


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    with open(log, "a", encoding="utf-8") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=REPO, start_new_session=True)


def _finish(process: subprocess.Popen, log: Path, what: str, timeout_s: float) -> None:
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


def one_run(configfiles: list[Path], base: Path, cache: str, *, cores: int, data_mirror: str,
            hosts: bool, timeout_s: float, targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """One run on a fresh server: its wall time, sizes and the server's answer counts."""
    name = "hosts" if hosts else "one-machine"
    workdir, store, spool = base / name, base / f"{name}-store", base / f"{name}-spool"
    with _server() as server:
        command = _command(configfiles, workdir, server, cores, data_mirror, hosts, targets)
        env = _env(cache, spool if hosts else None, store if hosts else None)
        log = workdir / "snakemake.log"
        started = time.monotonic()
        _finish(_start(command, env, log), log, name, timeout_s)
        wall_s = time.monotonic() - started
        outputs = store if hosts else workdir
        answers = answer_counts(server, outputs)
    sizes = {}
    if not targets:  # a whole run: its sizes against its effective config
        effective = yaml.safe_load((outputs / "results" / "effective_config.yaml").read_text())
        sizes = {"expected": expected_sizes(effective), "measured": measured_sizes(outputs)}
    return {"run": name, "wall_s": round(wall_s, 1), "outputs": str(outputs), **sizes,
            "ledger": ledger_summary(outputs), **answers}


def killed_and_concurrent(configfiles: list[Path], base: Path, cache: str, *, cores: int,
                          data_mirror: str, kill_after_answers: int,
                          timeout_s: float, targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """Two hosts runs on one cache at once, the first killed mid-run and started again."""
    with _server() as server:
        runs = {}
        for name in ("first", "second"):
            workdir = base / f"together-{name}"
            env = _env(cache, base / f"together-{name}-spool", base / f"together-{name}-store")
            runs[name] = (_command(configfiles, workdir, server, cores, data_mirror, True,
                                   targets), env,
                          workdir / "snakemake.log")
        started = time.monotonic()
        first = _start(*runs["first"])
        second = _start(*runs["second"])
        deadline = started + timeout_s
        while server.stats_dict()["answers"] < kill_after_answers:
            if first.poll() is not None or time.monotonic() > deadline:
                raise RehearsalFailed(
                    f"the first run ended (or {timeout_s:.0f} s passed) before the server had "
                    f"answered {kill_after_answers} requests; see {runs['first'][2]}")
            time.sleep(0.5)
        killed_at = server.stats_dict()["answers"]
        os.kill(first.pid, signal.SIGKILL)  # its jobs, detached, go on as a cluster's would
        first.wait()
        # Started again once its jobs have ended, as one would after `squeue` shows none: a
        # job of the killed run still writing an output to the store while the new run
        # reads it was seen to fail the new run's job (a missing input in the store).
        orphans_ended = _wait_for_jobs(base / "together-first-spool", deadline)
        # A killed Snakemake leaves its working folder locked: unlocked as a user would.
        command, env, log = runs["first"]
        subprocess.run([*command, "--unlock"], env=env, cwd=REPO, check=True, timeout=600,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        again = _start(*runs["first"])
        _finish(second, runs["second"][2], "the second run", timeout_s)
        _finish(again, runs["first"][2], "the first run, started again", timeout_s)
        wall_s = time.monotonic() - started
        answers = answer_counts(server, base / "together-first-store",
                                base / "together-second-store")
    return {"run": "two invocations, one killed", "wall_s": round(wall_s, 1),
            "killed_after_answers": killed_at, "orphaned_jobs_waited_s": orphans_ended,
            **answers,
            "tables_differ": differing_tables(base / "together-first-store",
                                              base / "together-second-store")}


def _wait_for_jobs(spool: Path, deadline: float) -> float:
    """Seconds until every job of a spool has ended (the stand-in scheduler's status)."""
    from .hosts import status

    started = time.monotonic()
    while any(status(job.name, spool) == "running" for job in spool.iterdir()
              if (job / "pid").is_file()):
        if time.monotonic() > deadline:
            raise RehearsalFailed(f"jobs of {spool} still running at the deadline")
        time.sleep(1.0)
    return round(time.monotonic() - started, 1)


def rehearse_cluster(configfiles: list[Path], base: Path, cache_for: Any, *, cores: int,
                     data_mirror: str, timeout_s: float = 3600, together: bool = True,
                     compare: bool = True,
                     kill_after_answers: int | None = None,
                     targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """The checks; `cache_for(name)`: the cache location of each (a fresh one each).
    `compare`: the one-machine and the hosts runs; `together`: the two runs on one cache, the
    first killed after `kill_after_answers` answers (default: a third of the one-machine
    run's); `targets`: the outputs to make (default: the whole run)."""
    base.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {"cache": cache_for("kind"), "targets": list(targets), "runs": []}
    problems: list[str] = []
    if compare:
        one = one_run(configfiles, base, cache_for("one-machine"), cores=cores,
                      data_mirror=data_mirror, hosts=False, timeout_s=timeout_s, targets=targets)
        report["runs"].append(one)
        _write(base, report)
        hosts = one_run(configfiles, base, cache_for("hosts"), cores=cores,
                        data_mirror=data_mirror, hosts=True, timeout_s=timeout_s, targets=targets)
        report["runs"].append(hosts)
        _write(base, report)
        problems += [f"{run['run']}: {name}: the config says {run['expected'][name]}, the "
                     f"outputs hold {run['measured'][name]}" for run in (one, hosts)
                     for name in run.get("expected", {})
                     if run["expected"][name] != run["measured"][name]]
        problems += [f"hosts against one machine: {p}"
                     for p in differing_tables(Path(one["outputs"]), Path(hosts["outputs"]))]
        kill_after_answers = kill_after_answers or max(1, one["answers"] // 3)
    if together:
        both = killed_and_concurrent(configfiles, base, cache_for("together"), cores=cores,
                                     data_mirror=data_mirror,
                                     kill_after_answers=kill_after_answers or 100,
                                     timeout_s=timeout_s, targets=targets)
        report["runs"].append(both)
        problems += [f"two invocations: {p}" for p in both["tables_differ"]]
    problems += [f"{run['run']}: {run['answers']} answers for {run['distinct_requests']} "
                 "distinct requests" for run in report["runs"]
                 if run["answers"] != run["distinct_requests"]]
    report["problems"] = problems
    _write(base, report)
    (base / "cluster_report.md").write_text(render(report))
    if problems:
        raise RehearsalFailed("the cluster rehearsal does not hold:\n  " + "\n  ".join(problems))
    return report


def _write(base: Path, report: dict[str, Any]) -> None:
    (base / "cluster_report.json").write_text(json.dumps(report, indent=2))


def render(report: dict[str, Any]) -> str:
    lines = ["# Cluster rehearsal", "", f"Cache: {report['cache']}.", "",
             "| run | wall s | answers | distinct requests | answers per request |",
             "| --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| {r['run']} | {r['wall_s']:.0f} | {r['answers']} | {r['distinct_requests']} "
              f"| {r['answers_per_request']:.3f} |" for r in report["runs"]]
    lines += ["", "All hold." if not report.get("problems") else "What does not hold:"]
    lines += [f"- {p}" for p in report.get("problems", [])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rubriclab.rehearsal.cluster",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configfile", nargs="+", type=Path,
                        default=[REPO / "config" / "paper.yaml",
                                 REPO / "tests" / "rehearsal" / "reduced.yaml"])
    parser.add_argument("--workdir", type=Path, default=REPO / "rehearsal-cluster")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--data-mirror", default=os.environ.get("RUBRICLAB_DATA_MIRROR"))
    parser.add_argument("--cache", default="sqlite",
                        help="sqlite (a fresh SQLite cache folder per check, the default) or a "
                             "postgresql://... URL of a server, one fresh database per check "
                             "(dropped first where it exists)")
    parser.add_argument("--no-together", action="store_true",
                        help="skip the two invocations on one cache")
    parser.add_argument("--together-only", action="store_true",
                        help="only the two invocations on one cache")
    parser.add_argument("--kill-after-answers", type=int,
                        help="kill the first of the two after this many answers (default: a "
                             "third of the one-machine run's; 100 with --together-only)")
    parser.add_argument("--target", nargs="+", default=[],
                        help="outputs to make (default: the whole run); the size checks are "
                             "then skipped")
    parser.add_argument("--timeout-s", type=float, default=3600)
    args = parser.parse_args(argv)
    if not args.data_mirror:
        parser.error("the rehearsal runs offline: give --data-mirror or RUBRICLAB_DATA_MIRROR")
    base = args.workdir.resolve()
    cache_for = cache_locations(args.cache, base)
    try:
        rehearse_cluster([p.resolve() for p in args.configfile], base, cache_for,
                         cores=args.cores, data_mirror=str(Path(args.data_mirror).resolve()),
                         timeout_s=args.timeout_s, together=not args.no_together,
                         compare=not args.together_only,
                         kill_after_answers=args.kill_after_answers,
                         targets=tuple(args.target))
    except RehearsalFailed as exc:
        print(f"cluster rehearsal failed: {exc}", file=sys.stderr)
        return 1
    print((base / "cluster_report.md").read_text())
    return 0


def cache_locations(cache: str, base: Path):
    """name -> the cache of that check: a folder under `base`, or a database of the server."""
    if cache == "sqlite":
        def sqlite(name: str) -> str:
            return "SQLite" if name == "kind" else str(base / f"{name}-cache")
        return sqlite
    if cache.startswith(("postgresql://", "postgres://")):
        def postgres(name: str) -> str:
            return "PostgreSQL" if name == "kind" else fresh_database(cache, name)
        return postgres
    raise SystemExit(f"--cache {cache!r}: 'sqlite' or a postgresql://... URL")


def fresh_database(url: str, name: str) -> str:
    """A new, empty database `rehearsal_<name>` on the server of `url`; its URL."""
    import psycopg
    from psycopg.conninfo import conninfo_to_dict

    database = "rehearsal_" + name.replace("-", "_")
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{database}"')
        connection.execute(f'CREATE DATABASE "{database}"')
    params = conninfo_to_dict(url)
    query = "&".join(f"{key}={value}" for key, value in params.items()
                     if key in ("host", "port", "user") and value)
    return f"postgresql:///{database}" + (f"?{query}" if query else "")

if __name__ == "__main__":
    sys.exit(main())
