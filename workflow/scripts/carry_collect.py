import pandas as pd

from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
for name in ("rates", "attribution", "deletions"):
    frames = [pd.read_csv(path, keep_default_na=False, na_values=["NaN"]) for path in snakemake.input[name]]
    pd.concat(frames, ignore_index=True).to_csv(snakemake.output[name], index=False, na_rep="NaN")
