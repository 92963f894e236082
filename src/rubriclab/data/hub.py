"""Items from a Hugging Face dataset, read with ``datasets.load_dataset``.

A dataset's config may name, under ``hub``, where its rows come from instead of the registry's
raw files (config key ``datasets.<dataset>.hub``):
- a dataset on the Hub by name, at a pinned commit: ``{name: owner/name, revision: <40 hex>,
  split: test}``;
- a local folder laid out like a Hub dataset repository: ``{name: /path/to/folder, split: ...}``;
- local files through one of datasets' file builders: ``{name: json, data_files: [...]}`` (or
  ``csv``, ``parquet``); ``data_files`` may map split names to files.
``split`` is one split or a list (RAGTruth's responses and sources tables, for instance with
``data_files: {responses: [...], sources: [...]}``, which loads each split on its own). Each
split becomes one table of (row number, row) pairs that the dataset's own loader validates row
by row, as it validates the lines of a raw file, with errors naming the dataset, revision,
split and row.

Rows reach the loaders as ``datasets`` returns them. Arrow, which it stores tables in, has
no absent field: a column that some rows lack reads back as null in those rows (a SummEdits
``split`` of null is refused, as in a file), and the objects of one column share the union of
their keys, the missing ones null. That is why the registry's raw files are still read by the
loaders' own parsers (rubriclab.data.summedits and friends): those name the file and line of a
malformed row and keep nested JSON exactly as written (RAGTruth's FaithJudge Data2txt sources
differ from row to row in their keys).

``datasets`` is imported only when a table is loaded: it takes about a second to import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from rubriclab.data.download import DownloadError
from rubriclab.data.healthbench import load_healthbench_tables
from rubriclab.data.ragtruth import load_ragtruth_tables
from rubriclab.data.summedits import load_summedits_tables

FILE_BUILDERS = ("json", "csv", "parquet")
COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class HubSplit:
    """Where a table's rows come from, in place of a file path (for DataFormatError)."""

    dataset: str
    revision: str | None
    split: str
    unit = "row"

    @property
    def name(self) -> str:
        """The item table's source_file: ``<dataset>@<commit, 12 digits>:<split>``."""
        revision = f"@{self.revision[:12]}" if self.revision else ""
        return f"{self.dataset}{revision}:{self.split}"

    def __str__(self) -> str:
        revision = f" at {self.revision}" if self.revision else ""
        return f"Hugging Face dataset {self.dataset}{revision}, split {self.split}"


def is_hub_name(name: str) -> bool:
    """A Hub repository id, as opposed to a file builder or a local folder."""
    return name not in FILE_BUILDERS and not Path(name).expanduser().is_dir()


def check_source(source: dict, key: str) -> None:
    """Raise ValueError naming `key` when `source` cannot be loaded as it says."""
    name, revision = source["name"], source.get("revision")
    if is_hub_name(name):
        if revision is None:
            raise ValueError(f"config key '{key}.revision': {name!r} is read from the Hugging Face "
                             "Hub and needs a pinned revision, the 40-digit commit to fetch")
        if not COMMIT.match(revision):
            raise ValueError(f"config key '{key}.revision': {revision!r} is not a 40-digit commit "
                             "(a branch or tag can move; pin the commit it points to)")
    elif revision is not None:
        raise ValueError(f"config key '{key}.revision': {name!r} is not on the Hub (a file "
                         "builder or a local folder), so it has no revision; leave it null")
    data_files = source.get("data_files")
    if name in FILE_BUILDERS and not data_files:
        raise ValueError(f"config key '{key}.data_files': the {name} builder reads the files "
                         "named there; none are")
    if isinstance(data_files, dict):
        unnamed = [split for split in splits_of(source) if split not in data_files]
        if unnamed:
            raise ValueError(f"config key '{key}.data_files': no files for split(s) {unnamed}; "
                             f"it names {sorted(data_files)}")


def splits_of(source: dict) -> list[str]:
    split = source["split"]
    return list(split) if isinstance(split, list) else [split]


def load_tables(source: dict, *, key: str, cache_dir: str | Path | None = None):
    """[(HubSplit, [(row number, row)])] for every split of `source`, through load_dataset.

    `key` is the config key of `source`, named in every error. Anything that stops
    load_dataset (an unknown name or revision, no connection, a missing split) raises
    DownloadError with its message.
    """
    check_source(source, key)
    import datasets  # noqa: PLC0415 (about a second to import; only runs that read the Hub pay it)

    name, revision = source["name"], source.get("revision")
    tables = []
    for split in splits_of(source):
        try:
            table = datasets.load_dataset(
                name, revision=revision, split=split, data_files=_data_files(source, split),
                cache_dir=None if cache_dir is None else str(cache_dir))
        except Exception as exc:  # datasets raises many kinds: not found, offline, bad split
            raise DownloadError(f"config key '{key}': could not load {HubSplit(name, revision, split)}"
                                f": {type(exc).__name__}: {exc}") from exc
        rows = list(enumerate(table, start=1))
        tables.append((HubSplit(name, revision, split), rows))
    return tables


def _data_files(source: dict, split: str):
    """The data_files of one split. A mapping of splits to files is loaded one split at a time:
    load_dataset would otherwise cast every split to the first one's columns, and RAGTruth's
    responses and sources tables have different columns."""
    data_files = source.get("data_files")
    return {split: data_files[split]} if isinstance(data_files, dict) else data_files


def load_items(dataset: str, source: dict, *, cache_dir: str | Path | None = None):
    """The item table of `dataset` (summedits, ragtruth or healthbench) from `source`."""
    loaders = {"summedits": load_summedits_tables, "ragtruth": load_ragtruth_tables,
               "healthbench": load_healthbench_tables}
    if dataset not in loaders:
        raise ValueError(f"no Hugging Face loader for dataset {dataset!r}; known: {sorted(loaders)}")
    return loaders[dataset](load_tables(source, key=f"datasets.{dataset}.hub", cache_dir=cache_dir))
