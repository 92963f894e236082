import logging

from rubriclab.carry.experiment import read_items
from rubriclab.carry.sources import build_model_rubric, write_rubric_set
from rubriclab.model_job import job_client
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, wildcards = snakemake.params, snakemake.wildcards
items = read_items(snakemake.input.teaching)
rule = f"carry_rubric[{wildcards.cdataset}/{wildcards.source}]"
with job_client(snakemake, rule, "generator") as client:
    rubrics, meta = build_model_rubric(
        client, wildcards.cdataset, wildcards.source, items, model=params.model,
        n_checks=params.n_checks, temperature=params.temperature, max_tokens=params.max_tokens,
        examples_per_label=params.examples_per_label, seed=params.seed)
logging.info("%s %s rubric: %s", wildcards.cdataset, wildcards.source,
             {scope: len(rubric) for scope, rubric in rubrics.items()})
write_rubric_set(snakemake.output.rubric, wildcards.cdataset, wildcards.source, rubrics, meta)
