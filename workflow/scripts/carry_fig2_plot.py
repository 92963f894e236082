import pandas as pd

from rubriclab.carry.fig2 import fig2_table, plot_fig2
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
tables = {
    dataset: pd.read_csv(path).assign(dataset=dataset)
    for dataset, path in zip(snakemake.params.datasets, snakemake.input, strict=True)
}
plot_fig2(tables, snakemake.output.png, snakemake.output.pdf, judge_label=snakemake.params.judge)
fig2_table(tables).to_csv(snakemake.output.csv, index=False)
