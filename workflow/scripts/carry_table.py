from pathlib import Path

import pandas as pd

from rubriclab.carry import tables
from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging
from rubriclab.tidy import write_table

configure_logging(snakemake.log[0])
inputs, outputs = snakemake.input, snakemake.output
read = dict(keep_default_na=False, na_values=["NaN"])
labels = ModelLabels(snakemake.params.labels)
table = snakemake.wildcards.table
if table == "table2_gate_replay":
    markdown, frame = tables.table2_gate_replay(pd.read_csv(inputs.rates, **read), labels=labels)
elif table == "table3_gates_human_labeled":
    markdown, frame = tables.table3_gates_human_labeled(pd.read_csv(inputs.rates, **read),
                                                        snakemake.params.judge, labels=labels)
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
           snakemake.params.models, labels, frame)
