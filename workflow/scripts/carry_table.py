from pathlib import Path

import pandas as pd

from rubriclab.carry import tables
from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging
from rubriclab.tidy import write_table

configure_logging(snakemake.log[0])
inputs, outputs, params = snakemake.input, snakemake.output, snakemake.params
read = dict(keep_default_na=False, na_values=["NaN"])
labels = ModelLabels(params.labels)
table = snakemake.wildcards.table
if table in ("table2_gate_replay", "table2_supplement", "table3_gates_human_labeled",
             "table3_supplement", "fig6_supplement"):
    rates = pd.read_csv(inputs.rates, **read)
if table == "table2_gate_replay":
    markdown, frame = tables.table2_gate_replay(rates, params.table2_chains, params.reviser,
                                                labels=labels, gate_evidence=params.gate_evidence)
elif table == "table2_supplement":
    markdown, frame = tables.table2_gate_replay(rates, paper_chains=params.paper_chains["recon"],
                                                labels=labels, gate_evidence=params.gate_evidence)
elif table == "table3_gates_human_labeled":
    markdown, frame = tables.table3_gates_human_labeled(rates, params.judge, params.reviser,
                                                        params.table3_seed, labels=labels)
elif table == "table3_supplement":
    markdown, frame = tables.table3_supplement(rates, params.judge, labels=labels)
elif table == "fig6_supplement":
    markdown, frame = tables.fig6_supplement(rates, params.judge, params.paper_chains["recon"],
                                             labels=labels)
elif table == "fig5b_supplement":
    markdown, frame = tables.fig5b_supplement(pd.read_csv(inputs.deletions, **read), params.judge,
                                              params.paper_chains["recon"], labels=labels)
elif table == "table4_recon_failing_checks":
    markdown, frame = tables.table4_recon_failing_checks(pd.read_csv(inputs.failing, **read),
                                                         labels=labels)
elif table == "table5_ragtruth_failing_checks":
    markdown, frame = tables.table5_ragtruth_failing_checks(pd.read_csv(inputs.failing, **read),
                                                           labels=labels)
else:
    raise ValueError(f"unknown carry table {table!r}")
write_table(markdown, frame, Path(outputs.md), Path(outputs.csv))
record_job(outputs.provenance, [outputs.md, outputs.csv], snakemake.config,
           params.models, labels, frame,
           settings={"carry.recon.gate_evidence": params.gate_evidence})
