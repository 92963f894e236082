"""Write the example tables of examples/ (made up; run from the repository root).

    python examples/generate.py

table1/          carry's Table 1: five outputs, checks A-D, each output's failing checks
worked_example/  verify's worked example: the judge passes 300 of 400 replies; of 50 replies
                 labelled at random, it passes 37 of the 38 human passes and 4 of the 12 fails
tutorial/        docs/tutorial.md: a travel desk's four-check reply checklist on 20 labelled
                 calibration replies, a proposed revision, and 160 judged replies of which 40
                 were labelled at random (also as one file, one_file.csv, in 1 / 0)
The output of every file is fixed (no clock, a seeded generator), and tests/methods checks
that the files in the repository are what this script writes.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent

TABLE1_FAILS = {"R1": ["A"], "R2": ["A", "B"], "R3": ["B", "C", "D"], "R4": ["D"], "R5": []}
TABLE1_LABELS = {"R1": "flawed", "R2": "flawed", "R3": "flawed", "R4": "correct",
                 "R5": "correct"}

CHECKS = ["confirms_new_date", "states_fee", "no_invented_policy", "answers_question"]
# Each calibration reply's failing checks (the judge's "fail" verdicts).
TUTORIAL_FAILS = {
    "C01": ["states_fee"], "C02": [], "C03": [], "C04": ["states_fee"], "C05": [],
    "C06": [], "C07": [], "C08": [], "C09": [], "C10": [],
    "F01": ["confirms_new_date"], "F02": ["confirms_new_date"],
    "F03": ["confirms_new_date", "answers_question"], "F04": ["no_invented_policy"],
    "F05": ["no_invented_policy", "answers_question"], "F06": ["states_fee", "answers_question"],
    "F07": ["states_fee"], "F08": ["no_invented_policy", "states_fee"], "F09": [],
    "F10": ["answers_question", "confirms_new_date"],
}
REVISION = [
    ("confirms_new_date", "label", "keep",
     "Confirms the new travel date the customer asked for.", ""),
    ("states_fee", "hand", "edit", "States the change fee in euros.",
     "States the change fee, or that there is none."),
    ("no_invented_policy", "label", "delete",
     "Promises nothing the fare rules do not allow.", ""),
    ("answers_question", "hand", "delete", "Answers every question the customer asked.", ""),
    ("apologises", "", "add", "", "Apologises for the inconvenience of the change."),
]
# The judge on the proposed texts: the edited fee check no longer fails correct replies;
# the added apology check fails two of them (and the one flawed reply nothing else catches).
PROPOSED_FAILS = {"states_fee": ["F06", "F07", "F08"], "apologises": ["C02", "C03", "F09"]}


def table1() -> dict[str, pd.DataFrame]:
    verdicts = pd.DataFrame([(item, check, "fail" if check in fails else "pass")
                             for item, fails in TABLE1_FAILS.items() for check in "ABCD"],
                            columns=["item_id", "check_id", "verdict"])
    labels = pd.DataFrame(list(TABLE1_LABELS.items()), columns=["item_id", "label"])
    return {"table1/verdicts.csv": verdicts, "table1/labels.csv": labels}


def worked_example() -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(2026)
    ids = [f"reply-{i:03d}" for i in range(1, 401)]
    labelled = rng.choice(400, size=50, replace=False)
    order = rng.permutation(50)
    human = np.array([True] * 38 + [False] * 12)[order]
    judge = np.array([True] * 37 + [False] * 1 + [True] * 4 + [False] * 8)[order]
    return {"worked_example/judged.csv": _judged(rng, ids, labelled, judge, 300),
            "worked_example/labeled.csv": _labeled(ids, labelled, human)}


def tutorial() -> dict[str, pd.DataFrame]:
    verdicts = pd.DataFrame([(item, check, "fail" if check in fails else "pass")
                             for item, fails in TUTORIAL_FAILS.items() for check in CHECKS],
                            columns=["item_id", "check_id", "verdict"])
    labels = pd.DataFrame([(item, "correct" if item.startswith("C") else "flawed")
                           for item in TUTORIAL_FAILS], columns=["item_id", "label"])
    revision = pd.DataFrame(REVISION, columns=["check_id", "origin", "action", "text",
                                               "new_text"])
    proposed = pd.DataFrame([(item, check, "fail" if item in fails else "pass")
                             for check, fails in PROPOSED_FAILS.items()
                             for item in TUTORIAL_FAILS],
                            columns=["item_id", "check_id", "verdict"])
    rng = np.random.default_rng(7)
    ids = [f"T{i:03d}" for i in range(1, 161)]
    labelled = rng.choice(160, size=40, replace=False)
    order = rng.permutation(40)
    human = np.array([True] * 28 + [False] * 12)[order]
    judge = np.array([True] * 27 + [False] * 1 + [True] * 3 + [False] * 9)[order]
    return {"tutorial/verdicts.csv": verdicts, "tutorial/labels.csv": labels,
            "tutorial/revision.csv": revision, "tutorial/proposed.csv": proposed,
            "tutorial/judged.csv": (judged := _judged(rng, ids, labelled, judge, 116)),
            "tutorial/labeled.csv": (labeled := _labeled(ids, labelled, human)),
            "tutorial/one_file.csv": _one_file(judged, labeled)}


def _judged(rng, ids, labelled, judge, passes) -> pd.DataFrame:
    """Every item's judge verdict: the labelled ones as given, `passes` passes in all."""
    verdict = np.zeros(len(ids), dtype=bool)
    verdict[labelled] = judge
    rest = np.setdiff1d(np.arange(len(ids)), labelled)
    verdict[rng.choice(rest, size=passes - int(judge.sum()), replace=False)] = True
    return pd.DataFrame({"item_id": ids, "verdict": np.where(verdict, "pass", "fail")})


def _labeled(ids, labelled, human) -> pd.DataFrame:
    frame = pd.DataFrame({"item_id": [ids[i] for i in labelled],
                          "human": np.where(human, "pass", "fail")})
    return frame.sort_values("item_id").reset_index(drop=True)


def _one_file(judged, labeled) -> pd.DataFrame:
    """judged.csv and labeled.csv as one file, as truescore takes them: 1 / 0 verdicts, the
    person's 1 / 0 filled for the labelled items only."""
    frame = judged.merge(labeled, on="item_id", how="left")
    words = {"pass": "1", "fail": "0"}
    return pd.DataFrame({"item_id": frame["item_id"], "verdict": frame["verdict"].map(words),
                         "human": frame["human"].map(words).fillna("")})


def tables() -> dict[str, pd.DataFrame]:
    return {**table1(), **worked_example(), **tutorial()}


def write(root: Path = HERE) -> list[Path]:
    written = []
    for name, frame in tables().items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(path, index=False)
        written.append(path)
    return written


if __name__ == "__main__":
    for path in write(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE):
        print(path)
