from pathlib import Path

from rubriclab.data.download import acquire, dataset_files
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
dataset = snakemake.wildcards.dataset
(spec,) = dataset_files(dataset, [snakemake.wildcards.filename])
mirror = snakemake.config["data_mirror"]
acquire(spec, Path(snakemake.output[0]).parent, Path(mirror) / dataset if mirror else None)
