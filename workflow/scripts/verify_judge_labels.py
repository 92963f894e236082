import pandas as pd

from rubriclab.carry.judge_fig2 import judge_items, read_checklist_json
from rubriclab.model_job import job_client
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params = snakemake.params
dataset = snakemake.wildcards.dataset
items = pd.read_csv(snakemake.input.table, keep_default_na=False)
with job_client(snakemake, f"verify_judge_labels[{dataset}]", "judge") as client:
    verdicts = judge_items(
        client, items, read_checklist_json(snakemake.input.checklist), lengths=[params.length],
        runs=1, judge=params.judge, temperature=params.temperature, max_tokens=params.max_tokens,
        label=f"verify judge labels {dataset}",
    )
verdicts.to_csv(snakemake.output.verdicts, index=False)
