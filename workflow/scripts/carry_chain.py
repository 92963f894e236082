import json
import logging
from pathlib import Path

from rubriclab.carry.experiment import chain_counts, run_reviser_chain
from rubriclab.carry.sources import read_rubric_set
from rubriclab.model_job import job_client
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, wildcards = snakemake.params, snakemake.wildcards
header, start = read_rubric_set(snakemake.input.start)
name = (f"{wildcards.cdataset}/{wildcards.reviser}/{wildcards.source}-{wildcards.mode}"
        f"-seed{wildcards.seed}")
with job_client(snakemake, f"carry_chain[{name}]", "reviser") as client:
    record = run_reviser_chain(
        start, rounds=params.rounds, mode=wildcards.mode, seed=int(wildcards.seed),
        reviser=params.reviser, temperature=params.temperature, max_tokens=params.max_tokens,
        description=header["task_description"],
        ask=lambda request: client.run([request], label=f"carry chain {name}",
                                       raise_on_failure=True)[0],
        source=wildcards.source)
record = {"dataset": wildcards.cdataset, "source": wildcards.source, **record}
logging.info("chain %s: %s", name, chain_counts(record))
Path(snakemake.output.chain).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
