import pandas as pd

from rubriclab.carry.fig2 import fig2_table, plot_fig2
from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, outputs = snakemake.params, snakemake.output
labels = ModelLabels(params.labels)
tables = {
    dataset: pd.read_csv(path).assign(dataset=dataset)
    for dataset, path in zip(params.datasets, snakemake.input, strict=True)
}
plot_fig2(tables, outputs.png, outputs.pdf, judge_label=labels(params.judge),
          titles=params.titles, words=params.words)
table = fig2_table(tables)
table.to_csv(outputs.csv, index=False)
record_job(outputs.provenance, [outputs.png, outputs.pdf, outputs.csv], snakemake.config,
           params.models, labels, table,
           names={"panels": [params.titles[name] for name in params.datasets]})
