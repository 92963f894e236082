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

`--profile slurm` runs instead rubriclab.rehearsal.slurm's checks: part of the reduced
rehearsal through `profiles/slurm/` on a real Slurm, its head killed once, against one machine.

The cache is a parameter (`--cache`: a folder for the default SQLite cache, or a
postgresql://... URL), handed to every job as RUBRICLAB_CACHE. The timings go to
`<workdir>/cluster_report.json` and `.md`; benchmarks/README.md records them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from .invocations import (answer_counts, differing_tables, finish, fresh_server, ledger_keys,
                          run_command, run_env, start, tables_of)
from .run import REPO, RehearsalFailed, expected_sizes, ledger_summary, measured_sizes
from .slurm import DEFAULT_TARGETS, rehearse_slurm

PROFILE = REPO / "profiles" / "cluster-generic"
PROFILES = ("cluster-generic", "slurm")
__all__ = ["answer_counts", "differing_tables", "ledger_keys", "tables_of", "rehearse_cluster",
           "cache_locations", "fresh_database", "main"]


def one_run(configfiles: list[Path], base: Path, cache: str, *, cores: int, data_mirror: str,
            hosts: bool, timeout_s: float, targets: tuple[str, ...] = ()) -> dict[str, Any]:
    """One run on a fresh server: its wall time, sizes and the server's answer counts."""
    name = "hosts" if hosts else "one-machine"
    workdir, store, spool = base / name, base / f"{name}-store", base / f"{name}-spool"
    with fresh_server() as server:
        command = run_command(configfiles, workdir, server, cores, data_mirror,
                              PROFILE if hosts else None, targets)
        env = run_env(cache, spool if hosts else None, store if hosts else None)
        log = workdir / "snakemake.log"
        started = time.monotonic()
        finish(start(command, env, log), log, name, timeout_s)
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
    with fresh_server() as server:
        runs = {}
        for name in ("first", "second"):
            workdir = base / f"together-{name}"
            env = run_env(cache, base / f"together-{name}-spool",
                          base / f"together-{name}-store")
            runs[name] = (run_command(configfiles, workdir, server, cores, data_mirror, PROFILE,
                                      targets), env,
                          workdir / "snakemake.log")
        started = time.monotonic()
        first = start(*runs["first"])
        second = start(*runs["second"])
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
        again = start(*runs["first"])
        finish(second, runs["second"][2], "the second run", timeout_s)
        finish(again, runs["first"][2], "the first run, started again", timeout_s)
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
    for run in report["runs"]:
        if "killed_after_answers" in run:
            lines += ["", f"{run['run']}: the head killed (SIGKILL) after "
                      f"{run['killed_after_answers']} answers with {run['orphaned_jobs']} "
                      f"sbatch jobs in the queue, started again once they had left it "
                      f"({run['orphaned_jobs_waited_s']:.0f} s later)."]
        if "cost_report_calls" in run:
            lines += ["", f"{run['run']}: the cost report bills {run['cost_report_calls']} "
                      f"calls ({run['cost_report_distinct']} distinct requests)"
                      + (f"; the PostgreSQL ledger table holds {run['database_attempts']} "
                         "paid attempts" if "database_attempts" in run else "")
                      + f"; the server answered {run['answers']}."]
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
    parser.add_argument("--profile", choices=PROFILES, default="cluster-generic",
                        help="cluster-generic (several hosts on this machine, the checks above) "
                             "or slurm (profiles/slurm on the Slurm that sinfo reaches, "
                             "rubriclab.rehearsal.slurm; default targets: "
                             + " ".join(DEFAULT_TARGETS) + ")")
    parser.add_argument("--stall-s", type=float, default=120,
                        help="slurm: stop a head that logs nothing for this long while none of "
                             "its jobs is in the queue")
    args = parser.parse_args(argv)
    if not args.data_mirror:
        parser.error("the rehearsal runs offline: give --data-mirror or RUBRICLAB_DATA_MIRROR")
    base = args.workdir.resolve()
    cache_for = cache_locations(args.cache, base)
    if args.profile == "slurm":
        return _main_slurm(args, base, cache_for)
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


def _main_slurm(args: argparse.Namespace, base: Path, cache_for: Any) -> int:
    if cache_for("kind") != "PostgreSQL":
        print("cluster rehearsal failed: --profile slurm needs a PostgreSQL cache (--cache "
              "postgresql://...), which every sbatch job reaches", file=sys.stderr)
        return 1
    report: dict[str, Any] = {}
    try:
        report = rehearse_slurm([p.resolve() for p in args.configfile], base, cache_for,
                                cores=args.cores,
                                data_mirror=str(Path(args.data_mirror).resolve()),
                                targets=tuple(args.target) or DEFAULT_TARGETS,
                                timeout_s=args.timeout_s, stall_s=args.stall_s,
                                kill_after_answers=args.kill_after_answers)
    except RehearsalFailed as exc:
        report["problems"] = [str(exc)]
    _write(base, report)
    if report.get("runs"):
        (base / "cluster_report.md").write_text(render(report))
    if report["problems"]:
        print("cluster rehearsal failed:\n  " + "\n  ".join(report["problems"]),
              file=sys.stderr)
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
