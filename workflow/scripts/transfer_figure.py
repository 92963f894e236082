from pathlib import Path

import pandas as pd

from rubriclab.runtime import configure_logging
from rubriclab.transfer import figures

configure_logging(snakemake.log[0])
inputs, outputs = snakemake.input, snakemake.output
read = dict(keep_default_na=False, na_values=["NaN"])
stats = pd.read_csv(inputs.stats, **read)
out = dict(out_png=Path(outputs.png), out_pdf=Path(outputs.pdf))
figure = snakemake.wildcards.tfigure
model = snakemake.params.response_model
if figure == "fig4_existing_approaches":
    table = figures.fig4_existing_approaches(stats, **out)
elif figure == "fig5_interventional_transfer":
    table = figures.fig5_interventional_transfer(stats, model, **out)
elif figure == "fig6_criteria_level":
    table = figures.fig6_criteria_level(pd.read_csv(inputs.categories, **read), model, **out)
elif figure == "figA1_matching_framings":
    table = figures.figA1_matching_framings(stats, **out)
elif figure == "figA2_panel_sensitivity":
    table = figures.figA2_panel_sensitivity(stats, **out)
elif figure == "figA4_by_response_model":
    table = figures.figA4_by_response_model(stats, **out)
else:
    raise ValueError(f"unknown transfer figure {figure!r}")
table.to_csv(outputs.csv, index=False)
