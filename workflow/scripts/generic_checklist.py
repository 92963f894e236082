from rubriclab.carry.checklists import load_generic_checklist
from rubriclab.carry.judge_fig2 import write_checklist_json
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
write_checklist_json(load_generic_checklist(snakemake.wildcards.dataset), snakemake.output[0])
