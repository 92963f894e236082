import pandas as pd

from rubriclab.carry.aggregate import item_outcomes, length_rates, mean_over_runs, validate_verdicts
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
verdicts = pd.read_csv(snakemake.input.verdicts, keep_default_na=False,
                       dtype={"item_id": str, "check_id": str})
validate_verdicts(verdicts)
rates = length_rates(item_outcomes(verdicts, snakemake.params.lengths))
rates.to_csv(snakemake.output.by_run, index=False)
mean_over_runs(rates).to_csv(snakemake.output.mean, index=False)
