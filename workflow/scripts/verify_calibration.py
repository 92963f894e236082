from pathlib import Path

import pandas as pd

from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging
from rubriclab.verify.calibration import POST_CONFUSION
from rubriclab.verify.report import (
    agent_summary_markdown,
    calibration_markdown,
    carry_judge_rows,
    plot_calibration,
    post_row,
)

configure_logging(snakemake.log[0])
params, outputs = snakemake.params, snakemake.output
labels = ModelLabels(params.labels)
rows = [post_row(params.n_boot, params.seed, params.level)]
for dataset, verdicts_path, table_path in zip(params.datasets, snakemake.input.verdicts,
                                              snakemake.input.tables, strict=True):
    verdicts = pd.read_csv(verdicts_path, keep_default_na=False, dtype={"item_id": str, "check_id": str})
    items = pd.read_csv(table_path, keep_default_na=False)
    rows += carry_judge_rows(verdicts, items, dataset, params.judge, params.length, params.n_boot,
                             params.seed, params.level)
table = pd.DataFrame(rows)
table.to_csv(snakemake.output.csv, index=False)
trials = pd.read_csv(snakemake.input.trials, keep_default_na=False)
grades = pd.read_csv(snakemake.input.grades, keep_default_na=False)
Path(snakemake.output.md).write_text(
    calibration_markdown(table) + "\n"
    + agent_summary_markdown(trials, grades, labels(params.models["agent"]),
                             labels(params.judge)),
    encoding="utf-8")
plot_calibration(table, POST_CONFUSION, outputs.png, outputs.pdf, labels=labels)
sizes = {"n_labelled": int((table["tp"] + table["fn"] + table["fp"] + table["tn"]).max()),
         "n_judged": int(table["n_judged"].max()), "trials": len(trials),
         "checklist_length": params.length}
for sidecar in (outputs.provenance, outputs.table_provenance):
    record_job(sidecar, [outputs.png, outputs.pdf, outputs.md, outputs.csv], snakemake.config,
               params.models, labels, sizes=sizes)
