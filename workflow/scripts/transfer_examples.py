import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import choose_examples, physician_responses

configure_logging(snakemake.log[0])
params = snakemake.params
sample = pd.read_csv(snakemake.input.sample, keep_default_na=False)
examples, left_out = choose_examples(sample, params.n, params.max_criteria,
                                     params.max_conversation_chars)
examples.to_csv(snakemake.output.examples, index=False)
left_out.to_csv(snakemake.output.left_out, index=False)
physician_responses(examples).to_csv(snakemake.output.physician, index=False)
