"""`rubriclab plan`: the requests, tokens, dollars and hours of a config's run, before any
model is called.

    rubriclab plan --configfile config/paper.yaml --data-mirror ../shared/data

It builds the run's DAG with Snakemake, runs the jobs that call no model and need no model's
answer (fetching and preparing the data: the same files the run makes), then plans every model
job by running its own script against stand-in answers (rubriclab.plan.planner). It prints a
table per rule and model and writes figures/plan.md and results/plan/plan.csv in the working
directory; the cost report puts the bill beside that plan.

A staged plan: outputs a run has already made in the working directory (-d), and that Snakemake
would not make again, are read as they are. Generating transfer's rubrics and restating its
expert rubrics are cheap, so

    snakemake --configfile config/paper.yaml --cores 4 --until transfer_generate transfer_restate
    rubriclab plan --configfile config/paper.yaml --data-mirror ../shared/data

plans the judging on the real rubrics' criteria, and the degraded responses on the real
restated rubrics, rather than on stand-ins.

After a pilot (a small paid run of the same models, `make pilot`),

    rubriclab plan --configfile config/paper.yaml --measured-from runs/pilot

plans with what the pilot's calls measured (rubriclab.plan.measured: answers' lengths per rule
and model, each model's thinking share, batch prompt-cache hit rate and latency) in place of
the plan's assumptions, where it measured them; the markdown says which at its top.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

DEFAULT_FREE_TEXT_SHARE = 0.25


def build_plan(snakefile: Path, workdir: Path, configfiles: list[Path], config_args: list[str],
               *, free_text_share: float | None = DEFAULT_FREE_TEXT_SHARE, cores: int = 1,
               targets: list[str] | None = None, calibrate: bool = False,
               measured=None):
    """(per-job plan table, markdown, config digest); writes nothing but the prepared data
    (and, with `calibrate`, a local model's measured speed beside the cache).

    A local model's hours are its measured speed on this machine (rubriclab.plan.speed): from
    the ledgers of an earlier run in the working directory, else a calibration made earlier
    here, else, with `calibrate`, one made now (seconds); else they are assumed.

    `measured`: what a pilot measured (rubriclab.plan.measured.read_pilot), used in place of
    the assumptions: answers' lengths, thinking shares, batch prompt-cache hit rates, latency."""
    from rubriclab.config import config_digest
    from rubriclab.labels import ModelLabels
    from rubriclab.llm.cache import SQLiteCache
    from rubriclab.llm.providers import provider_for
    from rubriclab.llm.settings import LLMConfig

    from .dag import load_workflow, run_model_free_prefix
    from .markdown import plan_markdown
    from .planner import StandIn, plan_workflow, with_measures
    from .report import plan_table
    from .speed import measured_speed

    overrides = parse_config_args(config_args)
    workflow = load_workflow(snakefile, workdir, configfiles, overrides, targets or ())
    if run_model_free_prefix(workflow, snakefile, configfiles, config_args, cores):
        workflow = load_workflow(snakefile, workdir, configfiles, overrides, targets or ())
    llm = LLMConfig.from_dict(workflow.config["llm"], cache_dir=workflow.config["cache_dir"])
    cache_path = (llm.cache_path if llm.cache_path.is_absolute()
                  else workflow.workdir / llm.cache_path)
    if llm.cache_url:  # read only: a plan writes nothing to the server
        from rubriclab.llm.storage import open_cache

        try:
            cache = open_cache(llm, read_only=True)
        except FileNotFoundError:  # a database with no cache yet
            cache = None
    else:
        cache = SQLiteCache(cache_path) if cache_path.is_file() else None
    try:
        shares = measured.free_text_shares() if measured is not None else None
        rows = plan_workflow(workflow, StandIn(free_text_share, shares), cache)
    finally:
        if cache is not None:
            cache.close()
    if measured is not None:
        rows = with_measures(rows, measured)
    speeds = {model: measured_speed(model, workflow.workdir, llm, may_calibrate=calibrate)
              for model in sorted({r.model for r in rows if provider_for(r.model).embedded})}
    if measured is not None:  # the pilot's latencies, where nothing here measured the model
        speeds.update({m: s for m, s in measured.latency.items() if speeds.get(m) is None})
    table = plan_table(rows, llm, speeds, measured=measured)
    table.attrs["workdir"] = str(workflow.workdir)  # runs/<name>/ for a named run
    digest = config_digest(workflow.config)
    name = ", ".join(str(p) for p in configfiles) or "config/config.yaml"
    finished = collections.Counter(job.rule for job in workflow.jobs
                                   if job.calls_model and not job.needs_run)
    markdown = plan_markdown(table, config_name=name, digest=digest,
                             free_text_share=free_text_share, finished_jobs=finished,
                             measured=measured,
                             labels=ModelLabels(workflow.config.get("labels"),
                                                stand_ins=workflow.config.get("stand_ins")))
    return table, markdown, digest


def parse_config_args(values: list[str]) -> dict:
    """KEY=VALUE pairs as Snakemake's --config reads them (rubriclab.config.config_overrides:
    Snakemake's own parser)."""
    from rubriclab.config import ConfigError, config_overrides

    try:
        return config_overrides(values)
    except ConfigError as exc:
        raise SystemExit(f"rubriclab plan: {exc}") from None


def main(argv: list[str] | None = None) -> int:
    from .report import write_plan

    parser = argparse.ArgumentParser(prog="rubriclab plan", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    return run(args, write_plan)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--configfile", nargs="+", type=Path, default=[],
                        help="config file(s), as for snakemake (default: config/config.yaml)")
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE",
                        help="overrides, as for snakemake --config")
    parser.add_argument("-d", "--directory", type=Path, default=Path("."),
                        help="the run's working directory (default: here); outputs a run has "
                             "made there and Snakemake would not make again are planned on "
                             "as they are (a staged plan)")
    parser.add_argument("-s", "--snakefile", type=Path, default=None,
                        help="default: the Snakefile of this checkout")
    parser.add_argument("--data-mirror", default=None,
                        help="a local mirror of the raw data (sets data_mirror)")
    parser.add_argument("--cores", type=int, default=2, help="for preparing the data")
    parser.add_argument("--free-text-share", type=float, default=DEFAULT_FREE_TEXT_SHARE,
                        help="share of its token budget a free-text answer (a response, an "
                             "edit) is assumed to fill (default %(default)s)")
    parser.add_argument("--no-calibration", action="store_true",
                        help="do not time a local model here when neither an earlier run's "
                             "ledgers nor an earlier calibration measured it (its hours are "
                             "then assumed)")
    parser.add_argument("--measured-from", type=Path, default=None, metavar="PILOT_DIR",
                        help="a pilot's working directory (runs/pilot after `make pilot`): "
                             "plan with what its calls measured (answers' lengths, thinking, "
                             "batch prompt-cache hits, latency) in place of the assumptions, "
                             "where it measured them")
    parser.add_argument("--rehearsal-answers", action="store_true",
                        help="free-text answers as the rehearsal server gives them (to plan "
                             "a rehearsal)")


def run(args: argparse.Namespace, write_plan) -> int:
    started = time.monotonic()
    snakefile = args.snakefile or Path(__file__).resolve().parents[3] / "Snakefile"
    if not snakefile.is_file():
        print(f"rubriclab plan: no Snakefile at {snakefile} (give -s)", file=sys.stderr)
        return 2
    config_args = list(args.config)
    if args.data_mirror:
        config_args.append(f"data_mirror={Path(args.data_mirror).resolve()}")
    share = None if args.rehearsal_answers else args.free_text_share
    measured = None
    if args.measured_from is not None:
        from .measured import PilotError, read_pilot

        try:
            measured = read_pilot(args.measured_from)
        except PilotError as exc:
            print(f"rubriclab plan: --measured-from: {exc}", file=sys.stderr)
            return 2
    table, markdown, digest = build_plan(snakefile, args.directory, list(args.configfile),
                                         config_args, free_text_share=share, cores=args.cores,
                                         calibrate=not args.no_calibration, measured=measured)
    paths = write_plan(table, markdown, Path(table.attrs["workdir"]), digest)
    print(markdown)
    from .report import worst_case_hours
    from .retirement import retirement_warnings

    for line in retirement_warnings(table, worst_case_hours(table)):
        print(f"warning: {line}", file=sys.stderr)
    print(f"written: {', '.join(str(p) for p in paths)} ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
