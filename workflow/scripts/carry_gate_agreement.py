from pathlib import Path

import pandas as pd

from rubriclab.carry.agreement import agreement_markdown, gate_agreement
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
decisions = pd.concat([pd.read_csv(path, keep_default_na=False)
                       for path in snakemake.input.decisions], ignore_index=True)
judges = snakemake.params.judges
agreement, splits = gate_agreement(decisions, judges)
agreement.to_csv(snakemake.output.csv, index=False)
splits.to_csv(snakemake.output.splits, index=False)
Path(snakemake.output.md).write_text(agreement_markdown(agreement, judges), encoding="utf-8")
