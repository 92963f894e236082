from rubriclab.carry.checklists import load_checklist_file
from rubriclab.carry.judge_fig2 import write_checklist_json
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
write_checklist_json(load_checklist_file(snakemake.input[0]), snakemake.output[0])
