from pathlib import Path

import pandas as pd

from rubriclab.carry import tables
from rubriclab.runtime import configure_logging
from rubriclab.tidy import write_table

configure_logging(snakemake.log[0])
inputs, outputs = snakemake.input, snakemake.output
read = dict(keep_default_na=False, na_values=["NaN"])
table = snakemake.wildcards.table
if table == "table2_gate_replay":
    markdown, frame = tables.table2_gate_replay(pd.read_csv(inputs.rates, **read))
elif table == "table3_gates_human_labeled":
    markdown, frame = tables.table3_gates_human_labeled(pd.read_csv(inputs.rates, **read),
                                                        snakemake.params.judge)
elif table == "table4_recon_failing_checks":
    markdown, frame = tables.table4_recon_failing_checks(pd.read_csv(inputs.failing, **read))
elif table == "table5_ragtruth_failing_checks":
    markdown, frame = tables.table5_ragtruth_failing_checks(pd.read_csv(inputs.failing, **read))
else:
    raise ValueError(f"unknown carry table {table!r}")
write_table(markdown, frame, Path(outputs.md), Path(outputs.csv))
