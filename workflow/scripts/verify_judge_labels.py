import pandas as pd

from rubriclab.carry.judge_fig2 import judge_items, read_checklist_json
from rubriclab.llm import Ledger, LLMClient, LLMConfig
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params = snakemake.params
dataset = snakemake.wildcards.dataset
items = pd.read_csv(snakemake.input.table, keep_default_na=False)
config = LLMConfig.from_dict(snakemake.config["llm"], cache_dir=snakemake.config["cache_dir"])
ledger = Ledger(snakemake.output.ledger, rule=f"verify_judge_labels[{dataset}]")
with LLMClient(config, ledger=ledger, role="judge") as client:
    verdicts = judge_items(
        client, items, read_checklist_json(snakemake.input.checklist), lengths=[params.length],
        runs=1, judge=params.judge, temperature=params.temperature, max_tokens=params.max_tokens,
        label=f"verify judge labels {dataset}",
    )
verdicts.to_csv(snakemake.output.verdicts, index=False)
