"""`make rehearse`: a config's whole run through litellm's real HTTP path, offline.

Every model string of the config keeps its provider prefix (so litellm builds the request it
would send to OpenAI, Anthropic, Google, DeepSeek, xAI or OpenRouter) and is pointed at a
`RehearsalServer` on 127.0.0.1 through `llm.per_model.<model>.api_base`, in an overlay config
written beside the run. The server starts before Snakemake and stops after it. Afterwards the
run's sizes are checked against its own effective config (and, with `--expect paper`, against
the papers' sizes), and a report gives wall time, requests, calls per second and the faults met.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from rubriclab.files import model_slug
from rubriclab.llm.ledger import read_ledgers
from rubriclab.plan import build_plan
from rubriclab.plan.compare import by_rule, comparison_markdown, plan_against_ledger
from rubriclab.plan.compare import problems as plan_problems
from rubriclab.plan.report import write_plan

from . import REHEARSAL_FINGERPRINT
from .server import FaultMix, ReasoningModel, RehearsalServer

REPO = Path(__file__).resolve().parents[3]
# Providers whose requests litellm sends in the OpenAI chat-completions format: their api_base
# ends in /v1, as the real ones do. anthropic/ and gemini/ take the bare server address.
OPENAI_COMPATIBLE = ("openai", "deepseek", "xai", "openrouter", "nebius", "zai")
SPOKEN = OPENAI_COMPATIBLE + ("anthropic", "gemini")
# Keys litellm checks for each provider: placeholders, set for the rehearsal's run only.
PLACEHOLDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "DEEPSEEK_API_KEY",
                    "XAI_API_KEY", "OPENROUTER_API_KEY", "NEBIUS_API_KEY", "ZAI_API_KEY")
# Models that think whether or not an effort is asked for (as the providers document them),
# by the name the provider sees. xAI's grok-4.20-0309-non-reasoning (paper.yaml's Grok) does
# not think; GPT-5.1 thinks only at an effort other than its default, none.
THINKING_BY_DEFAULT = ("gemini-3.8-flash", "gpt-5.6-terra", "claude-opus-5", "qwen/qwq-32b",
                       "qwen/qwen3-30b-a3b", "Qwen/Qwen3.8-27B", "deepseek-v4-flash",
                       "glm-5.3-flash")
BATCH_POLL_S = 0.2
# The papers' sizes (carry: 12 Recon environments, three judges; transfer: 105 examples, an
# eight-model panel; verify: 500 trials, the paper.yaml scale).
PAPER_SIZES = {"recon_environments": 12, "carry_judges": 3, "transfer_examples": 105,
               "panel": 8, "verify_trials": 500}


class RehearsalFailed(RuntimeError):
    pass


def merged_config(paths: Iterable[str | Path]) -> dict[str, Any]:
    """Config files merged in order, as Snakemake merges them (rubriclab.config's loader)."""
    from rubriclab.config import merged_config as merged

    return merged(list(paths))


def model_strings(config: Mapping[str, Any]) -> list[str]:
    """Every model string a config names (panel entries without their '@sample')."""
    found: list[str] = []
    models = config.get("models") or {}
    for value in models.values():  # a model string, or a list of them (models.revisers)
        found += [value] if isinstance(value, str) else list(value or [])
    carry = config.get("carry") or {}
    found += list(carry.get("judges") or [])
    transfer = config.get("transfer") or {}
    for key in ("generators", "it_response_models", "panel", "degradation_models"):
        found += list(transfer.get(key) or [])
    for entries in (transfer.get("panel_choices") or {}).values():
        found += list(entries)
    for key in ("response_model", "degrader", "judge", "restater", "matcher"):
        if transfer.get(key):
            found.append(transfer[key])
    return sorted({m.partition("@")[0] for m in found})


def provider(model: str) -> str:
    return model.split("/", 1)[0]


def overlay(config: Mapping[str, Any], server_url: str, workdir: Path,
            data_mirror: str) -> dict[str, Any]:
    """The rehearsal's additions to the config: each model at the server, short timeouts."""
    per_model = {}
    unspoken = []
    for model in model_strings(config):
        name = provider(model)
        if name in ("fake", "local"):
            continue
        if name not in SPOKEN:
            unspoken.append(model)
            continue
        per_model[model] = {
            "api_base": server_url + ("/v1" if name in OPENAI_COMPATIBLE else ""),
            # The endpoint is part of a remote model's cache key; the server's port changes
            # from run to run, so the rehearsal declares the model's identity instead: a rerun
            # in the same workdir finds its answers, and none passes for the provider's.
            "fingerprint": REHEARSAL_FINGERPRINT,
            # The server needs no key: it is sent the placeholder, never a key of the
            # environment (nor would it be: it is not the provider's own API).
            "placeholder_api_key": True,
            # The server's hangs last longer than this; retries wait little (they are not the
            # provider's real limits, which a paid run meets with the config's own settings).
            "timeout_s": 2.0, "backoff_s": 0.05, "max_backoff_s": 1.0, "num_retries": 8,
            # A batch (where the config sets batch: true) is polled often: the server answers
            # one in seconds, not the provider's hours.
            "batch_poll_s": BATCH_POLL_S,
        }
    if unspoken:
        raise RehearsalFailed(f"the rehearsal server does not speak the wire format of "
                              f"{unspoken} (it speaks {', '.join(SPOKEN)})")
    return {"data_mirror": data_mirror, "cache_dir": str(workdir / "cache"),
            "llm": {"per_model": per_model}}


def serve_models_of(server: RehearsalServer, config: Mapping[str, Any]) -> None:
    """The config's models, as their providers name them, served and listed by the server's
    models endpoints (besides any it serves already): the checks before the first job look
    each up there (the preflight, llm.preflight), as they would at the providers, whose
    lists (DeepSeek's, OpenRouter's, ...) name the models they serve."""
    named = {model.split("/", 1)[1] for model in model_strings(config)
             if provider(model) in SPOKEN}
    catalog = server.models
    server.models = dataclasses.replace(catalog,
                                        served=frozenset(named | set(catalog.served or ())))


def snakemake_command(configfiles: list[Path], workdir: Path, cores: int,
                      extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
            "--cores", str(cores), *extra, "--configfile", *map(str, configfiles)]


# --- sizes ----------------------------------------------------------------------------------

def expected_sizes(effective: Mapping[str, Any]) -> dict[str, int]:
    """What the effective config says the run holds."""
    from rubriclab.recon.environments import ENVIRONMENT_KEYS

    carry, transfer = effective["carry"], effective["transfer"]
    environments = carry["recon"]["environments"] or list(ENVIRONMENT_KEYS)
    health = effective["datasets"]["healthbench"]
    n_examples = transfer["n_examples"] or health["per_theme"] * len(health["themes"])
    return {"recon_environments": len(environments),
            "carry_judges": len(carry["judges"] or [effective["models"]["judge"]]),
            "transfer_examples": n_examples,
            "panel": len(transfer["panel"]),
            "verify_trials": effective["verify"]["trials"]}


def measured_sizes(workdir: Path) -> dict[str, int]:
    """What the run's outputs hold."""
    results = workdir / "results"
    judged_dirs = sorted(p for p in (results / "carry" / "judged" / "recon").iterdir()
                         if p.is_dir())
    environments = set()
    for judged in judged_dirs:  # Recon item ids are "recon:<environment>:<report>"
        verdicts = pd.read_csv(judged / "verdicts.csv", keep_default_na=False,
                               usecols=["item_id"])
        environments |= {item.split(":")[1] for item in verdicts["item_id"].unique()}
    examples = pd.read_csv(results / "transfer" / "examples.csv", keep_default_na=False)
    trials = pd.read_csv(results / "verify" / "trials.csv", keep_default_na=False)
    return {"recon_environments": len(environments),
            # a judge may judge other datasets than Recon only (carry.all_judges_on)
            "carry_judges": len({p.name for p in (results / "carry" / "judged").glob("*/*")
                                 if p.is_dir()}),
            "transfer_examples": len(examples),
            "panel": _panel_responses(workdir),
            "verify_trials": len(trials)}


def _panel_responses(workdir: Path) -> int:
    """Panel entries ("model@sample") with a response table of their own."""
    effective = yaml.safe_load((workdir / "results" / "effective_config.yaml").read_text())
    answered = 0
    for entry in effective["transfer"]["panel"]:
        model, _, sample = entry.partition("@")
        responder = f"{model}|{int(sample or 0)}"
        slug = model_slug(responder)
        answered += (workdir / "results" / "transfer" / "responses" / f"original-{slug}.csv").is_file()
    return answered


# --- the ledger -----------------------------------------------------------------------------

def ledger_summary(workdir: Path) -> dict[str, Any]:
    rows = []
    for path in sorted((workdir / "results" / "ledger").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines() if line]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return {"requests": 0}
    outcomes = frame["outcome"].value_counts().to_dict()
    batched = frame[frame["batch"].fillna(False).astype(bool)] if "batch" in frame else frame[:0]
    return {"requests": int(len(frame)), "cached": int(frame["cached"].sum()),
            "batch_by_provider": {name: int(n) for name, n in
                                  batched["model"].map(provider).value_counts().items()},
            "outcomes": {k: int(v) for k, v in outcomes.items()},
            "attempts": int(frame["attempts"].sum()), "reasks": int(frame["reasks"].sum()),
            "cut_off_failures": int(frame["error"].fillna("").str.startswith("AnswerCutOff").sum()),
            "prompt_tokens": int(frame["prompt_tokens"].sum()),
            "completion_tokens": int(frame["completion_tokens"].sum())}


# --- the whole rehearsal --------------------------------------------------------------------

def stop_group(process: subprocess.Popen, grace_s: float = 60.0) -> None:
    """Stop a process started in a session of its own, with every job it started: SIGTERM
    first (its model jobs store their calls in flight), SIGKILL after `grace_s`."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 60.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def rehearse(configfiles: list[Path], workdir: Path, *, cores: int, data_mirror: str,
             expect_paper: bool, faults: FaultMix, seed: int = 0,
             snakemake_args: list[str] | None = None,
             bound_s: float | None = None) -> dict[str, Any]:
    """Rehearse the run of `configfiles` in `workdir` against the rehearsal server. `bound_s`:
    the longest its snakemake may run (None: no bound); past it, snakemake and its jobs are
    stopped as a group and RehearsalFailed says so."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = merged_config(configfiles)
    reasoning = {name: ReasoningModel() for name in THINKING_BY_DEFAULT}
    with RehearsalServer(faults=faults, seed=seed, reasoning=reasoning) as server:
        serve_models_of(server, config)
        overlay_path = workdir / "rehearsal_overlay.yaml"
        overlay_path.write_text(yaml.safe_dump(overlay(config, server.url, workdir, data_mirror)))
        env = {**os.environ, **{key: "rehearsal-placeholder" for key in PLACEHOLDER_KEYS}}
        # The plan first, as a researcher would make it before paying: the rehearsal then
        # checks the bill against it.
        plan_started = time.monotonic()
        planned, plan_md, digest = build_plan(REPO / "Snakefile", workdir,
                                              [*configfiles, overlay_path], [],
                                              free_text_share=None, cores=cores)
        write_plan(planned, plan_md, workdir, digest)
        plan_s = time.monotonic() - plan_started
        command = snakemake_command([*configfiles, overlay_path], workdir, cores,
                                    snakemake_args or [])
        started = time.monotonic()
        with open(workdir / "rehearsal_snakemake.log", "w", encoding="utf-8") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                       cwd=REPO, start_new_session=True)
            try:
                returncode = process.wait(timeout=bound_s)
            except subprocess.TimeoutExpired:
                returncode = None
            finally:
                if process.poll() is None:  # past its bound, or this process interrupted
                    stop_group(process)
        wall_s = time.monotonic() - started
        stats = server.stats_dict()
    report: dict[str, Any] = {"wall_s": round(wall_s, 1), "returncode": returncode,
                              "server": stats, "command": command, "plan_s": round(plan_s, 1)}
    if returncode != 0:
        tail = (workdir / "rehearsal_snakemake.log").read_text()[-3000:]
        how = (f"ran past its bound of {bound_s:g} s and was stopped with its jobs"
               if returncode is None else f"exited {returncode}")
        raise RehearsalFailed(f"snakemake {how} after {wall_s:.0f} s; "
                              f"the end of {workdir / 'rehearsal_snakemake.log'}:\n{tail}")
    effective = yaml.safe_load((workdir / "results" / "effective_config.yaml").read_text())
    report["expected"] = expected_sizes(effective)
    report["measured"] = measured_sizes(workdir)
    report["ledger"] = ledger_summary(workdir)
    served = sum(stats["requests"].values())
    report["calls_per_s"] = round(served / wall_s, 1) if wall_s else None
    problems = [f"{name}: the config says {report['expected'][name]}, the outputs hold "
                f"{report['measured'][name]}" for name in report["expected"]
                if report["expected"][name] != report["measured"][name]]
    if expect_paper:
        problems += [f"{name}: the paper's size is {size}, the run's config says "
                     f"{report['expected'][name]}" for name, size in PAPER_SIZES.items()
                     if report["expected"][name] != size]
    against = plan_against_ledger(planned, read_ledgers(
        sorted((workdir / "results" / "ledger").glob("*.jsonl"))))
    report["plan"] = {"config_digest": digest,
                      "by_rule": by_rule(against).to_dict(orient="records"),
                      "problems": plan_problems(against)}
    problems += report["plan"]["problems"]
    (workdir / "rehearsal_report.json").write_text(json.dumps(report, indent=2, default=str))
    (workdir / "rehearsal_report.md").write_text(render_report(report, problems,
                                                               comparison_markdown(against)))
    if problems:
        raise RehearsalFailed("the rehearsal does not hold:\n  " + "\n  ".join(problems))
    return report


def render_report(report: Mapping[str, Any], problems: list[str],
                  plan_lines: Sequence[str] = ()) -> str:
    ledger, server = report["ledger"], report["server"]
    lines = ["# Rehearsal", "",
             f"Wall time {report['wall_s']:.0f} s; {sum(server['requests'].values())} requests "
             f"reached the server ({report['calls_per_s']} per second): "
             + ", ".join(f"{n} {wire}" for wire, n in sorted(server["requests"].items())) + ".",
             "", "| size | config | outputs |", "| --- | --- | --- |"]
    lines += [f"| {name} | {report['expected'][name]} | {report['measured'][name]} |"
              for name in report["expected"]]
    lines += ["", f"Ledger: {ledger.get('requests', 0)} requests, outcomes "
              f"{ledger.get('outcomes', {})}, {ledger.get('attempts', 0)} attempts, "
              f"{ledger.get('reasks', 0)} re-asks, {ledger.get('cut_off_failures', 0)} failed "
              "as cut off by their budget; answered by a provider's batch API: "
              + (", ".join(f"{n} {name}" for name, n in
                           sorted(ledger.get("batch_by_provider", {}).items())) or "none")
              + ".",
              f"Faults served: {server['faults']}; answers cut off by their budget: "
              f"{server['cut_off']}.",
              f"Free requests (GETs no provider bills: the preflight's models lookups, key "
              f"checks, batch lists and polls): {server.get('free_requests', {})}.", ""]
    if plan_lines:
        lines += [f"The plan, made before the run in {report.get('plan_s', 0):.0f} s "
                  "(`rubriclab plan`, rehearsal answers), beside the ledger:", "", *plan_lines,
                  ""]
    lines += ["Sizes and plan hold." if not problems else "What does not hold:"]
    lines += [f"- {p}" for p in problems]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rubriclab.rehearsal", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configfile", nargs="+", type=Path,
                        default=[REPO / "config" / "paper.yaml"])
    parser.add_argument("--workdir", type=Path, default=REPO / "rehearsal")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--data-mirror", default=os.environ.get("RUBRICLAB_DATA_MIRROR"),
                        help="folder of the data copies (default $RUBRICLAB_DATA_MIRROR)")
    parser.add_argument("--expect", choices=["paper", "config"], default="config",
                        help="paper: also check the papers' sizes (12 Recon environments, "
                             "105 examples, 3 carry judges, an 8-model panel, 500 trials)")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args, snakemake_args = parser.parse_known_args(argv)
    if not args.data_mirror:
        parser.error("the rehearsal runs offline: give --data-mirror or RUBRICLAB_DATA_MIRROR")
    faults = FaultMix.none() if args.no_faults else FaultMix()
    try:
        rehearse([p.resolve() for p in args.configfile], args.workdir.resolve(),
                 cores=args.cores, data_mirror=str(Path(args.data_mirror).resolve()),
                 expect_paper=args.expect == "paper", faults=faults, seed=args.seed,
                 snakemake_args=snakemake_args)
    except RehearsalFailed as exc:
        print(f"rehearsal failed: {exc}", file=sys.stderr)
        return 1
    print((args.workdir / "rehearsal_report.md").read_text())
    return 0
