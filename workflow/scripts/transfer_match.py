import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import (
    EXPERT, load_rubrics, match_rubrics, model_client, write_matching,
)

configure_logging(snakemake.log[0])
params, inputs = snakemake.params, snakemake.input
examples = pd.read_csv(inputs.examples, keep_default_na=False)
example_ids, rubrics, _ = load_rubrics(examples, inputs.expert, [inputs.rubrics])
client, ask = model_client(snakemake.config, snakemake.output.ledger,
                           f"transfer_match[{params.generator}]",
                           role="matcher")
with client:
    matching = match_rubrics(examples, rubrics[EXPERT], rubrics[params.generator],
                             params.generator, params.model, params.temperature,
                             params.framings, ask)
write_matching(matching, snakemake.output.matching)
