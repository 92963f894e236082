"""carry's plan (dry runs, no model is called): every reviser runs every planned chain."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.pipeline

REPO = Path(__file__).resolve().parents[2]


def dry_run(tmp_path: Path, models: str, *targets: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "-n", "--configfile", str(REPO / "config" / "config.yaml"),
         "--config", f"models={models}", "--", *targets],
        capture_output=True, text=True, timeout=300)


def test_every_reviser_gets_its_own_chains(tmp_path):
    models = ("{'judge': 'fake/hash', 'generator': 'fake/hash', 'reviser': 'fake/hash?salt=a', "
              "'revisers': ['fake/hash?salt=a', 'fake/hash?salt=b']}")
    result = dry_run(tmp_path, models, "figures/carry/table2_gate_replay.md")
    assert result.returncode == 0, result.stderr[-3000:]
    planned = {line.split("results/carry/chains/recon/", 1)[1].split()[0].rstrip(",;")
               for line in result.stdout.splitlines() if "results/carry/chains/recon/" in line}
    slugs = {p.split("/")[0] for p in planned}
    assert len(slugs) == 2 and all(s.startswith("fake_hash_salt_") for s in slugs)
    # config.yaml plans four Recon chains (one seed); each reviser runs all four
    for slug in slugs:
        assert {p.split("/", 1)[1] for p in planned if p.startswith(slug)} == {
            "hand-free-seed1.json", "hand-delete_only-seed1.json", "label-free-seed1.json",
            "label-fixed_count-seed1.json"}


def test_the_main_reviser_must_be_among_the_revisers(tmp_path):
    models = "{'judge': 'fake/hash', 'reviser': 'fake/hash?salt=c', 'revisers': ['fake/hash']}"
    result = dry_run(tmp_path, models, "figures/carry/table2_gate_replay.md")
    assert result.returncode != 0
    assert "config key 'models.revisers'" in result.stderr + result.stdout


def test_the_gate_agreement_table_reads_every_judges_decisions(tmp_path):
    models = "{'judge': 'fake/hash', 'generator': 'fake/hash', 'reviser': 'fake/hash'}"
    carry = "{'judges': ['fake/hash', 'fake/hash?salt=b']}"
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(tmp_path),
         "-n", "-p", "--configfile", str(REPO / "config" / "config.yaml"),
         "--config", f"models={models}", f"carry={carry}", "--",
         "figures/carry/table_gate_agreement.md"],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    block = result.stdout.split("rule carry_gate_agreement:", 1)[1].split("\n\n", 1)[0]
    inputs = block.split("input:", 1)[1].split("\n", 1)[0]
    decisions = [p for p in inputs.split(", ") if p.strip().endswith("decisions.csv")]
    # three datasets x two judges
    assert len(decisions) == 6, block
