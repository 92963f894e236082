import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer.analysis import Inputs, analyse
from rubriclab.transfer.pipeline import load_rubrics, read_matching, read_responses

configure_logging(snakemake.log[0])
params, inputs = snakemake.params, snakemake.input
examples = pd.read_csv(inputs.examples, keep_default_na=False)
example_ids, rubrics, left_out = load_rubrics(examples, inputs.expert, inputs.rubrics)
read = dict(keep_default_na=False, na_values=["NaN"])
tables = analyse(Inputs(
    examples=example_ids,
    rubrics=rubrics,
    generators=list(params.generators),
    responses=pd.concat([read_responses(path) for path in inputs.responses], ignore_index=True),
    verdicts=pd.concat([pd.read_csv(path, **read) for path in inputs.verdicts], ignore_index=True),
    matching=pd.concat([read_matching(path) for path in inputs.matching], ignore_index=True),
    cosine=pd.read_csv(inputs.cosine, **read),
    main_response_model=params.response_model,
    it_response_models=list(params.it_models),
    panels=dict(params.panels),
    degrader=params.degrader,
    degradation_models=list(params.degradation_models),
    framings=list(params.framings),
    tau=params.tau,
    B=params.bootstrap["B"],
    seed=params.bootstrap["seed"],
))
for name, table in tables.items():
    table.to_csv(snakemake.output[name], index=False, na_rep="NaN")
left_out.to_csv(snakemake.output.left_out, index=False)
