import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import intervene, load_rubrics, model_client, read_responses

configure_logging(snakemake.log[0])
params, inputs = snakemake.params, snakemake.input
examples = pd.read_csv(inputs.examples, keep_default_na=False)
example_ids, rubrics, _ = load_rubrics(examples, inputs.expert, inputs.rubrics)
originals = read_responses(inputs.originals)
originals = originals[originals["example_id"].isin(example_ids)]
verdicts = pd.read_csv(inputs.verdicts, keep_default_na=False)
client, ask = model_client(snakemake.config, snakemake.output.ledger,
                           f"transfer_intervene[{params.model}]",
                           role="editor")
with client:
    edited = intervene(originals, examples, verdicts, rubrics, params.model, params.temperature,
                       params.max_tokens, params.criteria_per_rubric, ask,
                       criterion_edits=params.criterion_edits)
edited.to_csv(snakemake.output.responses, index=False)
