from pathlib import Path

from rubriclab.carry.analysis import gate_evidence_reading
from rubriclab.labels import ModelLabels, labels_in_use
from rubriclab.replication.page import replication_markdown, replication_table
from rubriclab.replication.page_html import replication_html
from rubriclab.runtime import configure_logging

configure_logging(snakemake.log[0])
outputs = {name: Path(path) for name, path in snakemake.input.items()}
with labels_in_use(ModelLabels(snakemake.config.get("labels"),
                                stand_ins=snakemake.config.get("stand_ins"))):
    table = replication_table(outputs, snakemake.config)
table.to_csv(snakemake.output.csv, index=False)
readings = [gate_evidence_reading(snakemake.config)]
Path(snakemake.output.md).write_text(
    replication_markdown(table, snakemake.config.get("run"), readings), encoding="utf-8")
Path(snakemake.output.html).write_text(
    replication_html(table, snakemake.config.get("run"), readings), encoding="utf-8")
