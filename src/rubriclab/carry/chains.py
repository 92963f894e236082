"""Which self-review chains a run plans, and which of them are the paper's.

`carry.chains.<dataset>.chains` lists the chains ("<source>:<mode>") every reviser of
models.revisers runs; `main_reviser_chains` those only the main reviser (models.reviser) runs.
Each runs once per seed of `carry.chains.seeds`. The paper's chains of a dataset are its
`chains` x revisers x seeds: carry Figures 5b and 6 and Table 2 show those, the supplements the
rest (docs/replication.md, "Revisers").

Which judges judge each dataset (`planned_judges`): every judge of carry.judges on the datasets
of `carry.all_judges_on`, the main judge alone elsewhere; the gate agreement table covers the
datasets every judge judges (`agreement_datasets`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rubriclab.config import ConfigError

DATASETS = ("recon", "summedits", "ragtruth")


def split_chain(entry: str) -> tuple[str, str]:
    """"hand:free" -> ("hand", "free")."""
    source, mode = entry.split(":")
    return source, mode


def check_chain_config(carry: Mapping) -> None:
    """Raise ConfigError for what the schema cannot say: a chain in both lists of a dataset,
    a Table 2 chain that is not one of the paper's Recon chains or whose seed is not run, a
    Table 3 seed that is not run. Each message names the config key."""
    chains, seeds = carry["chains"], list(carry["chains"]["seeds"])
    problems = []
    for dataset in DATASETS:
        plan = chains[dataset]
        both = [c for c in plan["chains"] if c in plan.get("main_reviser_chains", [])]
        for chain in both:
            problems.append(
                f"config key 'carry.chains.{dataset}.main_reviser_chains': {chain!r} is also in "
                f"carry.chains.{dataset}.chains; list it once (chains: every reviser runs it; "
                f"main_reviser_chains: only models.reviser)")
    for index, entry in enumerate(carry["recon"]["table2_chains"]):
        where = f"config key 'carry.recon.table2_chains[{index}]'"
        if entry["chain"] not in chains["recon"]["chains"]:
            problems.append(f"{where}: {entry['chain']!r} is not one of the paper's Recon chains "
                            f"carry.chains.recon.chains {list(chains['recon']['chains'])}")
        if entry["seed"] not in seeds:
            problems.append(f"{where}: seed {entry['seed']} is not one of carry.chains.seeds "
                            f"{seeds}")
    if carry.get("table3_seed") is not None and carry["table3_seed"] not in seeds:
        problems.append(f"config key 'carry.table3_seed': seed {carry['table3_seed']} is not one "
                        f"of carry.chains.seeds {seeds}")
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))


def planned_chains(plan: Mapping, seeds: Sequence[int], revisers: Sequence[str],
                   main_reviser: str) -> list[tuple[str, str, str, int]]:
    """(reviser, source, mode, seed) of every chain of one dataset's plan: every reviser runs
    plan["chains"], the main reviser also plan["main_reviser_chains"]."""
    if main_reviser not in revisers:
        raise ValueError(f"the main reviser {main_reviser!r} is not among the revisers "
                         f"{list(revisers)}")
    planned = []
    for reviser in revisers:
        entries = list(plan["chains"])
        if reviser == main_reviser:
            entries += list(plan.get("main_reviser_chains", []))
        planned += [(reviser, *split_chain(entry), seed) for entry in entries for seed in seeds]
    return planned


def planned_judges(datasets: Sequence[str], judges: Sequence[str], main_judge: str,
                   all_judges_on: Sequence[str]) -> dict[str, list[str]]:
    """The judges of each carry dataset: every judge of carry.judges on the datasets of
    carry.all_judges_on (Recon by default: Figure 1b and Table 2 read them), the main judge
    models.judge alone elsewhere (Table 3 and Figures 3-6 read only it)."""
    if main_judge not in judges:
        raise ValueError(f"the main judge {main_judge!r} is not among the judges {list(judges)}")
    return {dataset: list(judges) if dataset in all_judges_on else [main_judge]
            for dataset in datasets}


def agreement_datasets(judges_on: Mapping[str, Sequence[str]],
                       judges: Sequence[str]) -> list[str]:
    """The datasets the gate agreement table covers (`judges_on`: planned_judges): those every
    judge judges, all of them when carry.judges holds the main judge alone."""
    return [dataset for dataset, on in judges_on.items() if set(on) == set(judges)]


def paper_chain_rows(frame: pd.DataFrame, paper_chains: Sequence[str] | None) -> pd.DataFrame:
    """The rows of the paper's chains ((source, mode) in `paper_chains`) and the chainless
    rows (mode ""; the start rubrics); every row when `paper_chains` is None."""
    if paper_chains is None:
        return frame
    wanted = {split_chain(entry) for entry in paper_chains}
    if not wanted:
        raise ValueError("paper_chains is empty: the paper's chains are carry.chains.<dataset>."
                         "chains, which lists at least one")
    mode = frame["mode"].fillna("").astype(str)
    keep = (mode == "") | pd.Series([(s, m) in wanted for s, m in zip(frame["source"], mode)],
                                    index=frame.index)
    return frame[keep]
