import pandas as pd
import pytest

from tests.markdown_tables import has_run, table_rows
from rubriclab.carry.agreement import (
    AGREEMENT_COLUMNS, SPLIT_COLUMNS, agreement_markdown, gate_agreement,
)

A, B = "judge/a", "judge/b"
CHAIN = dict(dataset="recon", reviser="rev/opus", source="hand", mode="free", seed=1,
             variant="standard", scope="e1", left_out="")


def row(judge, gate, round_, action, check_id, accepted, text="", evidence=True, reads=True,
        **more):
    return dict(CHAIN, judge=judge, gate=gate, round=round_, action=action, check_id=check_id,
                text=text, accepted=accepted, evidence=evidence, reads_verdicts=reads) | more


def decisions():
    rows = []
    for judge in (A, B):
        rows += [
            row(judge, "S", 1, "delete", "h1", False),          # same: refused by both
            row(judge, "S", 1, "keep", "h2", True, reads=False),  # a keep: not a change
            row(judge, "S", 1, "add", "", judge == A, "N."),    # split: A accepts, B refuses
            row(judge, "S", 1, "edit", "h3", False, "H3'.", evidence=False, reads=False),
            row(judge, "P", 1, "delete", "h1", True, reads=False),  # origin only: left out
            row(judge, "S+P", 1, "delete", "l1", False, reads=False),  # P's freeze: left out
            row(judge, "S+P", 1, "delete", "h1", False),         # same: S refuses for both
            row(judge, "none", 1, "delete", "h1", True, reads=False),  # ungated: not counted
            # a leave-one-out replay (e1:ok left out) is a replay of its own
            row(judge, "S", 1, "delete", "h1", judge == B, left_out="e1:ok"),
        ]
    rows.append(row(A, "S", 2, "delete", "r1-add1", True))     # only A's replay holds it
    # A had no evidence, B read its verdicts: counted (and split)
    rows.append(row(A, "S", 2, "delete", "h4", False, evidence=False, reads=False))
    rows.append(row(B, "S", 2, "delete", "h4", True))
    return pd.DataFrame(rows)


def test_only_decisions_that_read_verdicts_are_counted():
    agreement, splits = gate_agreement(decisions(), [A, B])
    assert list(agreement.columns) == AGREEMENT_COLUMNS
    s = agreement[agreement["gate"] == "S"].iloc[0]
    # counted: delete h1 (agreed), the add (split), the loo delete of h1 (split), the
    # round-2 delete only A's replay reached (split), delete h4 (split); left out: the edit
    # of h3 that both refused for want of evidence
    assert (s["changes"], s["agreed"], s["origin"], s["no_evidence"]) == (5, 1, 0, 1)
    assert s["share"] == pytest.approx(1 / 5)
    assert s["replays"] == 2
    p = agreement[agreement["gate"] == "P"].iloc[0]
    assert (p["changes"], p["agreed"], p["origin"], p["no_evidence"]) == (0, 0, 1, 0)
    assert pd.isna(p["share"])
    sp = agreement[agreement["gate"] == "S+P"].iloc[0]
    assert (sp["changes"], sp["agreed"], sp["origin"], sp["no_evidence"]) == (1, 1, 1, 0)
    assert set(agreement["gate"]) == {"S", "P", "S+P"}
    assert list(splits.columns) == SPLIT_COLUMNS
    got = {(r.left_out, r.round, r.action, r.check_id, r.judge): r.decision
           for r in splits.itertuples(index=False)}
    assert got == {("", 1, "add", "", A): "accepted", ("", 1, "add", "", B): "refused",
                   ("e1:ok", 1, "delete", "h1", A): "refused",
                   ("e1:ok", 1, "delete", "h1", B): "accepted",
                   ("", 2, "delete", "r1-add1", A): "accepted",
                   ("", 2, "delete", "r1-add1", B): "not reached",
                   ("", 2, "delete", "h4", A): "refused", ("", 2, "delete", "h4", B): "accepted"}


def test_the_markdown_shows_the_gates_that_read_verdicts_and_counts_what_it_left_out():
    agreement, _ = gate_agreement(decisions(), [A, B])
    markdown = agreement_markdown(agreement, [A, B])
    rows = table_rows(markdown)
    assert has_run(rows, ["Chain", "S", "S+P"])       # no column for Gate P
    assert has_run(rows, ["hand, free, review by rev/opus, seed 1", "20.0 (1/5)",
                          "100.0 (1/1)"])
    assert ("recon: 6 changes counted over 3 replays, 2 decided the same way by every judge. "
            "Left out: 1 decisions of Gate P (it reads only a check's origin), 1 changes Gate "
            "S+P refuses by P's freeze (the same under any judge) and 1 refusals for want of "
            "evidence (no verdict read).") in markdown


def test_a_chain_without_changes_keeps_its_row():
    rows = decisions()
    keeps = rows[rows["action"] == "keep"].assign(seed=2)       # seed 2 proposed only keeps
    agreement, _ = gate_agreement(pd.concat([rows, keeps]), [A, B])
    quiet = agreement[agreement["seed"] == 2]
    assert quiet[["gate", "changes", "agreed"]].values.tolist() == [["S", 0, 0]]
    assert quiet["share"].isna().all()
    assert has_run(agreement_markdown(agreement, [A, B]),
                   ["hand, free, review by rev/opus, seed 2", "none counted", "n/a"])


def test_nothing_that_reads_verdicts_gives_empty_counts():
    rows = decisions()
    rows = rows[rows["gate"] == "P"]
    agreement, splits = gate_agreement(rows, [A, B])
    assert agreement[["gate", "changes", "origin"]].values.tolist() == [["P", 0, 1]]
    assert splits.empty


def test_one_judge_agrees_with_itself():
    only_a = decisions()
    only_a = only_a[only_a["judge"] == A]
    agreement, splits = gate_agreement(only_a, [A])
    assert agreement.set_index("gate")["share"].dropna().tolist() == [1.0, 1.0] and splits.empty


def test_bad_decisions_are_named():
    with pytest.raises(ValueError, match="'accepted'"):
        gate_agreement(decisions().drop(columns="accepted"), [A, B])
    with pytest.raises(ValueError, match="'left_out'"):
        gate_agreement(decisions().drop(columns="left_out"), [A, B])
    with pytest.raises(ValueError, match=r"judge\(s\) \['judge/b'\]"):
        gate_agreement(decisions(), [A])
    twice = pd.concat([decisions(), decisions().iloc[[0]]])
    with pytest.raises(ValueError, match="decided twice"):
        gate_agreement(twice, [A, B])
    with pytest.raises(ValueError, match="'accepted' holds non-boolean"):
        gate_agreement(decisions().assign(accepted="maybe"), [A, B])
    with pytest.raises(ValueError, match="'reads_verdicts' holds non-boolean"):
        gate_agreement(decisions().assign(reads_verdicts=""), [A, B])


def test_a_dataset_only_the_main_judge_judged_is_refused_and_named_as_not_covered():
    """carry.all_judges_on [recon]: on summedits the main judge judges alone. Its decisions
    would agree with themselves, so they are refused; the markdown says what it covers."""
    recon = decisions()
    summedits = recon[recon["judge"] == B].assign(dataset="summedits")
    with pytest.raises(ValueError, match=r"dataset 'summedits' has no decisions of judge\(s\) "
                                         r"\['judge/a'\]"):
        gate_agreement(pd.concat([recon, summedits]), [A, B])
    agreement, _ = gate_agreement(recon, [A, B])
    markdown = agreement_markdown(agreement, [A, B], main_judge_only=["summedits", "ragtruth"])
    assert ("Covers recon: the datasets every judge judged (carry.all_judges_on). Not covered: "
            "summedits, ragtruth, judged by the main judge alone") in markdown
    assert "summedits:" not in markdown and "recon: 6 changes counted" in markdown
    assert "Covers recon: the datasets every judge judged (carry.all_judges_on).\n" in \
        agreement_markdown(agreement, [A, B])
    with pytest.raises(ValueError, match=r"\['recon'\] are both covered"):
        agreement_markdown(agreement, [A, B], main_judge_only=["recon"])
