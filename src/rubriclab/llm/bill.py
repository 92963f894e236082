"""The calls a run's stages paid for, from every process that ran them: each stage's attempts
journal (beside its ledger) and, with a PostgreSQL cache, the attempt rows every host wrote to
the cache database (`ledger_rows`), an attempt found in both counted once.

On a cluster whose jobs each run in a folder of their own and pass their outputs through a
store, a stage's attempts journal stays in its job's folder (it is no output): a job orphaned by
a killed head, and rerun, leaves its paid calls only in the database, where its rerun's ledger
shows them as cache hits. There, a stage is known by its ledger's name in the store
(`stage_name`), which is the same on every host.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from rubriclab.labels import ModelLabels

from .ledger import (calls_per_distinct_request, cost_report_markdown, ledger_frame,
                     read_earlier_attempts, read_ledgers, summarize)


def stage_name(ledger_path: str | Path, local_root: str | Path | None = None) -> str:
    """A ledger's name that is the same on every host: its path under `local_root` (the folder
    a host keeps its local copies of a store's files in, which differs between hosts and job
    folders: under it, "<store>/<bucket or folder>/results/ledger/x.jsonl" does not), else its
    absolute path (a filesystem every host shares, at the same place on each)."""
    path = Path(ledger_path).absolute()
    if local_root is not None:
        root = Path(os.path.expandvars(str(local_root))).absolute()
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return path.as_posix()


def database_attempts(cache_url: str, ledger_paths: list[Path],
                      local_root: str | Path | None = None,
                      stages: list[str] | None = None) -> pd.DataFrame:
    """Every call that reached a model of these ledgers' stages, as the processes that made them
    wrote it to the PostgreSQL cache database at `cache_url`: every host's, every run's.
    `stages`: the ledgers' names on every host where the caller knows them (a ledger read
    straight from a store "/srv/store/results/ledger/x.jsonl" is "fs/srv/store/results/ledger/
    x.jsonl" under each job's local copies); else `stage_name` of each path."""
    from .ledger_pg import read_stage_attempts

    if stages is None:
        stages = [stage_name(path, local_root) for path in ledger_paths]
    return ledger_frame(read_stage_attempts(cache_url, sorted(set(stages))))


def merge_attempts(*sources: pd.DataFrame) -> pd.DataFrame:
    """The attempts of several records of the same calls, each call once: per process (`run`)
    and request key, as many rows as the source that holds most (a model whose answers are not
    cached is asked anew each time, so one process may pay for one key more than once), taken
    from the first source that has them."""
    numbered = []
    for source in sources:
        if source.empty:
            continue
        frame = source.copy()
        frame["_process"] = frame["run"].fillna("").astype(str)
        frame["_asking"] = frame.groupby(["_process", "key"], sort=False).cumcount()
        numbered.append(frame)
    if not numbered:
        return ledger_frame([])
    merged = pd.concat(numbered, ignore_index=True)
    merged = merged.drop_duplicates(subset=["_process", "key", "_asking"], keep="first")
    return merged.drop(columns=["_process", "_asking"]).reset_index(drop=True)


def paid_attempts(ledger_paths: list[Path], cache_url: str | None = None,
                  local_root: str | Path | None = None,
                  stages: list[str] | None = None) -> pd.DataFrame:
    """The calls of these ledgers' stages that reached a model, in every run: from their
    attempts journals, and with a PostgreSQL cache (`cache_url`) from its database too
    (`database_attempts`)."""
    journals = read_earlier_attempts(ledger_paths)
    if cache_url is None:
        return journals
    return merge_attempts(journals,
                          database_attempts(cache_url, ledger_paths, local_root, stages))


def cost_report(ledger_paths: list[Path], cache_url: str | None = None,
                local_root: str | Path | None = None,
                skip_fake: bool = False,
                labels: ModelLabels | None = None) -> tuple[pd.DataFrame, str]:
    """The current ledgers of a run's stages and the cost report of them (markdown), billing
    every call their processes paid for (`paid_attempts`); `skip_fake` as in
    `calls_per_distinct_request`; `labels`: the run's display names of the models."""
    paths = [Path(p) for p in ledger_paths]
    ledger, attempts = read_ledgers(paths), paid_attempts(paths, cache_url, local_root)
    markdown = cost_report_markdown(summarize(ledger, attempts),
                                    calls_per_distinct_request(ledger, attempts, skip_fake),
                                    fake_skipped=skip_fake, labels=labels)
    return ledger, markdown
