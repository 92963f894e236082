from pathlib import Path

import pandas as pd

from rubriclab.carry.checklist_attribution import attribution_markdown, checklist_attribution
from rubriclab.carry.judge_fig2 import read_checklist_json
from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, outputs = snakemake.params, snakemake.output
labels = ModelLabels(params.labels)
checklist = read_checklist_json(snakemake.input.checklist)
verdicts = pd.read_csv(snakemake.input.verdicts, keep_default_na=False, dtype={"item_id": str})
table = checklist_attribution(verdicts, checklist)
table.to_csv(outputs.csv, index=False)
Path(outputs.md).write_text(attribution_markdown(table, checklist.name, params.title,
                                                 labels(params.judge), params.words),
                            encoding="utf-8")
record_job(outputs.provenance, [outputs.md, outputs.csv], snakemake.config, params.models,
           labels, sizes={"runs": int(table["run"].nunique()),
                          "checks": int(table["check_id"].nunique())},
           names={"dataset": params.title, "checklist": checklist.name})
