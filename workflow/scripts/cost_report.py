from pathlib import Path

from rubriclab.llm.ledger import (calls_per_distinct_request, cost_report_markdown,
                                  read_earlier_attempts, read_ledgers, summarize)
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
paths = [Path(p) for p in snakemake.input]
ledger, attempts = read_ledgers(paths), read_earlier_attempts(paths)
markdown = cost_report_markdown(summarize(ledger, attempts),
                                calls_per_distinct_request(ledger, attempts))
Path(snakemake.output[0]).write_text(markdown, encoding="utf-8")
