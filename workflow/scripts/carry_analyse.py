from rubriclab.carry.analysis import Setting, analyse, read_chains
from rubriclab.carry.experiment import read_items, read_verdicts
from rubriclab.carry.sources import read_start_sets
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
params, wildcards = snakemake.params, snakemake.wildcards
items = read_items(snakemake.input.carry_items)
verdicts = read_verdicts(snakemake.input.verdicts)
starts = read_start_sets(snakemake.input.starts)
chains = read_chains(snakemake.input.chains)
setting = Setting(dataset=wildcards.cdataset, judge=params.judge, gates=params.gates,
                  renderings=params.renderings, B=params.bootstrap["B"],
                  seed=params.bootstrap["seed"], gate_evidence=params.gate_evidence)
tables = analyse(setting, items, verdicts, starts, chains)
for name, table in tables.items():
    table.to_csv(snakemake.output[name], index=False, na_rep="NaN")
