from pathlib import Path

import pandas as pd

from rubriclab.data.summary import PreparedDataset, data_summary_markdown
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
inputs = snakemake.input


def read(path):
    return pd.read_csv(path, keep_default_na=False)


datasets = [
    PreparedDataset(name, read(inputs[f"{name}_table"]), read(inputs[f"{name}_left_out"]), category)
    for name, category in [("summedits", "domain"), ("ragtruth", "domain"), ("healthbench", "theme")]
]
datasets += [
    PreparedDataset(name, read(inputs[name]), pd.DataFrame(), "flaw_type")
    for name in ("recon72", "recon108")
]
Path(snakemake.output[0]).write_text(data_summary_markdown(datasets), encoding="utf-8")
