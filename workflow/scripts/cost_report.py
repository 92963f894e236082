from pathlib import Path

from rubriclab.llm.ledger import cost_report_markdown, read_ledgers, summarize
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
summary = summarize(read_ledgers([Path(p) for p in snakemake.input]))
Path(snakemake.output[0]).write_text(cost_report_markdown(summary), encoding="utf-8")
