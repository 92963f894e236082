import logging

import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import model_client, restate_expert_rubrics, write_json

configure_logging(snakemake.log[0])
params = snakemake.params
examples = pd.read_csv(snakemake.input.examples, keep_default_na=False)
client, ask = model_client(snakemake.config, snakemake.output.ledger, "transfer_restate",
                           role="restater")
with client:
    expert = restate_expert_rubrics(examples, params.model, params.temperature, ask)
for flag in expert["flags"]:
    logging.warning("restatement flagged: %s: %s", flag["criterion_id"], flag["reason"])
write_json(snakemake.output.expert, expert)
