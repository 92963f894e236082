from rubriclab.config import write_effective_config
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
write_effective_config(snakemake.params.config, snakemake.output[0])
