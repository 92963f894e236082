import logging

import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import generate_rubrics, model_client, write_json

configure_logging(snakemake.log[0])
params = snakemake.params
examples = pd.read_csv(snakemake.input.examples, keep_default_na=False)
client, ask = model_client(snakemake.config, snakemake.output.ledger,
                           f"transfer_generate[{params.model}]",
                           role="transfer_generator")
with client:
    rubrics = generate_rubrics(examples, params.model, params.temperature, params.max_tokens, ask)
failed = [e for e, r in rubrics["rubrics"].items() if r["status"] != "ok"]
if failed:
    logging.warning("%s: no parseable rubric for %d example(s): %s", params.model, len(failed), failed)
write_json(snakemake.output.rubrics, rubrics)
