"""rubriclab.replication.readers_carry on small hand-made outputs: every qualitative reader on
a table where every part holds, one where a part fails and one where a part cannot be tested;
measured readers on tables whose value and interval are checked by hand."""

from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import beta

from rubriclab.replication.page import load_claims
from rubriclab.replication.readers_carry import READERS

REPO = Path(__file__).resolve().parents[2]

JUDGE, OTHER = "m/judge", "m/other"
OPUS, SONNET = "m/opus", "m/sonnet"
CONFIG = {"models": {"judge": JUDGE, "reviser": OPUS, "revisers": [OPUS, SONNET]},
          "carry": {"judges": [JUDGE, OTHER],
                    "chains": {"seeds": [1], "recon": {"chains": ["hand:free", "label:free"]}}},
          "labels": {}}
METRICS = ["correct_passed", "flawed_caught", "unplanned_caught"]


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = 0.0 if k == 0 else beta.ppf(0.025, k, n - k + 1)
    high = 1.0 if k == n else beta.ppf(0.975, k + 1, n - k)
    return 100 * low, 100 * high


# --------------------------------------------------------------------------- tables

def fig1_rows():
    rows = []
    panel_a = {("hand", "per_check"): (96, 80), ("hand", "scale"): (94, 78),
               ("generated", "per_check"): (4, 100), ("generated", "scale"): (6, 99)}
    for (source, rendering), (cp, fc) in panel_a.items():
        for metric, value, n in (("correct_passed", cp, 24), ("flawed_caught", fc, 48)):
            rows.append(dict(panel="a", judge=JUDGE, source=source, rendering=rendering,
                             metric=metric, value=value, low=value - 10, high=value + 1, n=n,
                             n_undetermined=0))
    panel_b = {("hand", "per_check"): (96, 92), ("hand", "scale"): (94, 60),
               ("generated", "per_check"): (4, 2), ("generated", "scale"): (6, 40)}
    for (source, rendering), values in panel_b.items():
        for judge, value in zip((JUDGE, OTHER), values):
            rows.append(dict(panel="b", judge=judge, source=source, rendering=rendering,
                             metric="correct_passed", value=value, low=0, high=100, n=24,
                             n_undetermined=0))
    return rows


def fig2_rows():
    rows = []
    def add(dataset, rendering, length, cp, fc, n=50):
        rows.append(dict(dataset=dataset, rendering=rendering, length=length, runs=1,
                         n_correct=n, n_flawed=n, n_undetermined=0, correct_passed=cp,
                         flawed_caught=fc))
    add("summedits", "per_check", 3, 80, 70)
    add("summedits", "per_check", 5, 76, 74)
    add("summedits", "per_check", 10, 72, 78)
    add("summedits", "paragraph", 3, 80, 70)
    add("summedits", "paragraph", 10, 70, 80)
    add("ragtruth", "per_check", 3, 90, 90)
    add("ragtruth", "per_check", 10, 54, 94)
    add("ragtruth", "paragraph", 10, 76, 80)
    return rows


def fig3_rows(generated_cp=0.04):
    rows = []
    for rubric, cp, fc in (("hand-written", 0.96, 0.80), ("generated draft", generated_cp, 1.0)):
        for share in (0.0, 0.5, 1.0):
            rows.append(dict(rubric=rubric, flawed_share=share,
                             accuracy=(1 - share) * cp + share * fc, correct_passed=cp,
                             flawed_caught=fc, balanced_accuracy=(cp + fc) / 2))
    return rows


def fig4_rows():
    rows = []
    arms = {("hand", "free"): ([96, 80, 10], [10, 90, 10]),
            ("label", "free"): ([80, 98, 92], [80, 85, 10]),
            ("label", "fixed_count"): ([80, 98, 92], [80, 85, 10]),
            ("hand", "delete_only"): ([96, 80, 10], [95, 78, 10]),
            ("label", "delete_only"): ([80, 98, 92], [80, 96, 90])}
    for (source, mode), (start, end) in arms.items():
        for round_, values in ((0, start), (4, end)):
            for metric, value in zip(METRICS, values):
                rows.append(dict(reviser=OPUS, source=source, mode=mode, round=round_,
                                 metric=metric, value=value, min=value, max=value, seeds=1))
    return rows


def attribution_rows():
    rows = []
    def add(dataset, reviser, source, mode, round_, check, origin, credit=1.0, blame=0.0,
            unique=0, deleted=False):
        rows.append(dict(check_id=check, origin=origin, credit=credit, blame=blame,
                         unique_catches=unique, fail_counts=1, n_items=9, dataset=dataset,
                         judge=JUDGE, reviser=reviser, source=source, mode=mode, seed=1,
                         round=round_, scope="all", deleted_next_round=deleted))
    for reviser in (OPUS, SONNET):
        for dataset in ("recon", "summedits", "ragtruth"):
            source = "hand" if dataset == "recon" else "label"
            add(dataset, reviser, source, "free", 0, "c1", source, unique=1, deleted=True)
            add(dataset, reviser, source, "free", 0, "c2", source, blame=0.5)
            add(dataset, reviser, source, "free", 1, "c2", source, blame=0.5)
            add(dataset, reviser, source, "free", 1, "a1", f"review by {reviser} of {source}")
        add("recon", reviser, "label", "free", 0, "l1", "label")
    return rows


def deletions_rows():
    rows = []
    def add(dataset, reviser, source, mode, origin):
        rows.append(dict(dataset=dataset, judge=JUDGE, reviser=reviser, source=source,
                         mode=mode, seed=1, round=1, scope="all", check_id="l1", origin=origin,
                         had_unique_catch=True, had_blame=False))
    for reviser in (OPUS, SONNET):
        for dataset in ("recon", "summedits", "ragtruth"):
            add(dataset, reviser, "label", "free", "label")
    add("recon", OPUS, "label", "fixed_count", "label")
    add("recon", OPUS, "hand", "delete_only", "hand")
    add("recon", OPUS, "label", "delete_only", "label")
    return rows


def decisions_rows(accepted=True, gates=("S+P", "S", "P"), modes=("free",)):
    rows = []
    for reviser in (OPUS, SONNET):
        for source in ("hand", "label"):
            for mode in modes:
                for gate in gates:
                    rows.append(dict(reviser=reviser, source=source, mode=mode, seed=1,
                                     gate=gate, variant="standard", round=1, action="delete",
                                     check_id="c1", accepted=accepted, evidence=True))
                    rows.append(dict(reviser=reviser, source=source, mode=mode, seed=1,
                                     gate=gate, variant="standard", round=1, action="keep",
                                     check_id="c2", accepted=True, evidence=True))
    return rows


def rates_rows():
    return [dict(dataset="recon", judge=judge, item_set="recon108", environments="all",
                 metric=metric, n=n, n_undetermined=0)
            for judge in (JUDGE, OTHER, *TABLE2_JUDGES)
            for metric, n in zip(METRICS, (36, 72, 12))]


FIG6_START = {"hand": [96, 80, 10], "label": [80, 98, 92]}
FIG6_BARS = {  # per source and gate: the final values (every reviser unless overridden)
    ("hand", "none"): [10, 90, 10], ("hand", "R"): [10, 90, 10], ("hand", "P"): [10, 90, 10],
    ("hand", "S"): [95, 80, 10], ("hand", "S+P"): [95, 80, 10],
    ("label", "none"): [80, 98, 10], ("label", "R"): [80, 98, 10],
    ("label", "P"): [80, 97, 90], ("label", "S"): [80, 98, 10],
    ("label", "S+P"): [80, 97, 90]}


def fig6_rows(overrides=None):
    bars = {(r, s, g): v for (s, g), v in FIG6_BARS.items() for r in (OPUS, SONNET)}
    bars[(SONNET, "label", "S+P")] = [80, 97, 40]  # the seed's exception
    bars.update(overrides or {})
    return [dict(reviser=r, source=s, gate=g, metric=m, value=v, min=v, max=v, chains=1,
                 final_round=4, start=FIG6_START[s][i], no_evidence=0, no_evidence_max=0)
            for (r, s, g), values in bars.items() for i, (m, v) in enumerate(zip(METRICS, values))]


def fig6_supplement_rows(held=True, drift=True):
    rows = []
    for source in ("hand", "label"):
        start = " / ".join(f"{v:.1f}" for v in FIG6_START[source])
        ungated = " / ".join(f"{v:.1f}" for v in FIG6_BARS[(source, "none")]) if drift else start
        gated = " / ".join(f"{v:.1f}" for v in FIG6_BARS[(source, "S+P" if held else "none")])
        rows.append({"chain": f"{source} free", "reviser": OPUS, "source": source,
                     "mode": "free", "seed": 1, "final_round": 4, "paper_chain": True,
                     "start": start, "ungated": ungated, "Gate S+P": gated})
    return rows


def fig5_rows(with_blame=2):
    return [dict(origin="hand", checks=20, mean_credit=1.0, mean_blame=0.2, deleted=100,
                 deleted_with_unique_catch=40, deleted_with_blame=with_blame),
            dict(origin="label", checks=10, mean_credit=2.0, mean_blame=0.0, deleted=86,
                 deleted_with_unique_catch=38, deleted_with_blame=0),
            dict(origin=f"review by {OPUS} of hand", checks=5, mean_credit=0.5, mean_blame=0.9,
                 deleted=0, deleted_with_unique_catch=0, deleted_with_blame=0)]


TABLE2_JUDGES = ["x/haiku-j", "x/sonnet-j", "x/opus-j"]
TABLE2_SEED = {  # the seed's Table 2
    ("hand", "start"): ["100.0 / 83.3 / 0.0", "97.2 / 83.3 / 0.0", "97.2 / 83.3 / 0.0"],
    ("hand", "ungated (round 4)"): ["5.6 / 98.6 / 91.7"] * 3,
    ("hand", "Gate S+P, leave-one-out"): ["97.2 / 83.3 / 0.0", "94.4 / 83.3 / 0.0",
                                          "91.7 / 83.3 / 0.0"],
    ("label", "start"): ["80.6 / 98.6 / 91.7", "83.3 / 100 / 100", "83.3 / 100 / 100"],
    ("label", "ungated (round 4)"): ["83.3 / 84.7 / 16.7", "80.6 / 84.7 / 8.3",
                                     "80.6 / 86.1 / 16.7"],
    ("label", "Gate S+P, leave-one-out"): ["83.3 / 98.6 / 91.7", "80.6 / 100 / 100",
                                           "80.6 / 100 / 100"]}


def table2_rows(overrides=None):
    cells = {**TABLE2_SEED, **(overrides or {})}
    rows = []
    for (source, label), values in cells.items():
        row = {"chain": f"{source} free, seed 1", "reviser": OPUS, "source": source,
               "mode": "free", "seed": 1, "rubric_or_gate": label, "round": 4}
        for judge, cell in zip(TABLE2_JUDGES, values):
            row[judge] = cell
            row[judge + " 95% CI"] = "[1.5, 99.5]† / [2.5, 98.5] / [3.5, 97.5]"
        rows.append(row)
    return rows


TABLE3_SUMMEDITS = {  # the seed's Table 3, SummEdits
    ("generated", "free"): ["72.5 / 79.6", "58.8 / 87.8", "64.7 / 83.7", "58.8 / 87.8",
                            "68.6 / 81.6", "68.6 / 81.6"],
    ("label", "free"): ["78.4 / 81.6", "58.8 / 85.7", "58.8 / 85.7", "62.7 / 85.7",
                        "64.7 / 85.7", "68.6 / 85.7"],
    ("label", "fixed_count"): ["78.4 / 81.6", "60.8 / 85.7", "78.4 / 81.6", "70.6 / 83.7",
                               "68.6 / 83.7", "70.6 / 83.7"],
    ("label", "delete_only"): ["78.4 / 81.6", "70.6 / 85.7", "70.6 / 85.7", "74.5 / 81.6",
                               "72.5 / 83.7", "74.5 / 81.6"]}
TABLE3_COLUMNS = ["start", "ungated", "Gate R", "Gate P", "Gate S", "Gate S+P"]


def table3_rows(ragtruth_sp="80.0 / 90.0", ragtruth_ungated="70.0 / 92.0"):
    rows = []
    def add(dataset, source, mode, cells, n):
        row = {"dataset": dataset, "chain": f"{source}, {mode}", "reviser": OPUS,
               "source": source, "mode": mode, "seed": 1, "final_round": 2, "n_correct": n[0],
               "n_flawed": n[1]}
        for column, cell in zip(TABLE3_COLUMNS, cells):
            row[column] = cell
            row[column + " 95% CI"] = "[60.1, 88.2] / [70.3, 92.4]"
        rows.append(row)
    for (source, mode), cells in TABLE3_SUMMEDITS.items():
        add("summedits", source, mode, cells, (51, 49))
    add("ragtruth", "label", "free",
        ["80.0 / 90.0", ragtruth_ungated, "75.0 / 90.0", "80.0 / 90.0", "72.0 / 91.0",
         ragtruth_sp], (56, 56))
    return rows


def table1_rows():
    return [dict(check_id="A", credit=1.5, blame=0.0, unique_catches=1, fail_counts=2),
            dict(check_id="B", credit=5 / 6, blame=0.0, unique_catches=0, fail_counts=2),
            dict(check_id="C", credit=1 / 3, blame=0.0, unique_catches=0, fail_counts=1),
            dict(check_id="D", credit=1 / 3, blame=1.0, unique_catches=0, fail_counts=2)]


def table3_decisions_rows(accepted=True):
    return [dict(reviser=OPUS, source="label", mode=mode, seed=1, gate="S+P",
                 variant="standard", round=1, action="delete", check_id="c1",
                 accepted=accepted, evidence=True)
            for mode in ("free", "fixed_count", "delete_only")]


def base_tables():
    return {"table1": table1_rows(), "fig1": fig1_rows(), "fig2": fig2_rows(),
            "fig3": fig3_rows(), "fig4": fig4_rows(), "fig5": fig5_rows(), "fig6": fig6_rows(),
            "fig6_supplement": fig6_supplement_rows(), "table2": table2_rows(),
            "table3": table3_rows(),
            "gate_agreement": [dict(dataset="recon", gate="S+P", changes=40, agreed=40)],
            "carry_rates": rates_rows(), "carry_attribution": attribution_rows(),
            "carry_deletions": deletions_rows(),
            "carry_decisions_recon": decisions_rows(modes=("free", "fixed_count",
                                                           "delete_only")),
            "carry_decisions_summedits": table3_decisions_rows(),
            "carry_decisions_ragtruth": table3_decisions_rows()}


def write(tmp_path, **changes):
    tables = {**base_tables(), **changes}
    paths = {}
    for name, rows in tables.items():
        if rows is None:
            continue
        paths[name] = tmp_path / f"{name}.csv"
        pd.DataFrame(rows).to_csv(paths[name], index=False)
    return paths


def read(claim, paths, config=CONFIG):
    return READERS[claim](paths, config)


def answers(evidence):
    assert not evidence.cannot, evidence.cannot
    return [part.holds for part in evidence.parts]


# --------------------------------------------------------------------------- the claims file

# --------------------------------------------------------------------------- qualitative

HOLDING = ["carry.abstract.few_points", "carry.abstract.drift_every_reviser",
           "carry.abstract.gate_holds", "carry.fig1.clusters", "carry.fig1.judges_agree",
           "carry.fig2.summedits_trade", "carry.fig2.content_effect",
           "carry.fig2.rendering_only_ragtruth", "carry.fig3.ranking", "carry.fig4.hand_strict",
           "carry.fig4.label_coverage", "carry.fig4.delete_only_flat",
           "carry.fig4.opposite_directions", "carry.fig5a.by_origin", "carry.fig5b.opposite",
           "carry.fig6.only_sp", "carry.fig6.single_signals", "carry.fig6.sonnet_exception",
           "carry.table2.within_6_and_collapse", "carry.table3.sp_vs_ungated"]


@pytest.mark.parametrize("claim", HOLDING)
def test_every_part_holds_on_tables_made_to_hold(tmp_path, claim):
    evidence = read(claim, write(tmp_path))
    assert evidence.parts
    assert all(answers(evidence)), [p for p in evidence.parts if p.holds is not True]


def _fig2(change):
    rows = fig2_rows()
    for row in rows:
        key = (row["dataset"], row["rendering"], row["length"])
        if key in change:
            row.update(change[key])
    return rows


def _fig4(change):
    rows = fig4_rows()
    for row in rows:
        key = (row["source"], row["mode"], row["round"], row["metric"])
        if key in change:
            row["value"] = change[key]
    return rows


def _fig1_without(judge):
    return [r for r in fig1_rows() if not (r["panel"] == "b" and r["judge"] == judge)]


def _fig1_b(source, rendering, judge, value):
    rows = fig1_rows()
    for r in rows:
        if (r["panel"], r["source"], r["rendering"], r["judge"]) == ("b", source, rendering,
                                                                       judge):
            r["value"] = value
    return rows


NAN = float("nan")
# claim -> (changes making a part fail, the part's name fragment), (changes leaving one untested)
CASES = {
    "carry.abstract.few_points": (
        dict(fig1=_fig1_b("hand", "per_check", OTHER, 80)), "judges agree",
        dict(fig1=_fig1_without(OTHER)), "judges agree"),
    "carry.abstract.drift_every_reviser": (
        dict(carry_deletions=[r for r in deletions_rows()
                              if not (r["reviser"] == SONNET and r["dataset"] == "ragtruth")]),
        "ragtruth: every reviser deletes",
        dict(carry_attribution=[r for r in attribution_rows() if r["dataset"] != "summedits"]),
        "summedits"),
    "carry.abstract.gate_holds": (
        dict(fig6_supplement=fig6_supplement_rows(held=False)), "holds at least 5 of 6",
        dict(fig6_supplement=fig6_supplement_rows(drift=False)), "some chain drifts"),
    "carry.fig1.clusters": (
        dict(fig1=[{**r, "value": 60} if (r["panel"], r["source"], r["rendering"], r["metric"])
                   == ("a", "hand", "scale", "flawed_caught") else r for r in fig1_rows()]),
        "rendering moves hand flawed_caught",
        dict(fig1=[r for r in fig1_rows() if not (r["panel"] == "a" and r["source"] == "hand"
                                                  and r["rendering"] == "scale")]),
        "rendering moves hand"),
    "carry.fig1.judges_agree": (
        dict(fig1=[{**r, "value": 92} if (r["panel"], r["source"], r["rendering"], r["judge"])
                   == ("b", "hand", "scale", OTHER) else r
                   for r in _fig1_b("generated", "scale", OTHER, 8)]),
        "disagree by more than 6",
        dict(fig1=_fig1_without(OTHER)), "judges agree"),
    "carry.fig2.summedits_trade": (
        dict(fig2=_fig2({("summedits", "per_check", 5): {"correct_passed": 60}})),
        "no added check",
        dict(fig2=_fig2({("summedits", "per_check", 10): {"correct_passed": NAN}})),
        "correct passed falls"),
    "carry.fig2.content_effect": (
        dict(fig2=_fig2({("ragtruth", "per_check", 10): {"correct_passed": 86}})),
        "larger on RAGTruth",
        dict(fig2=_fig2({("ragtruth", "per_check", 10): {"correct_passed": NAN}})),
        "larger on RAGTruth"),
    "carry.fig2.rendering_only_ragtruth": (
        dict(fig2=_fig2({("summedits", "paragraph", 10): {"correct_passed": 50}})),
        "SummEdits",
        dict(fig2=[r for r in fig2_rows()
                   if not (r["dataset"] == "ragtruth" and r["rendering"] == "paragraph")]),
        "ragtruth"),
    "carry.fig3.ranking": (
        dict(fig3=fig3_rows(generated_cp=0.10)), "fails almost every",
        dict(fig3=fig3_rows(generated_cp=NAN)), "fails almost every"),
    "carry.fig4.hand_strict": (
        dict(fig4=_fig4({("hand", "free", 4, "correct_passed"): 94})), "stop passing",
        dict(fig4=_fig4({("hand", "free", 4, "correct_passed"): NAN})), "stop passing"),
    "carry.fig4.label_coverage": (
        dict(fig4=_fig4({("label", "fixed_count", 4, "unplanned_caught"): 90})),
        "fixed_count: unplanned",
        dict(fig4=[r for r in fig4_rows() if r["mode"] != "fixed_count"]), "fixed_count"),
    "carry.fig4.delete_only_flat": (
        dict(fig4=_fig4({("label", "delete_only", 4, "correct_passed"): 60})),
        "from label is flat",
        dict(carry_deletions=[r for r in deletions_rows() if r["mode"] != "delete_only"]),
        "deleted a check"),
    "carry.fig4.opposite_directions": (
        dict(fig4=_fig4({("label", "free", 4, "correct_passed"): 60})), "too lenient",
        dict(fig4=_fig4({("hand", "free", 4, "correct_passed"): NAN})), "too strict"),
    "carry.fig5a.by_origin": (
        dict(fig5=[{**r, "mean_blame": 0.1} if r["origin"] == "label" else r
                   for r in fig5_rows()]), "no blame",
        dict(fig5=fig5_rows()[:2]), "the most blame"),
    "carry.fig5b.opposite": (
        dict(fig5=fig5_rows(with_blame=100)), "more deleted checks held",
        dict(carry_attribution=[{**r, "blame": 0.0} for r in attribution_rows()]),
        "some check state"),
    "carry.fig6.only_sp": (
        dict(fig6=fig6_rows({(OPUS, "hand", "S+P"): [80, 80, 10]})), "(a) Gate S+P",
        dict(carry_decisions_recon=decisions_rows(accepted=False)), "accepted at least one"),
    "carry.fig6.single_signals": (
        dict(fig6=fig6_rows({(OPUS, "label", "P"): [80, 97, 10],
                             (SONNET, "label", "P"): [80, 97, 10]})), "Gate P protects",
        dict(fig6=fig6_rows({(OPUS, "hand", "S"): [NAN, 80, 10]})), "Gate S protects"),
    "carry.fig6.sonnet_exception": (
        dict(fig6=fig6_rows({(SONNET, "label", "S+P"): [80, 97, 90]})), "leaves the start",
        dict(fig6=[{**r, "reviser": "m/third"} if r["reviser"] == SONNET else r
                   for r in fig6_rows()]), "Sonnet reviser"),
    "carry.table2.within_6_and_collapse": (
        dict(table2=table2_rows({("hand", "Gate S+P, leave-one-out"): [
            "97.2 / 83.3 / 0.0", "94.4 / 83.3 / 0.0", "80.0 / 83.3 / 0.0"]})),
        "within 6 points of the start, x/opus-j",
        dict(table2=table2_rows({("label", "Gate S+P, leave-one-out"): [
            "n/a / 98.6 / 91.7", "80.6 / 100 / 100", "80.6 / 100 / 100"]})),
        "within 6 points, x/haiku-j"),
    "carry.table3.sp_vs_ungated": (
        dict(table3=table3_rows(ragtruth_sp="75.0 / 90.0")), "returns to the starting",
        dict(table3=table3_rows(ragtruth_ungated="80.0 / 92.0")), "lost correct outputs"),
}


@pytest.mark.parametrize("claim", sorted(CASES))
def test_a_part_fails(tmp_path, claim):
    failing, name, _, _ = CASES[claim]
    evidence = read(claim, write(tmp_path, **failing))
    failed = [p for p in evidence.parts if p.holds is False]
    assert failed, evidence.parts
    assert any(name in p.name for p in failed), failed


@pytest.mark.parametrize("claim", sorted(CASES))
def test_a_part_cannot_be_tested(tmp_path, claim):
    _, _, untested, name = CASES[claim]
    evidence = read(claim, write(tmp_path, **untested))
    unknown = [p for p in evidence.parts if p.holds is None]
    assert unknown, evidence.parts
    assert any(name in p.name for p in unknown), unknown


def test_every_qualitative_reader_has_its_cases():
    entries = [entry for entry in load_claims() if entry["work"] == "carry"]
    qualitative = {e["id"] for e in entries if e["kind"] == "qualitative" and "missing" not in e}
    assert qualitative == set(HOLDING) == set(CASES)


def test_a_gate_that_refused_every_change_leaves_table2_untestable(tmp_path):
    evidence = read("carry.table2.within_6_and_collapse",
                    write(tmp_path, carry_decisions_recon=decisions_rows(accepted=False)))
    unknown = [p.name for p in evidence.parts if p.holds is None]
    assert any("accepted at least one change" in name for name in unknown)


def test_table2_one_judge_cannot_say_the_collapse_is_the_same(tmp_path):
    rows = [{k: v for k, v in r.items() if not k.startswith(("x/haiku", "x/opus"))}
            for r in table2_rows()]
    evidence = read("carry.table2.within_6_and_collapse", write(tmp_path, table2=rows))
    same = [p for p in evidence.parts if "same collapse" in p.name]
    assert same and all(p.holds is None for p in same)


def test_table2_ungated_that_does_not_collapse_fails(tmp_path):
    rows = table2_rows({("hand", "ungated (round 4)"): ["60.0 / 98.6 / 50.0"] * 3})
    evidence = read("carry.table2.within_6_and_collapse", write(tmp_path, table2=rows))
    assert any(p.holds is False and "collapses" in p.name for p in evidence.parts)


# --------------------------------------------------------------------------- measured

def test_table1_arithmetic(tmp_path):
    paths = write(tmp_path)
    assert read("carry.table1.credit_B", paths).value == pytest.approx(5 / 6)
    assert read("carry.table1.credit_sum", paths).value == pytest.approx(3)
    count = read("carry.table1.checks_with_blame", paths)
    assert count.value == 1 and "D" in count.note


def test_fig1_value_and_interval_are_the_figures(tmp_path):
    evidence = read("carry.fig1.hand_correct_passed", write(tmp_path))
    assert (evidence.value, evidence.low, evidence.high, evidence.n) == (96, 86, 97, 24)


def test_content_range_takes_the_extreme_rubric_with_its_interval(tmp_path):
    paths = write(tmp_path)
    low = read("carry.abstract.content_low", paths)
    assert (low.value, low.low, low.high, low.n) == (4, -6, 5, 24)
    assert "generated, per_check" in low.note
    high = read("carry.abstract.content_high", paths)
    assert (high.value, high.n) == (96, 24)


def test_fig2_ragtruth_cost_is_a_rate_over_items_of_nested_checklists(tmp_path):
    evidence = read("carry.fig2.ragtruth_cost_3_to_10", write(tmp_path))
    assert evidence.value == pytest.approx(36) and evidence.n == 50
    assert (evidence.low, evidence.high) == pytest.approx(clopper_pearson(18, 50))
    catches = read("carry.fig2.ragtruth_catches_3_to_10", write(tmp_path))
    assert catches.value == pytest.approx(4)
    assert (catches.low, catches.high) == pytest.approx(clopper_pearson(2, 50))


def test_fig2_paragraph_rate(tmp_path):
    evidence = read("carry.fig2.ragtruth_paragraph_10", write(tmp_path))
    assert evidence.value == pytest.approx(76)
    assert (evidence.low, evidence.high) == pytest.approx(clopper_pearson(38, 50))


def test_fig3_balanced_accuracy_and_crossover(tmp_path):
    paths = write(tmp_path)
    balanced = read("carry.fig3.generated_balanced_accuracy", paths)
    assert balanced.value == pytest.approx(52) and balanced.n == 72
    # 0.92 of correct passed lost for 0.20 of flawed caught gained: 0.92 / 1.12
    assert read("carry.fig3.crossover", paths).value == pytest.approx(100 * 0.92 / 1.12)


def test_fig3_crossover_cannot_when_the_draft_never_wins(tmp_path):
    rows = [{**r, "flawed_caught": 0.5} if r["rubric"] == "generated draft" else r
            for r in fig3_rows()]
    assert read("carry.fig3.crossover", write(tmp_path, fig3=rows)).cannot


def test_fig5b_counts_and_shares(tmp_path):
    paths = write(tmp_path)
    deleted = read("carry.fig5b.deleted", paths)
    assert deleted.value == 186 and deleted.n == 4  # 2 revisers x hand, label free chains
    share = read("carry.fig5b.share_with_unique_catch", paths)
    assert share.value == pytest.approx(100 * 78 / 186) and share.n == 186
    assert (share.low, share.high) == pytest.approx(clopper_pearson(78, 186))


def test_identical_decisions_rate_and_one_judge(tmp_path):
    paths = write(tmp_path, gate_agreement=[dict(dataset="recon", gate="S+P", changes=40,
                                                 agreed=38),
                                            dict(dataset="recon", gate="R", changes=9,
                                                 agreed=0)])
    evidence = read("carry.abstract.identical_decisions", paths)
    assert evidence.value == pytest.approx(95) and evidence.n == 40
    assert (evidence.low, evidence.high) == pytest.approx(clopper_pearson(38, 40))
    one = {**CONFIG, "carry": {**CONFIG["carry"], "judges": [JUDGE]}}
    assert "no second judge" in read("carry.abstract.identical_decisions", paths, one).cannot


def test_table2_cell_under_the_named_judge(tmp_path):
    paths = write(tmp_path)
    evidence = read("carry.table2.ungated.l.sonnet.unplanned_caught", paths)
    assert (evidence.value, evidence.low, evidence.high, evidence.n) == (8.3, 3.5, 97.5, 12)
    start = read("carry.table2.start.h.haiku.correct_passed", paths)
    assert (start.value, start.low, start.high, start.n) == (100.0, 1.5, 99.5, 36)


def test_table2_cell_without_that_judge_cannot(tmp_path):
    rows = [{k: v for k, v in r.items() if not k.startswith(("x/haiku", "x/opus"))}
            for r in table2_rows()]
    evidence = read("carry.table2.start.h.haiku.correct_passed", write(tmp_path, table2=rows))
    assert "no Haiku judge" in evidence.cannot


def test_table3_cell(tmp_path):
    evidence = read("carry.table3.gate_sp.summedits.label_delete_only.flawed_caught",
                    write(tmp_path))
    assert (evidence.value, evidence.low, evidence.high, evidence.n) == (81.6, 70.3, 92.4, 49)


def test_a_missing_output_is_a_reason_not_an_error(tmp_path):
    paths = write(tmp_path)
    del paths["fig6"]
    assert "no input 'fig6'" in read("carry.fig6.only_sp", paths).cannot


def test_table2_a_judge_whose_rubric_collapses_another_way_fails(tmp_path):
    rows = table2_rows({("label", "ungated (round 4)"): [
        "83.3 / 84.7 / 16.7", "80.6 / 84.7 / 8.3", "95.0 / 86.1 / 16.7"]})
    evidence = read("carry.table2.within_6_and_collapse", write(tmp_path, table2=rows))
    same = [p for p in evidence.parts if "same collapse" in p.name and "label" in p.name]
    assert [p.holds for p in same] == [False]


def test_fig5a_label_checks_without_the_most_credit_fail(tmp_path):
    rows = [{**r, "mean_credit": 0.1} if r["origin"] == "label" else r for r in fig5_rows()]
    evidence = read("carry.fig5a.by_origin", write(tmp_path, fig5=rows))
    assert [p.holds for p in evidence.parts if "most credit" in p.name] == [False]
