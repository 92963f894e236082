"""Named runs side by side: a baseline and a reviser swap, each in runs/<name>/, one cache."""

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

from rubriclab.files import model_slug
from rubriclab.report_items import made_by
from ..shared_runs import SharedRun
from tests.pipeline.test_workflow import REPO, write_config
from tests.snakemake_run import run_snakemake

pytestmark = pytest.mark.pipeline

# Enough of the pipeline to hold jobs that depend on the reviser (Recon's revision chains and
# their judging) and one that does not (Figure 2's judging of SummEdits).
TARGETS = [f"results/carry/judged/recon/{model_slug('fake/hash')}/verdicts.csv",
           "results/carry/fig2/summedits/verdicts.csv"]
SWAP = "models={'reviser': 'fake/hash?salt=another-reviser'}"


def snakemake(launch: Path, config: Path, *extra: str, check: bool = True):
    result = run_snakemake(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--cores", "2",
         "--configfile", str(REPO / "config" / "config.yaml"), str(config), *extra],
        cwd=launch, env={k: v for k, v in os.environ.items() if k != "RUBRICLAB_CACHE"})
    if check and result.returncode != 0:
        pytest.fail(result.failure())
    return result


def ledger(run: Path) -> list[dict]:
    """Every ledger row of the run, its rule without the job's wildcards."""
    rows = []
    for path in sorted((run / "results" / "ledger").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text().splitlines()]
    return [{**row, "rule": row["rule"].split("[")[0]} for row in rows]


def _make_two_named_runs(tmp_path_factory):
    launch = tmp_path_factory.mktemp("launch")
    config = write_config(launch, "fake/hash", n=2)
    settings = yaml.safe_load(config.read_text())
    del settings["cache_dir"]  # the default, .cache/rubriclab of the launching directory
    settings["carry"]["chains"]["recon"] = {"rounds": 1, "chains": ["hand:free", "label:free"]}
    config.write_text(yaml.safe_dump(settings))
    snakemake(launch, config, "--config", "run=baseline", "--", *TARGETS)
    swap = snakemake(launch, config, "--config", "run=reviser-b", "base_run=baseline", SWAP,
                     "--", *TARGETS)
    (launch / "swap.log").write_text(swap.stderr)
    return launch, config


@pytest.fixture(scope="module")
def two_named_runs_attempt(tmp_path_factory) -> SharedRun:
    """The two named runs, made once; its failure is reported by
    test_two_named_runs_completes, and the tests that read it are skipped."""
    return SharedRun.made_by("the two named runs", lambda: _make_two_named_runs(tmp_path_factory))


def test_two_named_runs_completes(two_named_runs_attempt):
    two_named_runs_attempt.completed()


@pytest.fixture
def two_runs(two_named_runs_attempt):
    return two_named_runs_attempt.read()


def test_each_named_run_writes_its_own_folder_and_shares_the_cache(two_runs):
    launch, _ = two_runs
    for name in ("baseline", "reviser-b"):
        run = launch / "runs" / name
        assert (run / TARGETS[0]).is_file()
        assert (run / "data/prepared/summedits.csv").is_file()
        assert (run / "logs").is_dir() and (run / ".snakemake").is_dir()
    assert not (launch / "results").exists() and not (launch / "data").exists()
    assert (launch / ".cache/rubriclab/llm_cache.sqlite").is_file()
    assert not list((launch / "runs").glob("*/.cache"))
    chains = {name: {p.parent.name for p in (launch / "runs" / name).glob("results/carry/chains/recon/*/*.json")}
              for name in ("baseline", "reviser-b")}
    assert chains["baseline"] != chains["reviser-b"] and len(chains["reviser-b"]) == 1


def test_the_swap_pays_only_for_the_reviser_and_the_checks_it_changed(two_runs):
    launch, _ = two_runs
    baseline, swap = (ledger(launch / "runs" / name) for name in ("baseline", "reviser-b"))
    paid_before = {r["key"] for r in baseline if r["cached"] is False}
    assert paid_before
    paid = [r for r in swap if not r["cached"]]
    assert {r["rule"] for r in paid} <= {"carry_chain", "carry_judge"}
    assert any(r["rule"] == "carry_chain" for r in paid)
    # Every judge call the two runs share was answered by the cache in the second.
    shared = [r for r in swap if r["key"] in {b["key"] for b in baseline}]
    assert shared and all(r["cached"] for r in shared)
    assert {r["rule"] for r in shared} >= {"carry_fig2_judge", "carry_judge"}
    assert all(r["cached"] for r in swap if r["rule"] == "carry_fig2_judge")


def test_the_swap_runs_only_the_jobs_that_depend_on_the_reviser(two_runs):
    launch, config = two_runs
    log = (launch / "swap.log").read_text()
    ran = {line.split()[-1].rstrip(":") for line in log.splitlines()
           if line.startswith(("rule ", "localrule "))}
    assert ran == {"carry_chain", "carry_judge"}
    assert "base_run " in log and "are copied here" in log
    # Figure 2's judging, which no reviser touches, is the baseline's, copied as it was.
    fig2 = "results/carry/fig2/summedits/verdicts.csv"
    baseline, swap = (launch / "runs" / name for name in ("baseline", "reviser-b"))
    assert (swap / fig2).read_bytes() == (baseline / fig2).read_bytes()
    assert (swap / fig2).stat().st_mtime == (baseline / fig2).stat().st_mtime
    # with the log and benchmark of the job that made it
    for path in ("logs/carry_fig2_judge/summedits.log",
                 "results/benchmarks/carry_fig2_judge/summedits.tsv"):
        assert (swap / path).read_bytes() == (baseline / path).read_bytes()
    dry = snakemake(launch, config, "-n", "--config", "run=reviser-b", "base_run=baseline",
                    SWAP, "--", *TARGETS)
    assert "Nothing to be done" in dry.stdout


def test_the_swap_records_what_it_copied_for_the_report(two_runs):
    launch, _ = two_runs
    swap = launch / "runs" / "reviser-b"
    fig2 = "results/carry/fig2/summedits/verdicts.csv"
    assert made_by(fig2, "baseline", swap)["made by"] == "copied from base run baseline"
    chains = sorted(swap.glob("results/carry/chains/recon/*/*.json"))
    assert chains and made_by(chains[0].relative_to(swap), "baseline", swap)["made by"] == \
        "this run"


def test_a_dry_run_of_an_ablation_copies_and_writes_nothing(two_runs):
    launch, config = two_runs
    other = "models={'reviser': 'fake/hash?salt=a-third-reviser'}"
    dry = snakemake(launch, config, "-n", "--config", "run=reviser-c", "base_run=baseline",
                    other, "--", *TARGETS)
    assert "(dry run: nothing is copied)" in dry.stderr
    copied = int(re.search(r"jobs, (\d+) are up to date there", dry.stderr).group(1))
    assert copied > 0
    folder = launch / "runs" / "reviser-c"
    written = [p for p in folder.rglob("*") if p.is_file()
               and ".snakemake" not in p.relative_to(folder).parts]
    assert written == []
    # Snakemake's own bookkeeping only (its lock and inventory), no copied output or record
    assert sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) < 100_000


def test_the_swap_leaves_the_baseline_as_it_was(two_runs):
    launch, config = two_runs
    plan = snakemake(launch, config, "-n", "--config", "run=baseline", "--", *TARGETS).stdout
    assert "Nothing to be done" in plan


def test_a_named_run_with_directory_is_refused(two_runs, tmp_path):
    launch, config = two_runs
    result = snakemake(launch, config, "-n", "-d", str(tmp_path), "--config", "run=x", check=False)
    assert result.returncode != 0
    assert "--directory cannot be given too" in result.stderr + result.stdout
