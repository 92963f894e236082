"""The budget guard through Snakemake: a job that would take the run's bill past
`llm.budget_usd` stops the run, and a rerun with a larger budget (given with --config) goes on
from the cache, paying for nothing twice."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rubriclab.llm.budget import SpendRecord
from rubriclab.llm.ledger import attempts_path, read_ledgers
from rubriclab.llm.pricing import price

from ..snakemake_run import run_snakemake
from .openai_stub import ScriptedOpenAIServer

pytestmark = [pytest.mark.pipeline, pytest.mark.long]

REPO = Path(__file__).resolve().parents[2]
JUDGE = "openai/gpt-4o-mini"  # priced by litellm's map; answered by the loopback server
TARGET = "results/ledger/verify_judge_labels-summedits.jsonl"


def snakemake(workdir: Path, config: Path, *extra: str) -> subprocess.CompletedProcess:
    return run_snakemake(
        [sys.executable, "-m", "snakemake", TARGET, "-s", str(REPO / "Snakefile"),
         "-d", str(workdir), "--cores", "1",
         "--configfile", str(REPO / "config" / "config.yaml"), str(config), *extra],
        env={**os.environ, "OPENAI_API_KEY": "sk-test-not-a-secret"})


def test_a_budget_stops_the_run_and_a_larger_one_finishes_it_from_the_cache(tmp_path):
    # A judge prompt is some 2,000 characters, about 500 tokens: the budget holds a handful of
    # calls' worst cases (a prompt estimated high, and the whole answer budget).
    budget = 6 * price(JUDGE, 700, 16)
    with ScriptedOpenAIServer([], then="Yes", prompt_tokens=None) as server:
        config = tmp_path / "budget.yaml"
        config.write_text(yaml.safe_dump({
            "data_mirror": str((REPO / ".." / "shared" / "data").resolve()),
            "cache_dir": str(tmp_path / "cache"),
            "models": {"judge": JUDGE},
            "llm": {"budget_usd": budget,
                    "per_model": {JUDGE: {"api_base": server.api_base, "concurrency": 2,
                                          "placeholder_api_key": True,
                                          "backoff_s": 0.0}}},
            "datasets": {"summedits": {"evaluation": {"correct": 2, "flawed": 2},
                                       "calibration": {"correct": 2, "flawed": 2}}},
        }))
        stopped = snakemake(tmp_path, config)
        assert stopped.returncode != 0
        log = (tmp_path / "logs" / "verify_judge_labels").glob("*.log")
        text = stopped.stderr + "".join(p.read_text() for p in log)
        assert "BudgetExceeded" in text and "llm.budget_usd" in text
        journal = attempts_path(tmp_path / TARGET)
        paid = read_ledgers([journal])
        assert 0 < len(paid) and paid["cost_usd"].sum() <= budget
        assert len(server.requests) == len(paid)

        finished = snakemake(tmp_path, config, "--config", "llm={budget_usd: 1}")
        assert finished.returncode == 0, finished.stderr[-3000:]
        ledger = read_ledgers([tmp_path / TARGET])
        assert (ledger["outcome"] == "ok").all()
        assert ledger["cached"].sum() == len(paid)  # the first run's answers, from the cache
        assert len(paid) < len(ledger)  # the first run stopped before the end
        asked = [json.dumps(body["messages"]) for body in server.requests]
        assert len(asked) == len(ledger) and len(set(asked)) == len(asked)  # none paid twice
    bill = SpendRecord(tmp_path / "results" / "ledger" / "spend.sqlite").bill()
    assert bill.calls == len(ledger)
    assert bill.settled_usd == pytest.approx(read_ledgers([journal])["cost_usd"].sum())
