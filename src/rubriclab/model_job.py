"""The model client of a workflow job that calls a model: the run's model settings and cache, each
request recorded in the job's ledger. Every model rule's script starts from it (workflow/scripts)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rubriclab.llm import Ledger, LLMClient, LLMConfig


def model_client(config: Mapping[str, Any], ledger_path: str | Path, rule: str,
                 role: str) -> LLMClient:
    """An LLMClient for the models playing `role` (rubriclab.llm.roles) under the run's config
    (its `llm` settings and `cache_dir`), each request recorded in the ledger at `ledger_path`
    as made by `rule` (the rule and the job's wildcards, "carry_judge[recon/<judge>]"). With a
    PostgreSQL cache its bill is the run's (`run`, unset: the unnamed run), which every job of
    the run shares on every host."""
    settings = LLMConfig.from_dict(config["llm"], cache_dir=config["cache_dir"])
    return LLMClient(settings, ledger=Ledger(Path(ledger_path), rule=rule), role=role,
                     run_name=config.get("run"))


def job_client(snakemake: Any, rule: str, role: str) -> LLMClient:
    """model_client of the job a Snakemake script runs in: its config, its output `ledger`."""
    return model_client(snakemake.config, snakemake.output.ledger, rule, role)
