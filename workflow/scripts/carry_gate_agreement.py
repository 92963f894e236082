from pathlib import Path

import pandas as pd

from rubriclab.carry.agreement import agreement_markdown, gate_agreement
from rubriclab.labels import ModelLabels
from rubriclab.provenance import record_job
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, outputs = snakemake.params, snakemake.output
labels = ModelLabels(params.labels)
decisions = pd.concat([pd.read_csv(path, keep_default_na=False)
                       for path in snakemake.input.decisions], ignore_index=True)
judges = params.judges
agreement, splits = gate_agreement(decisions, judges)
agreement.to_csv(outputs.csv, index=False)
splits.to_csv(outputs.splits, index=False)
Path(outputs.md).write_text(
    agreement_markdown(agreement, judges, main_judge_only=params.main_judge_only, labels=labels),
    encoding="utf-8")
record_job(outputs.provenance, [outputs.md, outputs.csv, outputs.splits], snakemake.config,
           params.models, labels, agreement, sizes={"changes": int(agreement["changes"].sum()),
                  "left_out_origin": int(agreement["origin"].sum()),
                  "left_out_no_evidence": int(agreement["no_evidence"].sum())})
