import pandas as pd
import pytest

from tests.markdown_tables import has_run, table_rows
from rubriclab.carry.agreement import (
    AGREEMENT_COLUMNS, SPLIT_COLUMNS, agreement_markdown, gate_agreement,
)

A, B = "judge/a", "judge/b"
CHAIN = dict(dataset="recon", reviser="rev/opus", source="hand", mode="free", seed=1,
             variant="standard", scope="e1")


def row(judge, gate, round_, action, check_id, accepted, text=""):
    return dict(CHAIN, judge=judge, gate=gate, round=round_, action=action, check_id=check_id,
                text=text, accepted=accepted)


def decisions():
    rows = []
    for judge in (A, B):
        rows += [
            row(judge, "S", 1, "delete", "h1", False),          # same: refused by both
            row(judge, "S", 1, "keep", "h2", True),             # a keep: not a change
            row(judge, "S", 1, "add", "", judge == A, "N."),    # split: A accepts, B refuses
            row(judge, "P", 1, "delete", "h1", True),           # same: accepted by both
            row(judge, "none", 1, "delete", "h1", True),        # ungated: not counted
        ]
    rows.append(row(A, "S", 2, "delete", "r1-add1", True))     # only A's replay holds it
    rows.append(row(A, "S", 2, "edit", "h2", True, "H2'.") | {"variant": "loo"})  # not counted
    return pd.DataFrame(rows)


def test_share_of_changes_every_judge_decides_the_same_way():
    agreement, splits = gate_agreement(decisions(), [A, B])
    assert list(agreement.columns) == AGREEMENT_COLUMNS
    s = agreement[agreement["gate"] == "S"].iloc[0]
    # delete h1 agreed; the add split; the round-2 delete only A's replay reached
    assert (s["changes"], s["agreed"]) == (3, 1)
    assert s["share"] == pytest.approx(1 / 3)
    p = agreement[agreement["gate"] == "P"].iloc[0]
    assert (p["changes"], p["agreed"], p["share"]) == (1, 1, 1.0)
    assert set(agreement["gate"]) == {"S", "P"}
    assert list(splits.columns) == SPLIT_COLUMNS
    got = {(r.round, r.action, r.check_id, r.judge): r.decision
           for r in splits.itertuples(index=False)}
    assert got == {(1, "add", "", A): "accepted", (1, "add", "", B): "refused",
                   (2, "delete", "r1-add1", A): "accepted",
                   (2, "delete", "r1-add1", B): "not reached"}
    markdown = agreement_markdown(agreement, [A, B])
    rows = table_rows(markdown)
    assert has_run(rows, ["hand, free, review by rev/opus, seed 1", "100.0 (1/1)", "33.3 (1/3)"])
    assert has_run(rows, ["Chain", "P", "S"])


def test_a_chain_without_changes_keeps_its_row():
    rows = decisions()
    keeps = rows[rows["action"] == "keep"].assign(seed=2)       # seed 2 proposed only keeps
    agreement, _ = gate_agreement(pd.concat([rows, keeps]), [A, B])
    quiet = agreement[agreement["seed"] == 2]
    assert quiet[["gate", "changes", "agreed"]].values.tolist() == [["S", 0, 0]]
    assert quiet["share"].isna().all()
    assert has_run(agreement_markdown(agreement, [A, B]),
                   ["hand, free, review by rev/opus, seed 2", "n/a", "no change"])


def test_one_judge_agrees_with_itself():
    only_a = decisions()
    only_a = only_a[only_a["judge"] == A]
    agreement, splits = gate_agreement(only_a, [A])
    assert agreement["share"].tolist() == [1.0, 1.0] and splits.empty


def test_bad_decisions_are_named():
    with pytest.raises(ValueError, match="'accepted'"):
        gate_agreement(decisions().drop(columns="accepted"), [A, B])
    with pytest.raises(ValueError, match=r"judge\(s\) \['judge/b'\]"):
        gate_agreement(decisions(), [A])
    twice = pd.concat([decisions(), decisions().iloc[[0]]])
    with pytest.raises(ValueError, match="decided twice"):
        gate_agreement(twice, [A, B])
    with pytest.raises(ValueError, match="non-boolean"):
        gate_agreement(decisions().assign(accepted="maybe"), [A, B])
