import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import model_client, respond

configure_logging(snakemake.log[0])
params = snakemake.params
model, sample = params.responder.rsplit("|", 1)
examples = pd.read_csv(snakemake.input.examples, keep_default_na=False)
client, ask = model_client(snakemake.config, snakemake.output.ledger,
                           f"transfer_respond[{params.responder}]",
                           role="responder")
with client:
    responses = respond(examples, model, int(sample), params.temperature, params.max_tokens, ask)
responses.to_csv(snakemake.output.responses, index=False)
