from pathlib import Path

from rubriclab.carry.table1 import load_example, per_check_table, table1_markdown
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
checks, outputs = load_example()
per_check = per_check_table(checks, outputs)
per_check.to_csv(snakemake.output.csv, index=False)
Path(snakemake.output.md).write_text(table1_markdown(checks, outputs, per_check), encoding="utf-8")
