import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.pipeline import judge_responses, load_rubrics, model_client, read_responses
from rubriclab.transfer.reads import AnalysisReads

configure_logging(snakemake.log[0])
params, inputs = snakemake.params, snakemake.input
examples = pd.read_csv(inputs.examples, keep_default_na=False)
example_ids, rubrics, _ = load_rubrics(examples, inputs.expert, inputs.rubrics)
responses = read_responses(inputs.responses)
responses = responses[responses["example_id"].isin(example_ids)]
client, ask = model_client(snakemake.config, snakemake.output.ledger,
                           f"transfer_judge[{snakemake.wildcards.responses}]",
                           role="transfer_judge")
with client:
    verdicts = judge_responses(responses, examples, rubrics, params.judge, params.votes,
                               params.temperature, ask,
                               reads=AnalysisReads.from_config(**params.reads))
verdicts.to_csv(snakemake.output.verdicts, index=False)
