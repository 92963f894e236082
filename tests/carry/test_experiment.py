import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rubriclab.carry.checklists import Check
from rubriclab.carry.experiment import (
    FAIL, ITEM_COLUMNS, PASS, UNDETERMINED, JUDGED_VERDICT_COLUMNS, JudgeSpec, Verdicts,
    chain_counts, check_codes, check_texts_by_scope, judge_items_and_rubrics, judge_plan,
    read_items, recon_items, rendering_codes, revision_from_record, revision_to_record,
    run_reviser_chain, verdict_rows,
)
from rubriclab.carry.replay import (
    EvidenceSource, adapt_revision, checked_rubric_round_trip, decision_rows,
    decisions_without_evidence, replay_chain, require_disjoint, rubric_after,
)
from rubriclab.carry.scoring import (
    State, attribution_rows, failing_positions, rate_rows, rendering_state_codes, set_codes,
)
from rubriclab.carry.prompts import per_check_messages
from rubriclab.carry.renderings import rendering_call
from rubriclab.carry.revision import (
    Add, Delete, Edit, Keep, Revision, RevisionRejected, Rubric, RubricCheck, revision_messages,
)
from rubriclab.carry.sources import ALL_SCOPE, rubric_to_dict
from rubriclab.llm.fake import fake_answer
from rubriclab.llm.formats import get_format
from rubriclab.llm.request import cache_key

REVISER = "fake/reviser"
DESCRIPTION = "a security findings report"


# --- helpers --------------------------------------------------------------------------------

def check_verdicts(answers: dict[tuple[str, str], list[str]]) -> pd.DataFrame:
    """A verdict table from (item_id, check text) -> one answer per vote."""
    rows = [dict(item_id=item, kind="check", scope="", source="", rendering="per_check",
                 check_text=text, vote=vote, answer=answer)
            for (item, text), votes in answers.items() for vote, answer in enumerate(votes)]
    return pd.DataFrame(rows, columns=JUDGED_VERDICT_COLUMNS)


def from_fails(fails: dict[str, list[str]], item_ids: list[str]) -> pd.DataFrame:
    """One vote per (item, text): "no" on the items listed for the text, "yes" elsewhere."""
    return check_verdicts({(item, text): ["no" if item in failing else "yes"]
                           for text, failing in fails.items() for item in item_ids})


def rubric(name: str, *checks: tuple[str, str, str]) -> Rubric:
    return Rubric(name, tuple(RubricCheck(i, text, origin) for i, text, origin in checks))


class ScriptedReviser:
    """ask(request) for run_reviser_chain: answers in order; records every request.

    An answer is a list of entries (sent as JSON), a raw string (outcome ok), or
    ("unparseable", error) for a completion the model layer could not parse.
    """

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, tuple):
            return SimpleNamespace(outcome=answer[0], text="", error=answer[1], parsed=None)
        text = answer if isinstance(answer, str) else json.dumps({"checks": answer})
        return SimpleNamespace(outcome="ok", text=text, error="", parsed=None)


def keep(i):
    return {"id": i, "action": "keep"}


def delete(i):
    return {"id": i, "action": "delete"}


def edit(i, text):
    return {"id": i, "action": "edit", "text": text}


def add(text):
    return {"action": "add", "text": text}


def record_chain(start: dict[str, Rubric], answers, mode="free", seed=0,
                 source="") -> tuple[dict, list]:
    ask = ScriptedReviser(answers)
    rounds = len(answers) // len(start)
    record = run_reviser_chain(start, rounds, mode, seed, REVISER, temperature=0.7,
                               max_tokens=900, description=DESCRIPTION, ask=ask, source=source)
    assert ask.answers == []
    return record, ask.requests


# --- verdict codes --------------------------------------------------------------------------

def test_check_codes_majority_of_three_votes():
    codes = check_codes(check_verdicts({
        ("i1", "A."): ["yes", "yes", "no"],              # 2 of 3 yes -> PASS
        ("i1", "B."): ["no", "yes", "no"],               # 2 of 3 no -> FAIL
        ("i2", "A."): ["yes", "no", "unparseable"],      # 1-1-1: no majority
        ("i2", "B."): ["unparseable", "unparseable", "no"],  # 1 of 3 no: no majority
        ("i3", "A."): ["no", "no", "unparseable"],       # 2 of 3 no -> FAIL
    }))
    assert codes == {("i1", "A."): PASS, ("i1", "B."): FAIL, ("i2", "A."): UNDETERMINED,
                     ("i2", "B."): UNDETERMINED, ("i3", "A."): FAIL}
    assert (PASS, UNDETERMINED, FAIL) == (0, 1, 2)  # max() of codes is the rubric's code


def test_check_codes_tie_of_two_votes_is_undetermined():
    codes = check_codes(check_verdicts({("i1", "A."): ["yes", "no"]}))
    assert codes == {("i1", "A."): UNDETERMINED}


@pytest.mark.parametrize("answer", ["maybe", "Yes", "pass", ""])
def test_check_codes_unknown_answer_raises(answer):
    with pytest.raises(ValueError, match="i9"):
        check_codes(check_verdicts({("i1", "A."): ["yes"], ("i9", "A."): [answer]}))


def test_rendering_codes_majority():
    rows = [dict(item_id="i1", kind="rendering", scope="e", source="hand", rendering="scale",
                 check_text="", vote=v, answer=a) for v, a in enumerate(["pass", "fail", "pass"])]
    rows += [dict(item_id="i1", kind="rendering", scope="e", source="hand",
                  rendering="all_in_one", check_text="", vote=v, answer=a)
             for v, a in enumerate(["fail", "unparseable", "pass"])]
    codes = rendering_codes(pd.DataFrame(rows, columns=JUDGED_VERDICT_COLUMNS))
    assert codes == {("i1", "hand", "scale"): PASS, ("i1", "hand", "all_in_one"): UNDETERMINED}


def test_verdicts_rubric_code_and_missing_verdict():
    verdicts = Verdicts(check_verdicts({("i1", "A."): ["yes"], ("i1", "B."): ["unparseable"],
                                        ("i1", "C."): ["no"]}))
    ab = rubric("ab", ("a", "A.", "hand"), ("b", "B.", "hand"))
    abc = rubric("abc", ("a", "A.", "hand"), ("b", "B.", "hand"), ("c", "C.", "hand"))
    assert verdicts.rubric_code("i1", ab) == UNDETERMINED     # pass + undetermined
    assert verdicts.rubric_code("i1", abc) == FAIL            # a failing check decides
    with pytest.raises(ValueError, match="did not ask"):
        verdicts.code("i1", "D.")
    assert verdicts.matrix([], ["A."]).shape == (0, 1)


def test_verdict_rows_from_completions():
    rows = [dict(item_id="i1", kind="check", scope="e", source="", rendering="per_check",
                 check_text="A.", vote=0),
            dict(item_id="i1", kind="rendering", scope="e", source="hand",
                 rendering="all_in_one", check_text="", vote=0),
            dict(item_id="i1", kind="rendering", scope="e", source="hand", rendering="scale",
                 check_text="", vote=0),
            dict(item_id="i1", kind="check", scope="e", source="", rendering="per_check",
                 check_text="B.", vote=0)]
    completions = [SimpleNamespace(outcome="ok", parsed="no", key="k0"),
                   SimpleNamespace(outcome="ok", parsed=["yes", "no"], key="k1"),
                   SimpleNamespace(outcome="ok", parsed=4, key="k2"),
                   SimpleNamespace(outcome="unparseable", parsed=None, key="k3")]
    table = verdict_rows(rows, completions)
    assert list(table.columns) == JUDGED_VERDICT_COLUMNS
    assert table["answer"].tolist() == ["no", "fail", "fail", "unparseable"]
    # each row keeps the cache key of its own answer, the unparseable one's too
    assert table["cache_key"].tolist() == ["k0", "k1", "k2", "k3"]
    with pytest.raises(ValueError):
        verdict_rows(rows, completions[:3])


# --- what the judge is asked ----------------------------------------------------------------

ITEMS = pd.DataFrame([
    dict(item_id="i1", task="Brief 1", output="Report 1", label="correct", scope="e1"),
    dict(item_id="i2", task="Brief 2", output="Report 2", label="flawed", scope="e2"),
    dict(item_id="i3", task="Brief 3", output="Report 3", label="flawed", scope="e1"),
])


def test_judge_plan_order_scopes_renderings_and_votes():
    texts = {"e1": ["A.", "B."], ALL_SCOPE: ["L.", "A."], "e2": ["C."]}
    start = {"hand": {"e1": rubric("h1", ("a", "A.", "hand")),
                      "e2": rubric("h2", ("c", "C.", "hand"), ("d", "D.", "hand"))}}
    spec = JudgeSpec(model="fake/judge", votes=2, temperature=0.5, max_tokens=4)
    requests, rows = judge_plan(ITEMS, texts, DESCRIPTION, spec, rendering_sets=start,
                                renderings=("all_in_one", "scale"), rendering_item_ids=["i2"])
    assert len(requests) == len(rows)
    got = [(r["item_id"], r["vote"], r["check_text"] or f"{r['source']}/{r['rendering']}")
           for r in rows]
    # Scopes in texts_by_scope order (e1, all, e2). e1 items: A, B (e1) then L (all; its "A."
    # is asked once). i2 (e2): L, A (all) then C (e2), never B. Renderings only for i2,
    # after its checks, in each vote.
    assert got == [
        ("i1", 0, "A."), ("i1", 0, "B."), ("i1", 0, "L."),
        ("i1", 1, "A."), ("i1", 1, "B."), ("i1", 1, "L."),
        ("i2", 0, "L."), ("i2", 0, "A."), ("i2", 0, "C."),
        ("i2", 0, "hand/all_in_one"), ("i2", 0, "hand/scale"),
        ("i2", 1, "L."), ("i2", 1, "A."), ("i2", 1, "C."),
        ("i2", 1, "hand/all_in_one"), ("i2", 1, "hand/scale"),
        ("i3", 0, "A."), ("i3", 0, "B."), ("i3", 0, "L."),
        ("i3", 1, "A."), ("i3", 1, "B."), ("i3", 1, "L."),
    ]
    assert [r.sample_index for r in requests] == [row["vote"] for row in rows]
    assert {r.model for r in requests} == {"fake/judge"}
    assert {r.temperature for r in requests} == {0.5}
    checks = [(q, row) for q, row in zip(requests, rows) if row["kind"] == "check"]
    for request, row in checks:
        item = ITEMS.set_index("item_id").loc[row["item_id"]]
        assert request.response_format == "yes_no" and request.max_tokens == 4
        assert row["scope"] == item["scope"] and row["rendering"] == "per_check"
        assert request.message_dicts() == per_check_messages(
            item["task"], item["output"], Check("check", row["check_text"], ""), DESCRIPTION)
    renders = [(q, row) for q, row in zip(requests, rows) if row["kind"] == "rendering"]
    checklist = start["hand"]["e2"].to_checklist(DESCRIPTION)
    for request, row in renders:
        messages, response_format = rendering_call(row["rendering"], "Brief 2", "Report 2",
                                                   checklist)
        assert request.message_dicts() == messages
        assert request.response_format == response_format
        # all_in_one: 8 tokens per check + 16 = 8 * 2 + 16 = 32
        assert request.max_tokens == (32 if row["rendering"] == "all_in_one" else 4)


def test_judge_plan_without_renderings_and_one_vote():
    requests, rows = judge_plan(ITEMS, {"e2": ["C."]}, DESCRIPTION,
                                JudgeSpec("fake/judge", 1, 0.0, 4))
    assert [(r["item_id"], r["check_text"]) for r in rows] == [("i2", "C.")]
    assert requests[0].sample_index == 0
    with pytest.raises(ValueError, match="votes"):
        judge_plan(ITEMS, {}, DESCRIPTION, JudgeSpec("fake/judge", 0, 0.0, 4))


def test_check_texts_by_scope_collects_starts_and_every_proposed_text():
    start = {"e1": rubric("h", ("a", "A.", "hand"), ("b", "B.", "hand"))}
    record, _ = record_chain(start, [[keep("a"), edit("b", "B2."), add("N.")],
                                     [keep("a"), delete("b"), keep("r1-add1"), add("A.")]])
    label = {ALL_SCOPE: rubric("l", ("l1", "L.", "label"))}
    texts = check_texts_by_scope([label, start], [record])
    assert texts == {ALL_SCOPE: ["L."], "e1": ["A.", "B.", "B2.", "N."]}


# --- chain records --------------------------------------------------------------------------

def test_revision_record_round_trip():
    revision = Revision((Keep("a"), Edit("b", "B2."), Delete("c"), Add("N.")), 2, REVISER,
                        "free")
    record = revision_to_record(revision)
    assert record == {"status": "proposed", "reason": "", "ops": [
        {"action": "keep", "id": "a"}, {"action": "edit", "id": "b", "text": "B2."},
        {"action": "delete", "id": "c"}, {"action": "add", "text": "N."}]}
    assert revision_from_record(json.loads(json.dumps(record)), 2, REVISER, "free") == revision
    rejected = revision_to_record(RevisionRejected("bad id", kind="rejected"))
    assert rejected == {"status": "rejected", "reason": "bad id", "ops": []}
    back = revision_from_record(rejected, 1, REVISER, "free")
    assert isinstance(back, RevisionRejected) and back.kind == "rejected"
    with pytest.raises(ValueError, match="unknown action"):
        revision_from_record({"status": "proposed", "ops": [{"action": "merge"}]}, 1, REVISER,
                             "free")


START = {
    "e1": rubric("hand:e1", ("a", "A.", "hand"), ("b", "B.", "label"), ("c", "C.", "hand")),
    ALL_SCOPE: rubric("label", ("l1", "L1.", "label"), ("l2", "L2.", "generated")),
}
# scope e1 first (dict order), three rounds, then scope "all"
SCRIPT = [
    [keep("a"), edit("b", "B2."), delete("c"), add("N1."), add("N2.")],
    [delete("a"), keep("b"), keep("r1-add1"), edit("r1-add2", "N2b.")],
    [keep("b"), keep("r1-add1"), keep("r1-add2"), add("N3.")],
    [keep("l1"), delete("l2"), add("M.")],
    [edit("l1", "L1b."), keep("r1-add1")],
    [keep("l1"), delete("r1-add1"), add("M2.")],
]


def test_run_reviser_chain_records_every_round_and_asks_with_the_current_rubric():
    record, requests = record_chain(START, SCRIPT, mode="free", seed=3)
    assert {k: record[k] for k in ("mode", "seed", "reviser", "rounds")} == {
        "mode": "free", "seed": 3, "reviser": REVISER, "rounds": 3}
    e1 = record["scopes"]["e1"]
    assert e1["start"] == rubric_to_dict(START["e1"])
    assert [r["round"] for r in e1["rounds"]] == [1, 2, 3]
    # round 1: a kept, b edited, c deleted, two adds -> a, b, r1-add1, r1-add2
    assert [c["id"] for c in e1["rounds"][0]["rubric"]["checks"]] == ["a", "b", "r1-add1",
                                                                      "r1-add2"]
    assert [c["id"] for c in e1["rounds"][2]["rubric"]["checks"]] == ["b", "r1-add1", "r1-add2",
                                                                      "r3-add1"]
    final = rubric_after(record, "e1", 3)
    assert [c.text for c in final.checks] == ["B2.", "N1.", "N2b.", "N3."]
    assert final.check("r1-add2").lineage == ("r1: add by fake/reviser",
                                              "r2: edit by fake/reviser")
    assert chain_counts(record) == {"proposed": 6, "rejected": 0, "unparseable": 0}
    # every request: the reviser, the revision format, the seed as sample index, the prompt
    # of the rubric as it stood before that round
    assert [r.sample_index for r in requests] == [3] * 6
    assert {(r.model, r.temperature, r.max_tokens) for r in requests} == {(REVISER, 0.7, 900)}
    # the format bounds the answer: every check of the rubric under review, plus at most 5 adds
    listed = [r.messages[-1].content.count("\n[") for r in requests]
    assert [r.response_format for r in requests] == [f"rubric_revision_{n + 5}" for n in listed]
    assert requests[1].message_dicts() == revision_messages(
        DESCRIPTION, rubric_after(record, "e1", 1), "free")
    assert requests[3].message_dicts() == revision_messages(DESCRIPTION, START[ALL_SCOPE],
                                                            "free")


def test_an_added_check_names_its_reviser_and_the_start_it_was_added_to():
    answers = [[keep("a"), keep("b"), keep("c"), add("N.")]]
    for source in ("hand", "label"):
        record, _ = record_chain(ABC, answers, source=source)
        assert record["source"] == source and record["reviser"] == REVISER
        added = rubric_after(record, "e1", 1).check("r1-add1")
        assert added.origin == f"review by {REVISER} of {source}"
        for gate in ("none", "S+P"):   # a replay gives the add the same origin
            replayed = replay_chain(record, gate, EvidenceSource(abc_verdicts(), GATE_ITEMS))
            if "r1-add1" in replayed["e1"].final.ids:
                assert replayed["e1"].final.check("r1-add1").origin == added.origin
        checked_rubric_round_trip(record)


def test_ungated_replay_reproduces_the_recorded_rubrics():
    record, _ = record_chain(START, SCRIPT)
    checked_rubric_round_trip(record)  # raises if a stored rubric is not what the ops give
    stored = json.loads(json.dumps(record))  # as the pipeline writes and reads it
    replayed = replay_chain(stored, "none", None)
    assert set(replayed) == {"e1", ALL_SCOPE}
    for scope, result in replayed.items():
        assert result.gate == "none"
        for n in range(4):
            assert result.rubric_after(n) == rubric_after(stored, scope, n), (scope, n)
    # all: round 1 l2 deleted, M. added (r1-add1); round 2 l1 edited; round 3 r1-add1 deleted
    assert [c.text for c in replayed[ALL_SCOPE].final.checks] == ["L1b.", "M2."]


def test_round_trip_check_notices_a_tampered_record():
    record, _ = record_chain(START, SCRIPT)
    record["scopes"]["e1"]["rounds"][1]["rubric"]["checks"][0]["text"] = "Tampered."
    with pytest.raises(ValueError, match="scope 'e1' round 2"):
        checked_rubric_round_trip(record)


def test_unparseable_and_invalid_reviser_answers_are_recorded_and_not_applied():
    start = {"e1": rubric("h", ("a", "A.", "hand"), ("b", "B.", "hand"))}
    answers = [
        ("unparseable", "expected exactly one JSON object"),  # the model layer gave up
        "Sure! Here is the revised checklist: ...",          # ok outcome, not JSON
        [keep("a"), keep("b"), delete("z")],                  # unknown id: rejected
        [keep("a"), delete("b")],                             # valid
    ]
    record, _ = record_chain(start, answers)
    rounds = record["scopes"]["e1"]["rounds"]
    assert [r["status"] for r in rounds] == ["unparseable", "unparseable", "rejected",
                                             "proposed"]
    assert "expected exactly one JSON object" in rounds[0]["reason"]
    assert "'z'" in rounds[2]["reason"]
    assert all(r["ops"] == [] for r in rounds[:3])
    for n in (1, 2, 3):
        assert rubric_after(record, "e1", n) == start["e1"]
    assert rubric_after(record, "e1", 4).ids == ["a"]
    assert chain_counts(record) == {"proposed": 1, "rejected": 1, "unparseable": 2}
    checked_rubric_round_trip(record)
    rows = decision_rows(replay_chain(record, "none", None), dataset="d")
    assert [(r["round"], r["op_index"], r["accepted"]) for r in rows] == [
        (1, -1, False), (2, -1, False), (3, -1, False), (4, 0, True), (4, 1, True)]
    assert rows[2]["reason"].startswith("proposal rejected:")


# --- adapting a recorded proposal to a gated rubric -----------------------------------------

def test_adapt_revision_drops_missing_ids_and_keeps_unmentioned_checks():
    recorded = Revision((Keep("a"), Delete("b"), Edit("c", "C2."), Add("N."), Keep("r1-add1"),
                         Add("M.")), round=2, reviser=REVISER, mode="free")
    gated = rubric("gated", ("a", "A.", "hand"), ("c", "C.", "hand"), ("d", "D.", "hand"))
    adapted = adapt_revision(recorded, gated)
    # b and r1-add1 are not held: dropped; d never mentioned: explicit keep, after the rest
    assert adapted.ops == (Keep("a"), Edit("c", "C2."), Add("N."), Add("M."), Keep("d"))
    assert (adapted.round, adapted.reviser, adapted.mode) == (2, REVISER, "free")


def test_adapt_revision_is_the_identity_on_the_rubric_it_was_made_for():
    recorded = Revision((Keep("a"), Delete("c"), Add("N.")), round=1, reviser=REVISER,
                        mode="free")
    same = rubric("r", ("a", "A.", "hand"), ("c", "C.", "hand"))
    assert adapt_revision(recorded, same) == recorded


# --- replay under gates ---------------------------------------------------------------------

def test_gate_p_replay_refuses_deleting_a_label_check():
    start = {ALL_SCOPE: rubric("label", ("l1", "L1.", "label"), ("h1", "H1.", "hand"),
                               ("h2", "H2.", "hand"))}
    record, _ = record_chain(start, [[delete("l1"), delete("h1"), keep("h2")]])
    assert rubric_after(record, ALL_SCOPE, 1).ids == ["h2"]
    replayed = replay_chain(record, "P", None)  # P needs no evidence
    assert replayed[ALL_SCOPE].final.ids == ["l1", "h2"]
    rows = decision_rows(replayed, gate="P")
    assert [(r["action"], r["check_id"], r["accepted"]) for r in rows] == [
        ("delete", "l1", False), ("delete", "h1", True), ("keep", "h2", True)]
    assert "frozen" in rows[0]["reason"] and rows[0]["gate"] == "P"


GATE_ITEMS = pd.DataFrame([
    dict(item_id="g1", label="flawed", scope="e1"),
    dict(item_id="g2", label="flawed", scope="e1"),
    dict(item_id="g3", label="correct", scope="e1"),
    dict(item_id="x1", label="flawed", scope="e2"),   # another environment
])
ABC = {"e1": rubric("hand:e1", ("a", "A.", "hand"), ("b", "B.", "hand"), ("c", "C.", "hand"))}
# g1 fails A alone (A's unique catch); g2 fails B and C (neither unique); g3 passes all.
# x1 (scope e2, never evidence for e1) fails B alone: it must not make B unique.
ABC_FAILS = {"A.": ["g1"], "B.": ["g2", "x1"], "C.": ["g2"], "N.": ["g3"], "M.": ["g1"]}


def abc_verdicts(fails=ABC_FAILS) -> Verdicts:
    return Verdicts(from_fails(fails, list(GATE_ITEMS["item_id"])))


def test_gate_s_replay_keeps_a_unique_catch_and_deletes_a_redundant_check():
    record, _ = record_chain(ABC, [[delete("a"), delete("b"), keep("c")]])
    replayed = replay_chain(record, "S", EvidenceSource(abc_verdicts(), GATE_ITEMS))
    assert replayed["e1"].final.ids == ["a", "c"]
    rows = decision_rows(replayed)
    assert [(r["check_id"], r["accepted"]) for r in rows] == [("a", False), ("b", True),
                                                             ("c", True)]
    assert "unique catch" in rows[0]["reason"]


def test_gate_s_replay_refuses_an_add_that_fails_a_correct_item():
    # N. fails g3 (correct): blame; M. fails g1 (flawed): no blame
    record, _ = record_chain(ABC, [[keep("a"), keep("b"), keep("c"), add("N."), add("M.")]])
    replayed = replay_chain(record, "S", EvidenceSource(abc_verdicts(), GATE_ITEMS))
    assert replayed["e1"].final.ids == ["a", "b", "c", "r1-add2"]
    assert replayed["e1"].final.check("r1-add2").text == "M."


def test_undetermined_gate_items_leave_the_evidence():
    # g1's verdict on A is a 1-1 tie: g1 leaves the evidence, so A has no unique catch left
    # and its delete is accepted (with g1 in, it was refused: see the test above).
    answers = {(i, t): ["no" if i in f else "yes"] for t, f in ABC_FAILS.items()
               for i in GATE_ITEMS["item_id"]}
    answers[("g1", "A.")] = ["yes", "no"]
    record, _ = record_chain(ABC, [[delete("a"), keep("b"), keep("c")]])
    replayed = replay_chain(record, "S", EvidenceSource(Verdicts(check_verdicts(answers)),
                                                        GATE_ITEMS))
    assert replayed["e1"].final.ids == ["b", "c"]


def test_evidence_source_only_uses_items_in_the_rubric_scope():
    evidence = EvidenceSource(abc_verdicts(), GATE_ITEMS).for_scope("e1")
    revision = Revision((Keep("a"), Add("N."), Keep("b"), Keep("c")), 1, REVISER, "free")
    got = evidence(ABC["e1"], revision)
    assert got.flawed.tolist() == [True, True, False]           # g1, g2, g3; not x1
    assert got.current_fails["b"].tolist() == [False, True, False]
    assert set(got.proposed_fails) == {1}
    assert got.proposed_fails[1].tolist() == [False, False, True]
    everything = EvidenceSource(abc_verdicts(), GATE_ITEMS).for_scope(ALL_SCOPE)
    assert everything(ABC["e1"], revision).flawed.tolist() == [True, True, False, True]


def test_gate_r_replay_with_one_label_keeps_the_rubric_and_counts_the_refusals():
    only_flawed = GATE_ITEMS[GATE_ITEMS["label"] == "flawed"]
    record, _ = record_chain(ABC, [[delete("a"), edit("b", "M."), keep("c"), add("N.")],
                                   [delete("c"), keep("b"), keep("r1-add1")]])
    replayed = replay_chain(record, "R", EvidenceSource(abc_verdicts(), only_flawed))
    result = replayed["e1"]
    assert [r.rubric for r in result.rounds] == [ABC["e1"], ABC["e1"]]
    rows = decision_rows(replayed)
    assert all(r["accepted"] == (r["action"] == "keep") for r in rows)
    assert [r["evidence"] for r in rows if r["action"] != "keep"] == [False] * 4
    assert decisions_without_evidence(replayed, 1) == 3
    assert decisions_without_evidence(replayed, 2) == 4
    with_both = replay_chain(record, "R", EvidenceSource(abc_verdicts(), GATE_ITEMS))
    assert decisions_without_evidence(with_both, 2) == 0


def test_gate_s_replay_of_a_scope_without_gate_items_changes_nothing():
    record, _ = record_chain(ABC, [[delete("a"), delete("b"), keep("c"), add("N.")]])
    elsewhere = GATE_ITEMS[GATE_ITEMS["scope"] == "e2"]
    for gate in ("S", "S+P", "R"):
        replayed = replay_chain(record, gate, EvidenceSource(abc_verdicts(), elsewhere))
        assert replayed["e1"].final == ABC["e1"]
        assert decisions_without_evidence(replayed, 1) == 3
    assert replay_chain(record, "P", None)["e1"].final.ids == ["c", "r1-add1"]


def test_evidence_source_without_items_and_disjointness():
    source = EvidenceSource(abc_verdicts(), GATE_ITEMS)
    assert source.without(["g1"]).item_ids == {"g2", "g3", "x1"}
    assert source.item_ids == {"g1", "g2", "g3", "x1"}
    require_disjoint(source.without(["g1"]).item_ids, ["g1"], "here")
    # a copy without g1 gives the same evidence less g1's row, and the original keeps it
    revision = Revision((Keep("a"), Keep("b"), Keep("c")), 1, REVISER, "free")
    without = source.without(["g1"]).for_scope("e1")(ABC["e1"], revision)
    assert without.flawed.tolist() == [True, False]                    # g2, g3
    assert without.current_fails["a"].tolist() == [False, False]
    assert source.for_scope("e1")(ABC["e1"], revision).current_fails["a"].tolist() == [
        True, False, False]
    assert source.without(["g1"]).without(["g3"]).item_ids == {"g2", "x1"}
    with pytest.raises(ValueError, match=r"here: 1 item\(s\) are both gate evidence and scored"):
        require_disjoint(source.item_ids, ["g1", "zz"], "here")


# --- rates ----------------------------------------------------------------------------------

RATE_ITEMS = pd.DataFrame([
    dict(item_id="i1", label="correct", unplanned=False),
    dict(item_id="i2", label="correct", unplanned=False),
    dict(item_id="i3", label="flawed", unplanned=True),
    dict(item_id="i4", label="flawed", unplanned=False),
])


def test_rate_rows_percentages_and_undetermined_items():
    states = [State(dict(source="hand", round=0), np.array([PASS, UNDETERMINED, FAIL, PASS])),
              State(dict(source="hand", round=1), np.array([FAIL, FAIL, UNDETERMINED, FAIL]))]
    metrics = ("correct_passed", "flawed_caught", "unplanned_caught")
    rows = rate_rows(RATE_ITEMS, states, metrics, B=200, seed=0, dataset="recon", judge="j")
    got = {(r["round"], r["metric"]): (r["value"], r["n"], r["n_undetermined"]) for r in rows}
    # round 0: correct i1 passes, i2 undetermined -> 1/1; flawed i3 caught, i4 not -> 1/2;
    #          unplanned i3 caught -> 1/1
    # round 1: correct i1, i2 fail -> 0/2; flawed i3 undetermined, i4 caught -> 1/1;
    #          unplanned i3 undetermined -> no item (NaN)
    assert got[(0, "correct_passed")] == (100.0, 1, 1)
    assert got[(0, "flawed_caught")] == (50.0, 2, 0)
    assert got[(0, "unplanned_caught")] == (100.0, 1, 0)
    assert got[(1, "correct_passed")] == (0.0, 2, 0)
    assert got[(1, "flawed_caught")] == (100.0, 1, 1)
    value, n, undetermined = got[(1, "unplanned_caught")]
    assert math.isnan(value) and (n, undetermined) == (0, 1)
    assert len(rows) == 6
    for row in rows:
        assert row["dataset"] == "recon" and row["judge"] == "j" and row["source"] == "hand"
        if not math.isnan(row["value"]):
            assert 0 <= row["low"] <= row["value"] <= row["high"] <= 100
        if not math.isnan(row["value"]):
            assert 0 <= row["boot_low"] <= row["value"] <= row["boot_high"] <= 100
    # round 0 flawed_caught: a draw of the two flawed items gives 0, 1/2 or 1
    flawed0 = next(r for r in rows if (r["round"], r["metric"]) == (0, "flawed_caught"))
    assert flawed0["boot_low"] == 0.0 and flawed0["boot_high"] == 100.0
    # low / high: Clopper-Pearson (the coverage study's choice) of 1 of 2 and of 1 of 1,
    # where the bootstrap gives [100, 100]
    assert (flawed0["low"], flawed0["high"]) == pytest.approx(
        (100 * (1 - 0.975 ** 0.5), 100 * 0.975 ** 0.5))
    unplanned0 = next(r for r in rows if (r["round"], r["metric"]) == (0, "unplanned_caught"))
    assert (unplanned0["boot_low"], unplanned0["boot_high"]) == (100.0, 100.0)
    assert (unplanned0["low"], unplanned0["high"]) == (pytest.approx(2.5), 100.0)
    undefined = next(r for r in rows if (r["round"], r["metric"]) == (1, "unplanned_caught"))
    assert math.isnan(undefined["low"]) and math.isnan(undefined["high"])


def test_rate_rows_without_states():
    assert rate_rows(RATE_ITEMS, [], ("correct_passed",), B=10, seed=0) == []


def test_set_codes_use_the_rubric_of_each_item_scope():
    items = pd.DataFrame([dict(item_id="i1", scope="e1"), dict(item_id="i2", scope="e2")])
    verdicts = Verdicts(from_fails({"A.": ["i2"], "L.": ["i1"]}, ["i1", "i2"]))
    env = {"e1": rubric("e1", ("a", "A.", "hand"))}
    label = {ALL_SCOPE: rubric("l", ("l", "L.", "label"))}
    # i1 under e1's rubric passes A; i2 has no e-rubric: the "all" rubric passes it
    codes = set_codes(items, verdicts, lambda scope: {**env, **label})
    assert codes.tolist() == [PASS, PASS]
    assert set_codes(items, verdicts, lambda scope: label).tolist() == [FAIL, PASS]
    with pytest.raises(ValueError, match="no rubric"):
        set_codes(items, verdicts, lambda scope: env)


# --- attribution ----------------------------------------------------------------------------

def test_attribution_rows_reproduce_table1_and_skip_undetermined_items():
    # carry Table 1: R1-R3 flawed, R4-R5 correct; F_R1 = {A}, F_R2 = {A, B},
    # F_R3 = {B, C, D}, F_R4 = {D}, F_R5 = {}. R6 (correct) is undetermined on C.
    items = pd.DataFrame([dict(item_id=f"R{n}", label="flawed" if n <= 3 else "correct",
                               scope="e1") for n in range(1, 7)])
    answers = {(f"R{n}", f"{c}."): ["no" if c in fails else "yes"]
               for n, fails in enumerate(["A", "AB", "BCD", "D", "", "D"], start=1)
               for c in "ABCD"}
    answers[("R6", "C.")] = ["unparseable"]
    table1 = rubric("t1", ("A", "A.", "hand"), ("B", "B.", "label"), ("C", "C.", "hand"),
                    ("D", "D.", "review by x"))
    frame = attribution_rows(items, Verdicts(check_verdicts(answers)), "e1", table1)
    assert frame["check_id"].tolist() == ["A", "B", "C", "D"]
    assert frame["origin"].tolist() == ["hand", "label", "hand", "review by x"]
    # A: 1 + 1/2 = 1.5; B: 1/2 + 1/3 = 0.83; C: 1/3; D: 1/3 credit, blame 1 (R4; R6 left out)
    assert frame["credit"].tolist() == pytest.approx([1.5, 5 / 6, 1 / 3, 1 / 3])
    assert frame["blame"].tolist() == [0, 0, 0, 1]
    assert frame["unique_catches"].tolist() == [1, 0, 0, 0]
    assert set(frame["n_items"]) == {5}


def test_failing_positions_are_one_based_json():
    verdicts = Verdicts(from_fails({"A.": [], "B.": ["i1"], "C.": ["i1"]}, ["i1"]))
    abc = rubric("r", ("a", "A.", "hand"), ("b", "B.", "hand"), ("c", "C.", "hand"))
    assert failing_positions(verdicts, "i1", abc) == "[2, 3]"
    assert failing_positions(verdicts, "i1", rubric("r", ("a", "A.", "hand"))) == "[]"


# --- an empty gate item table -------------------------------------------------------------

def test_evidence_from_an_empty_gate_item_table_is_empty():
    evidence = EvidenceSource(abc_verdicts(), GATE_ITEMS.iloc[0:0]).for_scope("e1")
    got = evidence(ABC["e1"], Revision((Delete("a"), Keep("b"), Keep("c")), 1, REVISER, "free"))
    assert got.flawed.shape == (0,)
    assert {k: v.shape for k, v in got.current_fails.items()} == {"a": (0,), "b": (0,),
                                                                  "c": (0,)}


def test_attribution_rows_on_no_items():
    frame = attribution_rows(GATE_ITEMS.iloc[0:0], abc_verdicts(), "e1", ABC["e1"])
    assert frame["credit"].tolist() == [0.0, 0.0, 0.0]
    assert set(frame["n_items"]) == {0}


# --- items and the judging job --------------------------------------------------------------

def test_recon_items_mark_unplanned_misses_and_recon72():
    reports = pd.DataFrame([
        dict(item_id="r:s:ok", task="B", output="O1", label="correct", environment="s",
             split="calibration", planned=False),
        dict(item_id="r:s:planned", task="B", output="O2", label="flawed", environment="s",
             split="calibration", planned=True),
        dict(item_id="r:s:miss", task="B", output="O3", label="flawed", environment="s",
             split="calibration", planned=False),
        dict(item_id="r:n:ok", task="B", output="O4", label="correct", environment="n",
             split="evaluation", planned=False),
    ])
    items = recon_items(reports, ["r:s:ok", "r:n:ok"], ["s"])
    assert list(items.columns) == ITEM_COLUMNS
    assert items["item_id"].tolist() == ["r:s:miss", "r:s:ok", "r:s:planned"]  # sorted, s only
    # a correct report is never "unplanned", even though planned is False
    assert items["unplanned"].tolist() == [True, False, False]
    assert items["in_recon72"].tolist() == [False, True, False]
    assert set(items["scope"]) == {"s"}
    with pytest.raises(ValueError, match=r"\['x'\]"):
        recon_items(reports, [], ["s", "x"])


def test_read_items_round_trip_and_validation(tmp_path):
    items = pd.DataFrame([dict(item_id="i1", task="T", output="NA", label="correct",
                               scope="all", split="evaluation", unplanned=False,
                               in_recon72=True)], columns=ITEM_COLUMNS)
    path = tmp_path / "items.csv"
    items.to_csv(path, index=False)
    back = read_items(path)
    assert back.loc[0, "output"] == "NA"  # not read as a missing value
    assert back["in_recon72"].tolist() == [True] and back["unplanned"].tolist() == [False]
    items.assign(unplanned="yes").to_csv(path, index=False)
    with pytest.raises(ValueError, match="unplanned"):
        read_items(path)
    items.drop(columns=["split"]).to_csv(path, index=False)
    with pytest.raises(ValueError, match="split"):
        read_items(path)


class FakeHashClient:
    """LLMClient.run stand-in: fake/hash answers parsed with each request's format."""

    def __init__(self):
        self.labels = []

    def run(self, requests, label="model calls"):
        self.labels.append(label)
        out = []
        for request in requests:
            text = fake_answer(request, request.message_dicts())
            parsed = get_format(request.response_format).parse(text)
            out.append(SimpleNamespace(outcome="ok", text=text, parsed=parsed, error="",
                                       key=cache_key(request, "fake-fingerprint")))
        return out


def test_judge_items_and_rubrics_with_the_fake_model():
    items = pd.DataFrame([
        dict(item_id="a", task="Brief", output="Report a", label="correct", scope="e1",
             split="calibration", unplanned=False, in_recon72=True),
        dict(item_id="b", task="Brief", output="Report b", label="flawed", scope="e1",
             split="calibration", unplanned=True, in_recon72=False),
    ], columns=ITEM_COLUMNS)
    starts = {"hand": ABC, "label": {ALL_SCOPE: rubric("l", ("l1", "L1.", "label"))}}
    record, _ = record_chain(ABC, [[keep("a"), delete("b"), keep("c"), add("N.")]])
    spec = JudgeSpec("fake/hash", votes=3, temperature=0.7, max_tokens=4)
    client = FakeHashClient()
    table = judge_items_and_rubrics(client, "recon", items, starts, [record], DESCRIPTION, spec,
                                    ("per_check", "all_in_one", "paragraph", "scale"))
    assert client.labels == ["carry judge recon fake/hash"]
    # checks: A, B, C, N (e1) + L1 (all) = 5 per item and vote; renderings: 2 sources x 3
    # one-call renderings, for the Recon-72 item a only -> a: 3 x (5 + 6), b: 3 x 5
    assert (table["item_id"] == "a").sum() == 33 and (table["item_id"] == "b").sum() == 15
    assert set(table.loc[table["kind"] == "check", "answer"]) <= {"yes", "no"}
    assert set(table.loc[table["kind"] == "rendering", "answer"]) <= {"pass", "fail"}
    verdicts = Verdicts(table)
    assert len(verdicts.codes) == 10  # 2 items x 5 texts
    assert set(verdicts.codes.values()) <= {PASS, FAIL}  # 3 votes: always a majority
    codes = rendering_state_codes(items.iloc[:1], verdicts, "label", "scale")
    assert codes.shape == (1,)
    with pytest.raises(ValueError, match="no scale verdict for item 'b'"):
        rendering_state_codes(items, verdicts, "label", "scale")
    other = judge_items_and_rubrics(FakeHashClient(), "summedits", items, starts, [record],
                                    DESCRIPTION, spec, ("per_check", "all_in_one"))
    assert set(other["kind"]) == {"check"} and len(other) == 30
