from pathlib import Path

import pandas as pd

from rubriclab.carry.fig1 import fig1_strictness
from rubriclab.carry.fig3 import fig3_from_rates
from rubriclab.carry.fig4 import fig4_self_review_drift
from rubriclab.carry.fig5 import fig5_attribution_by_origin
from rubriclab.carry.fig6 import fig6_gated_quality
from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
inputs, outputs, params = snakemake.input, snakemake.output, snakemake.params
read = dict(keep_default_na=False, na_values=["NaN"])
rates = pd.read_csv(inputs.rates, **read)
judge = params.judge
labels = ModelLabels(params.labels)
out = dict(out_png=Path(outputs.png), out_pdf=Path(outputs.pdf), labels=labels)
figure = snakemake.wildcards.figure
if figure == "fig1_strictness":
    table = fig1_strictness(rates, judge, **out)
elif figure == "fig3_accuracy_vs_flawed_share":
    table = fig3_from_rates(rates, judge, **out)
elif figure == "fig4_self_review_drift":
    table = fig4_self_review_drift(rates, judge, main_reviser=params.reviser, **out)
elif figure == "fig5_attribution_by_origin":
    table = fig5_attribution_by_origin(pd.read_csv(inputs.attribution, **read),
                                       pd.read_csv(inputs.deletions, **read), judge,
                                       paper_chains=params.paper_chains, **out)
elif figure == "fig6_gated_quality":
    table = fig6_gated_quality(rates, judge, paper_chains=params.paper_chains,
                               gate_evidence=params.gate_evidence, **out)
else:
    raise ValueError(f"unknown carry figure {figure!r}")
table.to_csv(outputs.csv, index=False)
record_job(outputs.provenance, [outputs.png, outputs.pdf, outputs.csv], snakemake.config,
           params.models, labels, table,
           settings={"carry.recon.gate_evidence": params.gate_evidence})
