from pathlib import Path

import pandas as pd

from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging
from rubriclab.tidy import write_table
from rubriclab.transfer import tables

configure_logging(snakemake.log[0])
inputs, outputs = snakemake.input, snakemake.output
read = dict(keep_default_na=False, na_values=["NaN"])
labels = ModelLabels(snakemake.params.labels)
stats = pd.read_csv(inputs.stats, **read)
table = snakemake.wildcards.ttable
if table == "tableA4_existing_paired_differences":
    markdown, frame = tables.tableA4_existing_paired_differences(stats, labels=labels)
elif table == "tableA5_degradation":
    markdown, frame = tables.tableA5_degradation(stats, labels=labels)
elif table == "tableA6_similarity_pass_fail":
    markdown, frame = tables.tableA6_similarity_pass_fail(stats, labels=labels)
elif table == "tableA7_similarity_cutoffs":
    markdown, frame = tables.tableA7_similarity_cutoffs(pd.read_csv(inputs.cutoffs, **read),
                                                       labels=labels)
elif table == "tableA8_it_paired_differences":
    markdown, frame = tables.tableA8_it_paired_differences(stats, snakemake.params.response_model,
                                                          labels=labels)
elif table == "tableA9_edit_sizes":
    markdown, frame = tables.tableA9_edit_sizes(pd.read_csv(inputs.edit_sizes, **read),
                                               labels=labels)
else:
    raise ValueError(f"unknown transfer table {table!r}")
write_table(markdown, frame, Path(outputs.md), Path(outputs.csv))
record_job(outputs.provenance, [outputs.md, outputs.csv], snakemake.config,
           snakemake.params.models, labels, frame)
