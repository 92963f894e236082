from pathlib import Path

from rubriclab.recon.build import build_recon
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
build_recon(seed=snakemake.params.seed).to_files(Path(snakemake.output.manifest).parent)
