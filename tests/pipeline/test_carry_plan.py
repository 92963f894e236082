"""carry's plan (dry runs, no model is called): every reviser runs carry.chains.<d>.chains,
the main reviser also main_reviser_chains."""

import subprocess
import sys
from pathlib import Path

import pytest

from rubriclab.files import model_slug
from tests.snakemake_run import DRY_RUN_BOUND_S, run_snakemake

pytestmark = pytest.mark.pipeline

REPO = Path(__file__).resolve().parents[2]


def dry_run(tmp_path: Path, models: str, *targets: str, carry: str | None = None
            ) -> subprocess.CompletedProcess:
    return run_snakemake(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "-n", "--configfile", str(REPO / "config" / "config.yaml"),
         "--config", f"models={models}", *([f"carry={carry}"] if carry else []), "--",
         *targets], bound_s=DRY_RUN_BOUND_S)


def test_every_reviser_runs_the_papers_chains_and_the_main_one_the_rest(tmp_path):
    models = ("{'judge': 'fake/hash', 'generator': 'fake/hash', 'reviser': 'fake/hash?salt=a', "
              "'revisers': ['fake/hash?salt=a', 'fake/hash?salt=b']}")
    result = dry_run(tmp_path, models, "figures/carry/table2_gate_replay.md",
                     "figures/carry/fig4_self_review_drift.png")
    assert result.returncode == 0, result.stderr[-3000:]
    planned = {line.split("results/carry/chains/recon/", 1)[1].split()[0].rstrip(",;")
               for line in result.stdout.splitlines() if "results/carry/chains/recon/" in line}
    by_slug = {}
    for path in planned:
        slug, name = path.split("/", 1)
        by_slug.setdefault(slug.rsplit("-", 1)[0], set()).add(name)  # slug-<hash>
    # config.yaml: chains [hand:free, label:free] (every reviser), main_reviser_chains
    # [hand:delete_only, label:fixed_count] (the main reviser, salt=a), one seed
    assert by_slug == {
        "fake_hash_salt_a": {"hand-free-seed1.json", "label-free-seed1.json",
                             "hand-delete_only-seed1.json", "label-fixed_count-seed1.json"},
        "fake_hash_salt_b": {"hand-free-seed1.json", "label-free-seed1.json"}}


def test_a_chain_in_both_lists_stops_the_plan(tmp_path):
    models = "{'judge': 'fake/hash', 'generator': 'fake/hash', 'reviser': 'fake/hash'}"
    carry = ("{'chains': {'recon': {'rounds': 1, 'chains': ['hand:free', 'label:free'], "
             "'main_reviser_chains': ['label:free']}}}")
    result = dry_run(tmp_path, models, "figures/carry/table2_gate_replay.md", carry=carry)
    assert result.returncode != 0
    assert ("config key 'carry.chains.recon.main_reviser_chains': 'label:free' is also in "
            "carry.chains.recon.chains") in result.stderr + result.stdout


def test_the_main_reviser_must_be_among_the_revisers(tmp_path):
    models = "{'judge': 'fake/hash', 'reviser': 'fake/hash?salt=c', 'revisers': ['fake/hash']}"
    result = dry_run(tmp_path, models, "figures/carry/table2_gate_replay.md")
    assert result.returncode != 0
    assert "config key 'models.revisers'" in result.stderr + result.stdout


def agreement_inputs(tmp_path: Path, carry: str) -> list[str]:
    models = "{'judge': 'fake/hash', 'generator': 'fake/hash', 'reviser': 'fake/hash'}"
    result = run_snakemake(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "-n", "-p", "--configfile", str(REPO / "config" / "config.yaml"),
         "--config", f"models={models}", f"carry={carry}", "--",
         "figures/carry/table_gate_agreement.md"], bound_s=DRY_RUN_BOUND_S)
    assert result.returncode == 0, result.stderr[-3000:]
    block = result.stdout.split("rule carry_gate_agreement:", 1)[1].split("\n\n", 1)[0]
    inputs = block.split("input:", 1)[1].split("\n", 1)[0]
    return [p.strip() for p in inputs.split(", ") if p.strip().endswith("decisions.csv")]


def test_the_gate_agreement_table_reads_every_judges_decisions(tmp_path):
    # carry.all_judges_on [recon] (the default): recon x two judges; the main judge's
    # summedits and ragtruth decisions would agree with themselves, so they are not read
    decisions = agreement_inputs(tmp_path, "{'judges': ['fake/hash', 'fake/hash?salt=b']}")
    assert sorted(p.split("/")[3] for p in decisions) == ["recon", "recon"], decisions
    # three datasets x two judges
    decisions = agreement_inputs(tmp_path, "{'judges': ['fake/hash', 'fake/hash?salt=b'], "
                                           "'all_judges_on': ['recon', 'summedits', 'ragtruth']}")
    assert len(decisions) == 6, decisions
    # one judge: it judges every dataset, and the table covers them all
    assert len(agreement_inputs(tmp_path, "{'judges': ['fake/hash']}")) == 3


def judged(tmp_path: Path, carry: str) -> set[tuple[str, str]]:
    """(dataset, judge slug) of every carry_judge job a dry run of the carry outputs plans."""
    models = "{'judge': 'fake/hash', 'generator': 'fake/hash', 'reviser': 'fake/hash'}"
    result = dry_run(tmp_path, models, "results/carry/rates.csv", "figures/verdicts.html",
                     "figures/carry/table_gate_agreement.md", "figures/cost_report.md",
                     carry=carry)
    assert result.returncode == 0, result.stderr[-3000:]
    found = set()
    for block in result.stdout.split("rule carry_judge:")[1:]:
        wildcards = block.split("wildcards: ", 1)[1].split("\n", 1)[0]
        named = dict(part.split("=", 1) for part in wildcards.split(", "))
        found.add((named["cdataset"], named["judge"]))
    return found


def test_the_other_judges_judge_only_the_datasets_of_all_judges_on(tmp_path):
    """Only Recon by default (Figure 1b and Table 2 read the three judges there); the main
    judge judges every dataset. Opting in adds the other judge's summedits and ragtruth jobs."""
    main, other = model_slug("fake/hash"), model_slug("fake/hash?salt=b")
    default = judged(tmp_path, "{'judges': ['fake/hash', 'fake/hash?salt=b']}")
    assert default == {("recon", main), ("summedits", main), ("ragtruth", main),
                       ("recon", other)}
    every = judged(tmp_path, "{'judges': ['fake/hash', 'fake/hash?salt=b'], "
                             "'all_judges_on': ['recon', 'summedits', 'ragtruth']}")
    assert every == {(d, j) for d in ("recon", "summedits", "ragtruth") for j in (main, other)}
