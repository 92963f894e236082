from pathlib import Path

import pandas as pd

from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging
from rubriclab.transfer.figures import n_examples_of
from rubriclab.transfer.figures_criteria import fig6_criteria_level
from rubriclab.transfer.figures_existing import (
    fig4_existing_approaches, figA1_matching_framings, figA2_panel_sensitivity,
)
from rubriclab.transfer.figures_interventional import (
    fig5_interventional_transfer, figA4_by_response_model,
)

configure_logging(snakemake.log[0])
inputs, outputs, params = snakemake.input, snakemake.output, snakemake.params
read = dict(keep_default_na=False, na_values=["NaN"])
stats = pd.read_csv(inputs.stats, **read)
labels = ModelLabels(params.labels)
out = dict(out_png=Path(outputs.png), out_pdf=Path(outputs.pdf), labels=labels)
figure = snakemake.wildcards.tfigure
model = params.response_model
if figure == "fig4_existing_approaches":
    table = fig4_existing_approaches(stats, **out)
elif figure == "fig5_interventional_transfer":
    table = fig5_interventional_transfer(stats, model, **out)
elif figure == "fig6_criteria_level":
    table = fig6_criteria_level(pd.read_csv(inputs.categories, **read), model,
                                n_examples=n_examples_of(stats), **out)
elif figure == "figA1_matching_framings":
    table = figA1_matching_framings(stats, **out)
elif figure == "figA2_panel_sensitivity":
    table = figA2_panel_sensitivity(stats, **out)
elif figure == "figA4_by_response_model":
    table = figA4_by_response_model(stats, **out)
else:
    raise ValueError(f"unknown transfer figure {figure!r}")
table.to_csv(outputs.csv, index=False)
record_job(outputs.provenance, [outputs.png, outputs.pdf, outputs.csv], snakemake.config,
           params.models, labels, table, sizes={"n_examples": n_examples_of(stats)})
