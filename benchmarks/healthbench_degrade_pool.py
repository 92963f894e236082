"""The rubrics transfer's degrader draws from, against the HealthBench Hard split the seed names.

Table A.3 (seed 002) draws the bad response's rubric "from the HealthBench hard split"; the
pipeline draws it from the sampled examples (docs/replication.md). This prints, for the
prepared sample and for the Hard items the data mirror holds in full, how long the rubrics
are, how many of their criteria are negative (restated before the degrader sees them), their
themes, and how often a drawn rubric shares the theme of the example it degrades.

    .venv/bin/python benchmarks/healthbench_degrade_pool.py \
        [--sample data/prepared/healthbench.csv] [--mirror ../shared/data]

The sample is whatever the last data preparation wrote: prepare it with config/paper.yaml
for the paper's 105.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
from pathlib import Path

import pandas as pd

# The mirror's 50 items of hive-swarm-hub/fork--healthbench-lite--junjie are "sampled from
# HealthBench-Hard (seed 42)" (healthbench/SOURCE.md): the one random sample of Hard in it.
RANDOM_HARD_SOURCE = "hive-swarm-hub/fork--healthbench-lite--junjie"


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def theme_of(item: dict) -> str:
    themes = [t.removeprefix("theme:") for t in item["example_tags"] if t.startswith("theme:")]
    if len(themes) != 1:
        raise ValueError(f"{item['prompt_id']}: {len(themes)} theme tags")
    return themes[0]


def row(name: str, rubrics: list[list[dict]], themes: list[str],
        example_themes: list[str], excludes_self: bool) -> dict:
    sizes = [len(r) for r in rubrics]
    negatives = [sum(c["points"] < 0 for c in r) for r in rubrics]
    counts = collections.Counter(themes)
    if excludes_self:  # the example's own rubric is never drawn
        same = [(counts[t] - 1) / (len(themes) - 1) for t in example_themes]
    else:
        same = [counts[t] / len(themes) for t in example_themes]
    return {"pool": name, "rubrics": len(rubrics),
            "mean criteria": f"{sum(sizes) / len(sizes):.1f}",
            "negative criteria": f"{sum(negatives) / sum(sizes):.1%}",
            "rubrics with a negative": f"{sum(n > 0 for n in negatives) / len(negatives):.0%}",
            "drawn rubric on the example's theme": f"{sum(same) / len(same):.1%}",
            "themes": ", ".join(f"{t} {n}" for t, n in sorted(counts.items()))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=Path, default=Path("data/prepared/healthbench.csv"))
    parser.add_argument("--mirror", type=Path,
                        default=Path(os.environ.get("RUBRICLAB_DATA_MIRROR", "../shared/data")))
    args = parser.parse_args()
    sample = pd.read_csv(args.sample, keep_default_na=False)
    example_themes = sample["theme"].tolist()
    folder = args.mirror / "healthbench"
    meta = {m["prompt_id"]: m for m in read_jsonl(folder / "oss_eval_items_meta.jsonl")}
    hard = [i for i in read_jsonl(folder / "oss_eval_items.jsonl")
            if meta[i["prompt_id"]]["known_hard"]]
    random_hard = [i for i in hard
                   if any(s.startswith(RANDOM_HARD_SOURCE) for s in meta[i["prompt_id"]]["sources"])]
    rows = [
        row(f"sample ({args.sample})", [json.loads(r) for r in sample["rubric_json"]],
            example_themes, example_themes, excludes_self=True),
        row("Hard, every item in full in the mirror", [i["rubrics"] for i in hard],
            [theme_of(i) for i in hard], example_themes, excludes_self=False),
        row("Hard, the mirror's random sample of it", [i["rubrics"] for i in random_hard],
            [theme_of(i) for i in random_hard], example_themes, excludes_self=False),
    ]
    print(pd.DataFrame(rows).to_markdown(index=False))


if __name__ == "__main__":
    main()
