import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import degrade, model_client, read_json

configure_logging(snakemake.log[0])
params = snakemake.params
examples = pd.read_csv(snakemake.input.examples, keep_default_na=False)
expert = read_json(snakemake.input.expert)
client, ask = model_client(snakemake.config, snakemake.output.ledger,
                           f"transfer_degrade[{params.model}]",
                           role="degrader")
with client:
    responses = degrade(examples, expert, params.model, params.temperature, params.max_tokens,
                        params.seed, ask)
responses.to_csv(snakemake.output.responses, index=False)
