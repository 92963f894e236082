from rubriclab.carry.analysis import read_chains
from rubriclab.carry.experiment import JudgeSpec, judge_items_and_rubrics, read_items
from rubriclab.carry.sources import read_start_sets, task_description
from rubriclab.model_job import job_client
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, wildcards = snakemake.params, snakemake.wildcards
items = read_items(snakemake.input.carry_items)
starts = read_start_sets(snakemake.input.starts)
chains = [chain.record for chain in read_chains(snakemake.input.chains)]
spec = JudgeSpec(params.judge, params.votes, params.temperature, params.max_tokens)
with job_client(snakemake, f"carry_judge[{wildcards.cdataset}/{params.judge}]", "judge") as client:
    verdicts = judge_items_and_rubrics(
        client, wildcards.cdataset, items, starts, chains, task_description(wildcards.cdataset),
        spec, renderings=params.renderings)
verdicts.to_csv(snakemake.output.verdicts, index=False)
