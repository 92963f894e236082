import json
from pathlib import Path

from rubriclab.carry.experiment import JudgeSpec, judge_items_and_rubrics, read_items
from rubriclab.carry.sources import read_rubric_set
from rubriclab.llm import Ledger, LLMClient, LLMConfig
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, wildcards = snakemake.params, snakemake.wildcards
items = read_items(snakemake.input.carry_items)
starts = {header["source"]: rubrics for header, rubrics in
          (read_rubric_set(path) for path in snakemake.input.starts)}
description = read_rubric_set(snakemake.input.starts[0])[0]["task_description"]
chains = [json.loads(Path(path).read_text(encoding="utf-8")) for path in snakemake.input.chains]
config = LLMConfig.from_dict(snakemake.config["llm"], cache_dir=snakemake.config["cache_dir"])
ledger = Ledger(snakemake.output.ledger, rule=f"carry_judge[{wildcards.cdataset}/{params.judge}]")
spec = JudgeSpec(params.judge, params.votes, params.temperature, params.max_tokens)
with LLMClient(config, ledger=ledger) as client:
    verdicts = judge_items_and_rubrics(
        client, wildcards.cdataset, items, starts, chains, description, spec,
        renderings=params.renderings)
verdicts.to_csv(snakemake.output.verdicts, index=False)
