"""Provenance written beside each figure and table when it is made, and read back by the report.

The sidecar `<name>.provenance.json` records what the output rests on: a digest of the run's
validated config, the models by role (each with its display label), the sizes (the run's
configured sizes and the counts of the plotted table), the rubriclab version and the outputs it
describes. The report's captions (workflow/report/*.rst) are rendered from this record (a rule's
`provenance` param reads it back), so a report built by a later command with another config still
describes each figure as it was made.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Mapping

import rubriclab
from rubriclab.labels import ModelLabels

# Columns of a plotted table that count what a number rests on; their largest value is recorded.
COUNT_COLUMNS = ("n", "n_undetermined", "n_correct", "n_flawed", "n_examples", "n_used",
                 "n_criteria", "seeds", "chains", "runs", "checks", "n_labelled", "n_judged")


def config_digest(config: Mapping[str, Any]) -> str:
    """sha256 of the config as canonical JSON (sorted keys): equal configs, equal digests."""
    text = json.dumps(config, sort_keys=True, default=str, ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def table_counts(table) -> dict[str, int]:
    """The largest value of each count column (COUNT_COLUMNS) present in a pandas table."""
    counts = {}
    for column in COUNT_COLUMNS:
        if column in getattr(table, "columns", ()):
            values = table[column].dropna()
            if not values.empty:
                counts[column] = int(values.max())
    return counts


def _model_entry(models, labels: ModelLabels):
    if isinstance(models, str):
        return {"model": models, "label": labels(models)}
    if isinstance(models, Mapping):
        return {key: _model_entry(value, labels) for key, value in models.items()}
    if isinstance(models, Iterable):
        return [_model_entry(value, labels) for value in models]
    raise ValueError(f"provenance: a model must be a string, list or mapping, got {models!r}")


def provenance_record(config: Mapping[str, Any], outputs: Iterable[str],
                      models: Mapping[str, Any], labels: ModelLabels,
                      sizes: Mapping[str, Any] | None = None,
                      names: Mapping[str, Any] | None = None,
                      settings: Mapping[str, Any] | None = None) -> dict:
    """The record for `outputs`: models is {role: model string, or a list or mapping of them};
    names, where given, what the output names its parts by (a dataset's title, for one);
    settings, where given, config values a caption names ({dotted key: value})."""
    record = {
        "outputs": [str(path) for path in outputs],
        "rubriclab_version": rubriclab.__version__,
        "config_digest": config_digest(config),
        "models": {role: _model_entry(value, labels) for role, value in models.items()},
        "sizes": dict(sizes or {}),
    }
    if names is not None:
        record["names"] = dict(names)
    if settings is not None:
        record["settings"] = dict(settings)
    return record


def write_provenance(path, record: Mapping[str, Any]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                    encoding="utf-8")


def read_provenance(path) -> dict:
    """The sidecar's record; {} while the output is not made yet (a rule's params are built
    before its job runs, and the report reads them after)."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a provenance record ({error})") from None


def record_job(provenance_path, outputs: Iterable[str], config: Mapping[str, Any],
               models: Mapping[str, Any], labels: ModelLabels, table=None,
               sizes: Mapping[str, Any] | None = None,
               names: Mapping[str, Any] | None = None,
               settings: Mapping[str, Any] | None = None) -> dict:
    """Write the provenance of a figure or table job beside its outputs; sizes are `sizes`
    and the counts of the plotted `table` (table_counts)."""
    record = provenance_record(config, outputs, models, labels,
                               {**(table_counts(table) if table is not None else {}),
                                **(sizes or {})}, names, settings)
    write_provenance(provenance_path, record)
    return record
