import pandas as pd

from rubriclab.carry.analysis import ragtruth_failing_rows, read_chains, recon_failing_rows
from rubriclab.carry.experiment import read_items, read_verdicts
from rubriclab.carry.tables import AFTER_REVIEW
from rubriclab.carry.sources import read_start_sets
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
inputs, params = snakemake.input, snakemake.params
after = AFTER_REVIEW + params.reviser  # the model string: the tables show its label
recon_items, ragtruth_items = (read_items(path) for path in inputs.carry_items)
recon_verdicts, ragtruth_verdicts = (read_verdicts(path) for path in inputs.verdicts)
rows = recon_failing_rows(recon_items, recon_verdicts, read_start_sets(inputs.recon_starts),
                          read_chains(inputs.recon_chain), params.environment, after)
rows += ragtruth_failing_rows(ragtruth_items, ragtruth_verdicts,
                              read_start_sets(inputs.ragtruth_starts),
                              read_chains(inputs.ragtruth_chain), after)
pd.DataFrame(rows).to_csv(snakemake.output[0], index=False)
