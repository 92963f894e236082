"""One judge's analysis on a tiny Recon-like setup whose every number is worked out by hand.

Two environments, three reports each (ids "<env>:<kind>"): a correct report "ok", a flawed
report with a planned flaw "planned" and a flawed report with an unplanned miss "miss".
Recon-72 (the rendering items) is the "ok" and "planned" reports; e1 is a calibration
environment, e2 an evaluation one. Every gate replay decides with the Recon-72 reports its
rubric's scope covers except the graded one (leave-one-report-out); standard rows grade e2's
reports, leave-one-out rows those of both environments.

Which checks answer No (every other verdict is Yes):

    H1 (e1 hand)   e1:planned            K1 (e2 hand)   e2:planned
    H2 (e1 hand)   e1:miss               K2 (e2 hand)   e2:planned
    ADD (review)   e1:ok, e2:ok
    L1 (label)     e1:planned, e2:planned, e1:miss
    L2 (label)     e2:ok, e2:miss

The hand chain (free, seed 0, two rounds), scripted:
    e1 round 1: delete h1, keep h2, add ADD      round 2: keep h2, keep r1-add1
    e2 round 1: delete k1, keep k2, add ADD      round 2: delete k2, keep r1-add1
Ungated rubrics: e1 {h1,h2} -> {h2,ADD} -> {h2,ADD};  e2 {k1,k2} -> {k2,ADD} -> {ADD}.
"""

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rubriclab.carry.analysis import (
    Chain, Setting, analyse, failing_rows, final_rubric_set, gate_evidence_reading, gate_items,
    pick_chain, recon_item_name, short_item_name,
)
from rubriclab.carry.experiment import (
    ITEM_COLUMNS, RATE_COLUMNS, JudgeSpec, Verdicts, check_texts_by_scope, judge_plan,
    run_reviser_chain, verdict_rows,
)
from rubriclab.carry.replay import checked_rubric_round_trip
from rubriclab.carry.revision import Rubric, RubricCheck
from rubriclab.carry.sources import ALL_SCOPE

DESCRIPTION = "a security findings report"
H1, H2 = "The report names the public bucket.", "The report cites the bucket policy."
K1, K2 = "The report names the open port.", "The report gives the port a severity."
ADD = "The report uses section headings."
L1, L2 = "The report invents no finding.", "The report covers every resource in scope."

FAILS = {
    H1: {"e1:planned"}, H2: {"e1:miss"},
    K1: {"e2:planned"}, K2: {"e2:planned"},
    ADD: {"e1:ok", "e2:ok"},
    L1: {"e1:planned", "e2:planned", "e1:miss"}, L2: {"e2:ok", "e2:miss"},
}
# one-call renderings of the start rubrics on Recon-72: "pass", "fail" or "unparseable"
RENDERED = {
    ("hand", "all_in_one"): {"e1:ok": "fail", "e1:planned": "fail", "e2:ok": "pass",
                             "e2:planned": "pass"},
    ("label", "all_in_one"): {"e1:ok": "pass", "e1:planned": "unparseable", "e2:ok": "pass",
                              "e2:planned": "fail"},
}


def make_items() -> pd.DataFrame:
    rows = []
    for env, split in (("e1", "calibration"), ("e2", "evaluation")):
        for kind, label in (("ok", "correct"), ("planned", "flawed"), ("miss", "flawed")):
            rows.append(dict(item_id=f"{env}:{kind}", task=f"Brief {env}",
                             output=f"Report {env} {kind}", label=label, scope=env, split=split,
                             unplanned=kind == "miss", in_recon72=kind != "miss"))
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


def start_sets() -> dict[str, dict[str, Rubric]]:
    return {
        "hand": {
            "e1": Rubric("hand:e1", (RubricCheck("h1", H1, "hand"), RubricCheck("h2", H2, "hand"))),
            "e2": Rubric("hand:e2", (RubricCheck("k1", K1, "hand"), RubricCheck("k2", K2, "hand"))),
        },
        "label": {ALL_SCOPE: Rubric("label:recon", (RubricCheck("l1", L1, "label"),
                                                     RubricCheck("l2", L2, "label")))},
    }


SCRIPT = {  # first id shown to the reviser -> its answer
    "h1": [{"id": "h1", "action": "delete"}, {"id": "h2", "action": "keep"},
           {"action": "add", "text": ADD}],
    "h2": [{"id": "h2", "action": "keep"}, {"id": "r1-add1", "action": "keep"}],
    "k1": [{"id": "k1", "action": "delete"}, {"id": "k2", "action": "keep"},
           {"action": "add", "text": ADD}],
    "k2": [{"id": "k2", "action": "delete"}, {"id": "r1-add1", "action": "keep"}],
}


def scripted_ask(request):
    prompt = request.messages[-1].content
    first_id = prompt.split("Checklist:\n[", 1)[1].split("]", 1)[0]
    return SimpleNamespace(outcome="ok", text=json.dumps({"checks": SCRIPT[first_id]}), error="")


def hand_chain() -> Chain:
    record = run_reviser_chain(start_sets()["hand"], 2, "free", 0, "fake/reviser", 0.7, 900,
                               DESCRIPTION, scripted_ask)
    checked_rubric_round_trip(record)
    return Chain("hand", json.loads(json.dumps(record)))


def judged(items: pd.DataFrame, chain: Chain, starts=None, fails=None) -> Verdicts:
    """The judging job's plan, answered from FAILS and RENDERED."""
    starts = start_sets() if starts is None else starts
    fails = FAILS if fails is None else fails
    texts = check_texts_by_scope(starts.values(), [chain.record])
    requests, rows = judge_plan(items, texts, DESCRIPTION, JudgeSpec("fake/judge", 1, 0.0, 4),
                                rendering_sets=starts, renderings=("all_in_one",),
                                rendering_item_ids=items.loc[items["in_recon72"], "item_id"])
    completions = []
    for row in rows:
        if row["kind"] == "check":
            answer = "no" if row["item_id"] in fails[row["check_text"]] else "yes"
            completions.append(SimpleNamespace(outcome="ok", parsed=answer,
                                               key=f"k{len(completions)}"))
            continue
        outcome = RENDERED[(row["source"], row["rendering"])][row["item_id"]]
        if outcome == "unparseable":
            completions.append(SimpleNamespace(outcome="unparseable", parsed=None,
                                               key=f"k{len(completions)}"))
        else:
            completions.append(SimpleNamespace(outcome="ok", parsed=["yes", "no"] if
                                               outcome == "fail" else ["yes", "yes"],
                                               key=f"k{len(completions)}"))
    return Verdicts(verdict_rows(rows, completions))


@pytest.fixture(scope="module")
def analysed():
    items = make_items()
    chain = hand_chain()
    setting = Setting(dataset="recon", judge="fake/judge", gates=("none", "S"),
                      renderings=("per_check", "all_in_one"), B=100, seed=0, loo_gates=("S",))
    out = analyse(setting, items, judged(items, chain), start_sets(), [chain])
    return SimpleNamespace(items=items, chain=chain, out=out)


def rate(rates: pd.DataFrame, **where) -> pd.DataFrame:
    mask = np.ones(len(rates), dtype=bool)
    for column, value in where.items():
        mask &= (rates[column] == value).to_numpy()
    return rates[mask]


def values(rates: pd.DataFrame, **where) -> list:
    """[correct_passed, flawed_caught, unplanned_caught] of the one state selected."""
    selected = rate(rates, **where).set_index("metric")
    assert len(selected) == 3, (where, selected)
    return [selected.loc[m, "value"] for m in ("correct_passed", "flawed_caught",
                                               "unplanned_caught")]


def test_rates_have_the_expected_rows(analysed):
    rates = analysed.out["rates"]
    # recon72: 2 sources x 2 renderings; recon108 all: 2 starts + ungated and loo S x 2
    # rounds = 6 states; evaluation: those 6 + standard S x 2 rounds = 8; 3 metrics each
    assert len(rates) == (4 + 6 + 8) * 3
    assert sorted(rates.columns) == sorted(RATE_COLUMNS)
    keys = rates[["item_set", "environments", "source", "rendering", "gate", "variant",
                  "round"]].drop_duplicates()
    assert len(keys) == 18
    recon72 = rate(rates, item_set="recon72")
    assert set(recon72["environments"]) == {"all"}
    assert set(zip(recon72["source"], recon72["rendering"])) == {
        ("hand", "per_check"), ("hand", "all_in_one"), ("label", "per_check"),
        ("label", "all_in_one")}
    recon108 = rate(rates, item_set="recon108")
    assert set(recon108["environments"]) == {"all", "evaluation"}
    assert set(recon108["variant"]) == {"standard", "loo"}
    assert set(rate(recon108, variant="loo")["gate"]) == {"S"}
    # a gated standard rubric is never scored where its evidence came from
    assert set(rate(recon108, variant="standard", gate="S")["environments"]) == {"evaluation"}
    assert set(rate(recon108, round=0)["source"]) == {"hand", "label"}
    assert set(rates["dataset"]) == {"recon"} and set(rates["judge"]) == {"fake/judge"}
    assert set(rate(rates, round=2)["mode"]) == {"free"}


def test_recon72_rendering_rates(analysed):
    rates = rate(analysed.out["rates"], item_set="recon72")
    # hand per_check: e1:ok, e2:ok pass; e1:planned (H1), e2:planned (K1) fail -> 100 / 100
    hand = values(rates, source="hand", rendering="per_check")
    assert hand[:2] == [100.0, 100.0]
    assert math.isnan(hand[2])  # Recon-72 here holds no unplanned miss
    # label per_check: e1:ok pass, e2:ok fails L2 -> 1/2; both planned caught by L1
    assert values(rates, source="label", rendering="per_check")[:2] == [50.0, 100.0]
    # hand all_in_one: e1:ok fail, e2:ok pass -> 50; e1:planned fail, e2:planned pass -> 50
    assert values(rates, source="hand", rendering="all_in_one")[:2] == [50.0, 50.0]
    # label all_in_one: e1:planned unparseable leaves the flawed denominator: 1/1
    label = rate(rates, source="label", rendering="all_in_one").set_index("metric")
    assert label.loc["correct_passed", "value"] == 100.0
    assert (label.loc["flawed_caught", "value"], label.loc["flawed_caught", "n"],
            label.loc["flawed_caught", "n_undetermined"]) == (100.0, 1, 1)


def test_recon108_rates_of_starts_and_chains(analysed):
    rates = rate(analysed.out["rates"], item_set="recon108", environments="all")
    # hand start: ok reports pass (2/2); caught e1:planned, e1:miss, e2:planned (3/4);
    # unplanned e1:miss caught, e2:miss not (1/2)
    assert values(rates, source="hand", round=0) == [100.0, 75.0, 50.0]
    # label start: e2:ok fails L2 (1/2); all four flawed caught; both misses caught
    assert values(rates, source="label", round=0) == [50.0, 100.0, 100.0]
    # ungated round 1: e1 {H2, ADD}, e2 {K2, ADD}: both ok fail ADD (0/2);
    # caught e1:miss (H2), e2:planned (K2): 2/4; unplanned 1/2
    assert values(rates, gate="none", variant="standard", round=1) == [0.0, 50.0, 50.0]
    # ungated round 2: e2 {ADD}: only e1:miss caught -> 1/4
    assert values(rates, gate="none", variant="standard", round=2) == [0.0, 25.0, 50.0]


def test_loo_gate_s_decides_each_report_without_it(analysed):
    rates = rate(analysed.out["rates"], item_set="recon108", environments="all")
    # Evidence: the Recon-72 reports of the rubric's scope except the scored one.
    # e1:ok    {e1:planned}: delete h1 refused (unique catch), add refused (no correct item)
    # e1:planned {e1:ok}: delete h1 refused (no flawed item), add refused (blame on e1:ok)
    # e1:miss  {e1:ok, e1:planned}: both refused        -> e1 {h1, h2} for all three
    # e2:ok    {e2:planned}: delete k1 accepted (k2 also fails it), add refused (no correct
    #          item); round 2 delete k2 refused (now unique)  -> {k2}: e2:ok passes
    # e2:planned {e2:ok}: every change refused -> {k1, k2}: caught
    # e2:miss  {e2:ok, e2:planned}: as e2:ok -> {k2}: not caught
    for round_ in (1, 2):
        assert values(rates, gate="S", variant="loo", round=round_) == [100.0, 75.0, 50.0]
    # ... and it differs from the ungated chain (0 / 50 / 50, then 0 / 25 / 50)
    assert values(rates, gate="none", variant="standard", round=2) == [0.0, 25.0, 50.0]
    n = rate(rates, gate="S", variant="loo").groupby("round")["n_no_evidence"].first()
    # refused without evidence, per replay: round 1 the add for e1:ok and for e2:ok, the
    # delete of h1 for e1:planned and of k1 for e2:planned; round 2 also the delete of k2 for
    # e2:planned. Per scope the mean over its three reports' replays, summed over e1 and e2:
    # round 1 (1 + 1 + 0) / 3 + (1 + 1 + 0) / 3; round 2 (1 + 1 + 0) / 3 + (1 + 2 + 0) / 3
    assert n.to_dict() == pytest.approx({1: 4 / 3, 2: 5 / 3})


def test_evaluation_environment_rates(analysed):
    rates = rate(analysed.out["rates"], item_set="recon108", environments="evaluation")
    assert set(rates["n"]) <= {0, 1, 2}
    # e2 only: hand start passes e2:ok, catches e2:planned, misses e2:miss
    assert values(rates, source="hand", round=0) == [100.0, 50.0, 0.0]
    assert values(rates, source="label", round=0) == [0.0, 100.0, 100.0]
    assert values(rates, gate="none", variant="standard", round=2) == [0.0, 0.0, 0.0]
    # standard Gate S on e2 decides with e2's other Recon-72 reports (as loo): e2:ok's replay
    # (evidence e2:planned) deletes k1 (k2 also fails e2:planned) and keeps k2 (now unique),
    # so e2:ok passes {k2}; e2:planned's (evidence e2:ok) refuses every change -> caught;
    # e2:miss's (both) as e2:ok's -> {k2}: not caught
    assert values(rates, gate="S", variant="standard", round=2) == [100.0, 50.0, 0.0]
    gated = rate(rates, gate="S", variant="standard")
    # only e2's replays count here: round 1 (1 + 1 + 0) / 3, round 2 (1 + 2 + 0) / 3
    assert gated.groupby("round")["n_no_evidence"].first().to_dict() == pytest.approx(
        {1: 2 / 3, 2: 1.0})
    n = rate(rates, gate="S", variant="standard", round=2).set_index("metric")["n"]
    assert n.to_dict() == {"correct_passed": 1, "flawed_caught": 2, "unplanned_caught": 1}
    assert values(rates, gate="S", variant="loo", round=2) == [100.0, 50.0, 0.0]


def test_gate_decisions(analysed):
    decisions = analysed.out["decisions"]
    s = decisions[(decisions["gate"] == "S") & (decisions["variant"] == "standard")]
    # one replay per evidence set: each Recon-72 report left out in turn, and one with all of
    # its scope's reports for the reports outside Recon-72 (e1:miss, e2:miss)
    assert set(zip(s["scope"], s["left_out"])) == {
        ("e1", "e1:ok"), ("e1", "e1:planned"), ("e1", ""),
        ("e2", "e2:ok"), ("e2", "e2:planned"), ("e2", "")}

    def replay(scope, left_out):
        here = s[(s["scope"] == scope) & (s["left_out"] == left_out)]
        return [(r.round, r.action, r.check_id, r.accepted, r.evidence, r.reads_verdicts)
                for r in here.itertuples(index=False)]

    # e2 is an evaluation environment: its rubric decides with e2's other reports. Without
    # e2:ok (evidence e2:planned) S deletes k1 (k2 also fails e2:planned) and refuses to
    # delete k2 in round 2, on evidence: k2 now holds e2:planned as a unique catch. The add
    # has no correct report to be judged on. Round 2: the recorded keep of r1-add1 is dropped
    # (never added under S).
    assert replay("e2", "e2:ok") == [
        (1, "delete", "k1", True, True, True), (1, "keep", "k2", True, True, False),
        (1, "add", "", False, False, False),
        (2, "delete", "k2", False, True, True),
    ]
    refusal = s[(s["left_out"] == "e2:ok") & (s["round"] == 2)].iloc[0]
    assert "unique catch" in refusal["reason"]
    # without e2:planned (evidence e2:ok, no flawed report) no deletion can be judged; the
    # add fails e2:ok, so it is refused for its blame, on evidence; in round 2 k1, which the
    # reviser had deleted, gets an explicit keep
    assert replay("e2", "e2:planned") == [
        (1, "delete", "k1", False, False, False), (1, "keep", "k2", True, True, False),
        (1, "add", "", False, True, True),
        (2, "delete", "k2", False, False, False), (2, "keep", "k1", True, True, False),
    ]
    assert replay("e1", "e1:ok") == [
        (1, "delete", "h1", False, True, True), (1, "keep", "h2", True, True, False),
        (1, "add", "", False, False, False),
        (2, "keep", "h2", True, True, False), (2, "keep", "h1", True, True, False),
    ]
    assert set(decisions["variant"]) == {"standard"}
    assert set(decisions.loc[decisions["gate"] == "none", "left_out"]) == {""}
    assert set(decisions["source"]) == {"hand"} and set(decisions["mode"]) == {"free"}


def test_deletions_use_the_state_before_the_deletion(analysed):
    deletions = analysed.out["deletions"]
    got = [(r.round, r.scope, r.check_id, r.origin, r.had_unique_catch, r.had_blame)
           for r in deletions.itertuples(index=False)]
    # h1 (round 1): alone fails e1:planned in {h1,h2} -> unique catch.
    # k1 (round 1): e2:planned fails k1 AND k2 -> no unique catch.
    # k2 (round 2): in {k2, ADD} k2 alone fails e2:planned -> unique catch (it had none in
    # the start rubric, so this is the state before the deletion, not the start).
    assert got == [(1, "e1", "h1", "hand", True, False), (1, "e2", "k1", "hand", False, False),
                   (2, "e2", "k2", "hand", True, False)]


def test_attribution_of_every_ungated_state(analysed):
    attribution = analysed.out["attribution"]
    # 2 scopes x 3 states (rounds 0..2): e1 2+2+2 checks, e2 2+2+1 checks
    assert len(attribution) == 11
    row = attribution[(attribution["scope"] == "e1") & (attribution["round"] == 1)
                      & (attribution["check_id"] == "r1-add1")].iloc[0]
    # ADD fails e1:ok alone: blame 1, no credit; origin of a reviewer's add
    assert (row["credit"], row["blame"], row["origin"]) == (0.0, 1.0, "review by fake/reviser")
    e2_start = attribution[(attribution["scope"] == "e2") & (attribution["round"] == 0)]
    # e2:planned fails k1 and k2: half a catch each
    assert e2_start["credit"].tolist() == [0.5, 0.5]
    assert e2_start["deleted_next_round"].tolist() == [True, False]
    assert set(attribution["n_items"]) == {3}


def test_failing_rows_give_json_positions(analysed):
    items, chain = analysed.items, analysed.chain
    verdicts = judged(items, chain)
    versions = {"hand": start_sets()["hand"], "after review": final_rubric_set(chain),
                "label": start_sets()["label"]}
    rows = failing_rows("recon", items, verdicts, versions,
                        {i: recon_item_name(i) for i in items["item_id"]})
    got = {(r["item_id"], r["rubric_version"]): r["failing_positions"] for r in rows}
    assert len(rows) == 6 * 3
    assert got[("e1:planned", "hand")] == "[1]"         # H1
    assert got[("e1:miss", "hand")] == "[2]"            # H2
    assert got[("e1:ok", "after review")] == "[2]"      # {H2, ADD}: ADD second
    assert got[("e2:planned", "hand")] == "[1, 2]"      # K1, K2
    assert got[("e2:ok", "after review")] == "[1]"      # {ADD}
    assert got[("e2:planned", "after review")] == "[]"
    assert got[("e2:miss", "label")] == "[2]"           # L2
    assert got[("e1:planned", "label")] == "[1]"
    first = rows[0]
    assert first["dataset"] == "recon" and first["label"] == "correct"
    assert first["item_name"] == "ok"


def test_pick_chain_and_item_names():
    a = Chain("label", {"mode": "free", "seed": 2})
    b = Chain("label", {"mode": "free", "seed": 1})
    c = Chain("hand", {"mode": "delete_only", "seed": 0})
    assert pick_chain([a, b, c], [("label", "fixed_count"), ("label", "free")]) is b
    with pytest.raises(ValueError, match="no chain"):
        pick_chain([c], [("label", "free")])
    assert recon_item_name("recon:storage:wrong_resource-1") == "wrong resource 1"
    name = short_item_name("ragtruth:12345")
    assert len(name) == 5 and name == name.upper() and name == short_item_name("ragtruth:12345")


def test_loo_of_a_single_environment_learns_from_its_other_reports():
    items = make_items()
    items = items[items["scope"] == "e1"].reset_index(drop=True)
    starts = {"hand": {"e1": start_sets()["hand"]["e1"]}}
    record = run_reviser_chain(starts["hand"], 2, "free", 0, "fake/reviser", 0.7, 900,
                               DESCRIPTION, scripted_ask)
    chain = Chain("hand", record)
    setting = Setting(dataset="recon", judge="fake/judge", gates=("none", "S+P"),
                      renderings=("per_check",), B=20, seed=0)
    out = analyse(setting, items, judged(items, chain, starts), starts, [chain])
    rates = rate(out["rates"], item_set="recon108", environments="all")
    # each e1 report is scored by a rubric whose gate saw the other Recon-72 report of e1:
    # the deletion of h1 and the add are refused each time -> {H1, H2} catches everything
    assert values(rates, gate="S+P", variant="loo", round=2) == [100.0, 100.0, 100.0]
    assert values(rates, gate="none", variant="standard", round=2) == [0.0, 50.0, 100.0]
    # e1 is a calibration environment: no gated standard rubric is scored on it
    assert rate(rates, gate="S+P", variant="standard").empty


def test_a_dataset_wide_chain_decides_with_every_environments_reports_but_the_graded_one():
    items = make_items()

    def ask(request):
        entries = [{"id": "l1", "action": "delete"}, {"id": "l2", "action": "delete"},
                   {"action": "add", "text": ADD}]
        return SimpleNamespace(outcome="ok", text=json.dumps({"checks": entries}), error="")

    starts = {"label": start_sets()["label"]}
    chain = Chain("label", run_reviser_chain(starts["label"], 1, "free", 0, "fake/reviser",
                                             0.7, 900, DESCRIPTION, ask, source="label"))
    setting = Setting(dataset="recon", judge="fake/judge", gates=("none", "R", "S", "S+P"),
                      renderings=("per_check",), B=20, seed=0, loo_gates=("S", "S+P"))
    out = analyse(setting, items, judged(items, chain, starts), starts, [chain])
    decisions = out["decisions"]
    s = decisions[decisions["gate"] == "S"]
    # Gate S: L1 alone fails e1:planned and e2:planned, so deleting l1 is refused in every
    # replay, with the other environment's report when one of them is left out
    deletes = s[(s["action"] == "delete") & (s["check_id"] == "l1")]
    assert not deletes["accepted"].any() and deletes["evidence"].all()
    catches = dict(zip(deletes["left_out"], deletes["reason"]))
    assert "holds 1 unique catch" in catches["e1:planned"]
    assert "holds 1 unique catch" in catches["e2:planned"]
    assert "holds 2 unique catch" in catches[""]
    # one replay per Recon-72 report graded, one for the reports outside Recon-72; Gate R
    # (standard only) grades e2's reports, Gates S and S+P (also leave-one-out) both
    # environments'
    assert set(decisions.loc[decisions["gate"] == "R", "left_out"]) == {"e2:ok", "e2:planned",
                                                                        ""}
    for gate in ("S", "S+P"):
        assert set(decisions.loc[decisions["gate"] == gate, "left_out"]) == {
            "e1:ok", "e1:planned", "e2:ok", "e2:planned", ""}
    # l2 fails no flawed Recon-72 report: S deletes it; the add fails a correct one: refused
    assert set(s.loc[s["check_id"] == "l2", "accepted"]) == {True}
    assert set(s.loc[s["action"] == "add", "accepted"]) == {False}
    # Gate S+P: both deletions are P's refusals (label-derived), on evidence, no verdict read
    sp = decisions[(decisions["gate"] == "S+P") & (decisions["action"] == "delete")]
    assert not sp["accepted"].any() and sp["evidence"].all() and not sp["reads_verdicts"].any()
    assert sp["reason"].str.startswith("P: ").all()
    rates = out["rates"]
    assert set(rate(rates, gate="S+P")["n_no_evidence"]) == {0.0}
    # S: {l1} on e2: e2:ok passes, e2:planned caught, e2:miss missed
    evaluation = rate(rates, item_set="recon108", environments="evaluation")
    assert values(evaluation, gate="S", variant="standard", round=1) == [100.0, 50.0, 0.0]
    # S+P: {l1, l2} on both environments: e2:ok fails L2; every flawed report caught
    everywhere = rate(rates, item_set="recon108", environments="all")
    assert values(everywhere, gate="S+P", variant="loo", round=1) == [50.0, 100.0, 100.0]


def test_gate_items_under_each_reading_of_the_recon_gate_evidence():
    items = make_items()
    # own_reports: every Recon-72 report (each replay leaves out the one it grades)
    assert list(gate_items(items, "recon")["item_id"]) == [
        "e1:ok", "e1:planned", "e2:ok", "e2:planned"]
    # calibration_environments: only e1's, the calibration environment
    assert list(gate_items(items, "recon", "calibration_environments")["item_id"]) == [
        "e1:ok", "e1:planned"]
    # SummEdits / RAGTruth: the calibration split, whatever the Recon key says
    labelled = items.assign(in_recon72=False)
    for reading in ("own_reports", "calibration_environments", None):
        assert list(gate_items(labelled, "summedits", reading)["item_id"]) == [
            "e1:ok", "e1:planned", "e1:miss"]
    with pytest.raises(ValueError, match=r"config key 'carry.recon.gate_evidence': "
                                         r"'calibration' is not one of"):
        gate_items(items, "recon", "calibration")
    with pytest.raises(ValueError, match="carry.recon.gate_evidence"):
        Setting(dataset="recon", judge="fake/judge", gates=("none",), renderings=(), B=1,
                seed=0, gate_evidence=None)


def test_calibration_environments_leave_an_evaluation_hand_chain_without_evidence():
    items = make_items()
    chain = hand_chain()
    setting = Setting(dataset="recon", judge="fake/judge", gates=("none", "S"),
                      renderings=("per_check",), B=20, seed=0, loo_gates=("S",),
                      gate_evidence="calibration_environments")
    out = analyse(setting, items, judged(items, chain), start_sets(), [chain])
    s = out["decisions"][out["decisions"]["gate"] == "S"]
    # e2 (evaluation) has no report in the evidence: one replay, nothing left out, and every
    # change of it refused for want of evidence (round 2's keep of r1-add1 is dropped, k1 kept)
    e2 = s[s["scope"] == "e2"]
    assert set(e2["left_out"]) == {""}
    changes = e2[e2["action"] != "keep"]
    assert [(r.round, r.action, r.check_id) for r in changes.itertuples(index=False)] == [
        (1, "delete", "k1"), (1, "add", ""), (2, "delete", "k2")]
    assert not changes["accepted"].any() and not changes["evidence"].any()
    assert changes["reason"].str.contains("has no calibration evidence").all()
    # e1 (calibration) still decides leave-one-report-out with its other reports
    assert set(s.loc[s["scope"] == "e1", "left_out"]) == {"e1:ok", "e1:planned", ""}
    rates = out["rates"]
    evaluation = rate(rates, item_set="recon108", environments="evaluation", gate="S")
    # e2 keeps {K1, K2}: e2:ok passes, e2:planned caught, e2:miss missed
    assert values(evaluation, variant="standard", round=2) == [100.0, 50.0, 0.0]
    # refusals for want of evidence, e2's one replay: 2 in round 1, 3 by round 2 (under
    # own_reports (1 + 1 + 0) / 3 and (1 + 2 + 0) / 3, test_evaluation_environment_rates)
    for variant in ("standard", "loo"):  # the loo replay of an e2 report is the standard one
        n = rate(evaluation, variant=variant).groupby("round")["n_no_evidence"].first()
        assert n.to_dict() == {1: 2.0, 2: 3.0}, variant
    everywhere = rate(rates, item_set="recon108", environments="all", gate="S", variant="loo")
    # plus e1's mean over its three replays, (1 + 1 + 0) / 3 in each round
    assert everywhere.groupby("round")["n_no_evidence"].first().to_dict() == pytest.approx(
        {1: 2 + 2 / 3, 2: 3 + 2 / 3})


def test_the_reading_of_the_gate_evidence_a_run_used_is_one_sentence():
    own = gate_evidence_reading({"carry": {"recon": {"gate_evidence": "own_reports"}}})
    other = gate_evidence_reading(
        {"carry": {"recon": {"gate_evidence": "calibration_environments"}}})
    assert "leave-one-report-out" in own and "own_reports" in own
    assert "decided with calibration labels" in other and "calibration_environments" in other
    assert "refuse its every change for want of evidence" in other
    with pytest.raises(ValueError, match="'carry.recon.gate_evidence' is missing"):
        gate_evidence_reading({"carry": {"recon": {}}})
    with pytest.raises(ValueError, match="'both' is not one of"):
        gate_evidence_reading({"carry": {"recon": {"gate_evidence": "both"}}})


def test_analyse_refuses_overlapping_evidence_and_scores():
    # an item listed twice, once per split, would be gate evidence and scored
    items = make_items()
    chain = hand_chain()
    verdicts = judged(items, chain)
    twice = pd.concat([items, items[items["item_id"] == "e2:ok"].assign(split="calibration")],
                      ignore_index=True)
    setting = Setting(dataset="recon", judge="fake/judge", gates=("none",),
                      renderings=("per_check",), B=20, seed=0)
    with pytest.raises(ValueError, match=r"recon items: item id\(s\) \['e2:ok'\] listed more "
                                         "than once"):
        analyse(setting, twice, verdicts, start_sets(), [chain])


# --- a labelled dataset: gates decided on calibration, rates on evaluation --------------------

def test_labelled_dataset_rates_on_the_evaluation_split():
    # calibration: c1 (correct), f1 (flawed); evaluation: c2 (correct), f2, f3 (flawed)
    items = pd.DataFrame([
        dict(item_id=i, task=f"Doc {i}", output=f"Summary {i}", label=label, scope=ALL_SCOPE,
             split=split, unplanned=False, in_recon72=False)
        for i, label, split in [("c1", "correct", "calibration"), ("f1", "flawed", "calibration"),
                                ("c2", "correct", "evaluation"), ("f2", "flawed", "evaluation"),
                                ("f3", "flawed", "evaluation")]], columns=ITEM_COLUMNS)
    starts = {"label": {ALL_SCOPE: Rubric("label:summedits", (
        RubricCheck("l1", "L1.", "label"), RubricCheck("l2", "L2.", "label")))}}
    fails = {"L1.": {"f1", "f2"}, "L2.": {"f3"}, "N.": {"c2"}}

    def ask(request):
        entries = [{"id": "l1", "action": "delete"}, {"id": "l2", "action": "keep"},
                   {"action": "add", "text": "N."}]
        return SimpleNamespace(outcome="ok", text=json.dumps({"checks": entries}), error="")

    record = run_reviser_chain(starts["label"], 1, "free", 1, "fake/reviser", 0.7, 900,
                               "a summary", ask)
    chain = Chain("label", record)
    setting = Setting(dataset="summedits", judge="fake/judge", gates=("none", "R", "P", "S"),
                      renderings=("per_check",), B=50, seed=0)
    out = analyse(setting, items, judged(items, chain, starts, fails), starts, [chain])
    rates = out["rates"]
    # start (1) + 4 gates x 1 round = 5 states, 2 metrics, evaluation items only
    assert len(rates) == 10
    assert set(rates["item_set"]) == {"evaluation"} and set(rates["variant"]) == {"standard"}
    assert set(rates["metric"]) == {"correct_passed", "flawed_caught"}

    def two(**where):
        selected = rate(rates, **where).set_index("metric")["value"]
        return [selected["correct_passed"], selected["flawed_caught"]]

    # start {L1, L2}: c2 passes; f2 (L1), f3 (L2) caught
    assert two(round=0) == [100.0, 100.0]
    # ungated {L2, N}: c2 fails N; f2 lost -> 1/2
    assert two(gate="none", round=1) == [0.0, 50.0]
    # R: deleting l1 loses f1 on calibration (BA (1 + 1)/2 -> (1 + 0)/2), refused; N fails no
    # calibration item (tie), accepted. P: l1 frozen, N accepted. S: l1 holds f1 as a
    # unique catch, N has no calibration blame. All three: {L1, L2, N}
    for gate in ("R", "P", "S"):
        assert two(gate=gate, round=1) == [0.0, 100.0], gate
    # attribution and deletions on the evaluation items: l1 fails f2 alone in {l1, l2}
    deletions = out["deletions"]
    assert deletions[["check_id", "origin", "had_unique_catch"]].values.tolist() == [
        ["l1", "label", True]]


# --- Tables 4 and 5: the paper's rows -------------------------------------------------------

def verdicts_from(fails: dict[str, set], item_ids) -> Verdicts:
    rows = [dict(item_id=i, kind="check", scope="", source="", rendering="per_check",
                 check_text=text, vote=0, answer="no" if i in failing else "yes")
            for text, failing in fails.items() for i in item_ids]
    return Verdicts(pd.DataFrame(rows))


def test_table4_rows_are_the_papers_reports_with_pass_and_fail():
    variants = ["correct-1", "correct-2", "correct-part-b", "fabricated_finding-1",
                "missed_finding-1", "missed_finding-2", "wrong_resource-1", "unchecked_omission-1"]
    items = pd.DataFrame([dict(item_id=f"recon:s:{v}", task="t", output=v,
                               label="correct" if v.startswith("correct") else "flawed",
                               scope="s", split="calibration", unplanned=v.startswith("unch"),
                               in_recon72=v != "correct-part-b") for v in variants])
    starts = {"hand": {"s": Rubric("h", (RubricCheck("h1", H1, "hand"),))},
              "label": {ALL_SCOPE: Rubric("l", (RubricCheck("l1", L1, "label"),))}}
    record = {"source": "hand", "mode": "free", "seed": 1, "reviser": "r", "rounds": 0,
              "scopes": {"s": {"start": {"name": "h", "checks": [
                  {"id": "h1", "text": H1, "origin": "hand", "lineage": []}]}, "rounds": []}}}
    from rubriclab.carry.analysis import recon_failing_rows
    verdicts = verdicts_from({H1: {"recon:s:missed_finding-1"}, L1: set()}, items["item_id"])
    rows = recon_failing_rows(items, verdicts, starts, [Chain("hand", record)], "s", "After")
    hand = [(r["item_name"], r["label"], r["failing_positions"]) for r in rows
            if r["rubric_version"] == "Hand-written"]
    assert hand == [("correct 1", "pass", "[]"), ("correct 2", "pass", "[]"),
                    ("correct (Part B)", "pass", "[]"), ("missed finding", "fail", "[1]"),
                    ("fabricated", "fail", "[]"), ("wrong resource", "fail", "[]")]
    with pytest.raises(ValueError, match=r"no report\(s\) \['correct-part-b'\]"):
        recon_failing_rows(items[items["item_id"] != "recon:s:correct-part-b"], verdicts,
                           starts, [Chain("hand", record)], "s", "After")


def test_table5_takes_the_four_responses_of_one_example():
    from rubriclab.carry.analysis import table5_example
    rows = [("a1", "A", "correct"), ("a2", "A", "flawed"),                    # one of each
            ("b1", "B", "correct"), ("b2", "B", "flawed"), ("b3", "B", "correct"),
            ("b4", "B", "flawed"), ("b5", "B", "flawed"),                     # the example
            ("c1", "C", "correct"), ("c2", "C", "correct"), ("c3", "C", "flawed"),
            ("c4", "C", "flawed")]                                            # later, also 2+2
    items = pd.DataFrame([dict(item_id=i, task=t, label=label, split="evaluation")
                          for i, t, label in rows]
                         + [dict(item_id="0", task="Z", label="correct", split="calibration")])
    example = table5_example(items)
    assert list(example["item_id"]) == ["b1", "b3", "b2", "b4"]
    # no task with two of each: the one with most of its rarer label
    fewer = items[~items["task"].isin(["B", "C"])]
    assert list(table5_example(fewer)["item_id"]) == ["a1", "a2"]
    with pytest.raises(ValueError, match="no RAGTruth evaluation item"):
        table5_example(items[items["split"] == "calibration"])


def test_an_analysis_logs_its_progress(caplog):
    import logging

    items = make_items()
    chain = hand_chain()
    setting = Setting(dataset="recon", judge="fake/judge", gates=("none", "S"),
                      renderings=("per_check",), B=100, seed=0, loo_gates=("S",))
    with caplog.at_level(logging.INFO, logger="rubriclab.carry.analysis"):
        analyse(setting, items, judged(items, chain), start_sets(), [chain])
    lines = [r.getMessage() for r in caplog.records if r.name == "rubriclab.carry.analysis"]
    assert any("carry analysis of recon under fake/judge: 1/1 chains replayed" in line
               for line in lines)
