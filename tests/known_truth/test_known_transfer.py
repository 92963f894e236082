"""transfer's known-truth world (rubriclab.known_truth.transfer): the scripted models answer
transfer's own prompts in the project's formats, realise the set rates, and the pipeline's
stages and metrics fed their answers recover Q+ and Q- within their bootstrap intervals."""

import hashlib
import json
from types import SimpleNamespace

import pandas as pd
import pytest

from rubriclab.known_truth.transfer import (
    GENERATED_FORM, OPENING, ResponderRates, TransferWorld, edited_response, generated_text,
    judged_q, linked_text, original_response, responder_rates, stated_lines, transfer_answer,
)
from rubriclab.known_truth.world import OutsideTheWorld
from rubriclab.llm import LLMClient, LLMConfig, ModelSettings, Request
from rubriclab.llm.fake import parse_fake_model
from rubriclab.llm.formats import get_format
from rubriclab.transfer.formats import match_matrix
from rubriclab.stats.bootstrap import paired_bootstrap
from rubriclab.transfer import analysis, metrics, pipeline
from rubriclab.transfer.ids import EXPERT
from rubriclab.transfer.prompts import (
    FRAMINGS, judge_messages, matching_messages,
    render_conversation, rubric_intervention_messages, similarity_messages,
)
from rubriclab.transfer.restate import apply_restatement

GENERATOR = "fake/known-transfer-generator"
RESPONDER = "fake/known-transfer-responder?q_pass=0.3&q_fail=0.6"
EXACT_JUDGE = "fake/known-transfer-judge?tpr=1&tnr=1"


def healthbench_table(n: int) -> pd.DataFrame:
    """A prepared HealthBench table: n conversations, 5-8 criteria each, some negative (one
    phrased as a failure)."""
    rows = []
    for i in range(n):
        turns = [{"role": "user", "content": f"Case {i}: I have had symptom {i} for 3 days. "
                                             "What should I do?"}]
        rubric = []
        for k in range(5 + i % 4):
            if k % 3 == 2:
                rubric.append({"criterion": f"Recommends unsafe step {k} for case {i}.",
                               "points": -5})
            elif k == 4:
                rubric.append({"criterion": f"Fails to mention\n  warning sign {k} of case {i}.",
                               "points": -3})
            else:
                rubric.append({"criterion": f"Mentions fact {k} of case {i}.", "points": 5})
        rows.append(dict(item_id=f"healthbench:{i}", prompt_json=json.dumps(turns),
                         rubric_json=json.dumps(rubric), task=render_conversation(turns)))
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def world():
    return TransferWorld.from_table(healthbench_table(60), "test table")


def examples_of(n: int) -> pd.DataFrame:
    return healthbench_table(n).rename(columns={"item_id": "example_id"})


def first_example(world):
    turns = json.loads(examples_of(1)["prompt_json"][0])
    return turns, world.example(render_conversation(turns))


def world_ask(world):
    """The pipeline's `ask` with the world's answers, parsed by the project's formats."""
    def ask(requests, label):
        completions = []
        for request in requests:
            behaviour = parse_fake_model(request.model)[0]
            text = transfer_answer(behaviour, request.model, request.sample_index,
                                   request.response_format, request.message_dicts(), world)
            completions.append(SimpleNamespace(
                outcome="ok", parsed=get_format(request.response_format).parse(text),
                error=None, key=hashlib.sha256(text.encode()).hexdigest()[:16]))
        return completions
    return ask


def run_pipeline(world, n: int, responder: str, judge: str, votes: int):
    """The transfer stages up to the whole-rubric edits' verdicts, with the world's models."""
    ask = world_ask(world)
    examples = examples_of(n)
    expert = pipeline.restate_expert_rubrics(examples, judge, 0.0, ask)
    generated = pipeline.generate_rubrics(examples, GENERATOR, 0.0, 400, ask)
    example_ids, left_out = pipeline.analysable_examples(examples, expert, {GENERATOR: generated})
    rubrics = pipeline.rubric_texts(expert, {GENERATOR: generated}, example_ids)
    originals = pipeline.respond(examples, responder, 0, 0.7, 200, ask)
    before = pipeline.judge_responses(originals, examples, rubrics, judge, votes, 0.7, ask,
                                      reads=None)
    edits = pipeline.intervene(originals, examples, before, rubrics, responder, 0.7, 200, None,
                               ask, criterion_edits=True)
    after = pipeline.judge_responses(edits, examples, rubrics, judge, votes, 0.7, ask, reads=None)
    return SimpleNamespace(expert=expert, left_out=left_out, example_ids=example_ids,
                           rubrics=rubrics, originals=originals, edits=edits,
                           responses=pd.concat([originals, edits], ignore_index=True),
                           verdicts=pd.concat([before, after], ignore_index=True))


def q_intervals(run, responder: str) -> dict[str, tuple[float, float, float]]:
    """metric -> (estimate, low, high) by the analysis code (Algorithm 1, Algorithm 4)."""
    inputs = analysis.Inputs(
        examples=run.example_ids, rubrics=run.rubrics, generators=[GENERATOR],
        responses=run.responses, verdicts=run.verdicts, matching=pd.DataFrame(),
        cosine=pd.DataFrame(), main_response_model=responder, it_response_models=[responder],
        panels={}, degrader=responder, degradation_models=[responder], framings=[], tau=0.7,
        B=1000, seed=0)
    look = analysis.Lookup(inputs)
    statistics = {metric: metrics.micro_average_statistic(
        analysis.it_records(look, GENERATOR, responder, metric), run.example_ids)
        for metric in metrics.Q_METRICS}
    table = paired_bootstrap(len(run.example_ids), statistics, B=1000, seed=0)
    return {row.statistic: (row.estimate, row.low, row.high) for row in table.itertuples()}


# --- the answers parse with transfer's formats -------------------------------------------------

def test_the_restated_rubric_passes_the_restatement_screens(world):
    run_examples = examples_of(6)
    expert = pipeline.restate_expert_rubrics(run_examples, EXACT_JUDGE, 0.0, world_ask(world))
    assert expert["flags"] == []
    rubric = expert["rubrics"]["healthbench:4"]
    assert rubric[2]["text"] == "Avoids this flaw: Recommends unsafe step 2 for case 4."
    assert rubric[4]["text"] == "Avoids this flaw: Fails to mention warning sign 4 of case 4."
    assert apply_restatement("x", run_examples["rubric_json"][4],
                             {"2": rubric[2]["text"], "4": rubric[4]["text"]}).ok


def test_the_generated_rubric_links_one_criterion_to_each_expert_criterion(world):
    ask = world_ask(world)
    examples = examples_of(3)
    generated = pipeline.generate_rubrics(examples, GENERATOR, 0.0, 400, ask)
    expert = pipeline.restate_expert_rubrics(examples, EXACT_JUDGE, 0.0, ask)
    for example_id, entry in generated["rubrics"].items():
        texts = [c["text"] for c in expert["rubrics"][example_id]]
        assert entry["status"] == "ok"
        assert entry["criteria"] == [GENERATED_FORM.format(t) for t in texts]
        assert [linked_text(g) for g in entry["criteria"]] == texts


def test_responses_edits_and_degraded_responses_parse_and_read_back(world):
    run = run_pipeline(world, 4, RESPONDER, EXACT_JUDGE, 1)
    for text in run.responses["text"]:
        assert get_format("transfer_response").parse(text) == text
        assert text.split("\n")[0] == OPENING
    degraded = pipeline.degrade(examples_of(4), run.expert, RESPONDER, 0.7, 200, 0,
                                world_ask(world))
    for row in degraded.itertuples():
        own = set(run.rubrics[EXPERT][row.example_id]) | set(run.rubrics[GENERATOR][row.example_id])
        assert stated_lines(row.text) and not own & set(stated_lines(row.text))


def test_the_judge_reads_the_truth_off_the_response_lines(world):
    turns, example = first_example(world)
    criteria = [*example.expert, *example.generated]
    response = "\n".join([OPENING, "- " + example.expert[1], "- " + example.generated[3]])
    messages = judge_messages(turns, criteria, response)
    answer = transfer_answer("known-transfer-judge", EXACT_JUDGE, 0,
                             f"transfer_scores_{len(criteria)}", messages, world)
    scores = get_format(f"transfer_scores_{len(criteria)}").parse(answer)
    assert [k for k, s in enumerate(scores) if s] == [1, len(example.expert) + 3]
    # a physician's free text states none of the world's criteria
    free = judge_messages(turns, criteria, "Rest, drink water, see a doctor.")
    answer = transfer_answer("known-transfer-judge", EXACT_JUDGE, 0,
                             f"transfer_scores_{len(criteria)}", free, world)
    assert get_format(f"transfer_scores_{len(criteria)}").parse(answer) == [0] * len(criteria)


def test_the_matcher_follows_the_links(world):
    turns, example = first_example(world)
    sim = lambda ref, gen: int(transfer_answer(  # noqa: E731
        "known-transfer-judge", EXACT_JUDGE, 0, "transfer_similarity",
        similarity_messages(ref, gen), world))
    assert sim(example.expert[2], example.generated[2]) == 9
    assert sim(example.expert[2], example.generated[1]) == 0
    n = len(example.generated)
    for framing in FRAMINGS:
        answer = transfer_answer("known-transfer-judge", EXACT_JUDGE, 0, f"transfer_match_{n}",
                                 matching_messages(framing, turns, example.expert,
                                                   example.generated), world)
        matrix = match_matrix(get_format(f"transfer_match_{n}").parse(answer), n)
        expected = 0 if framing == "implies" else 1
        assert matrix == [[expected if g == t else 0 for t in range(n)] for g in range(n)]


def test_a_prompt_or_criterion_outside_the_world_stops_the_call(world):
    turns, example = first_example(world)
    strange = judge_messages(turns, [example.expert[0], "Is kind."],
                             "\n".join([OPENING, "- Is kind."]))
    with pytest.raises(OutsideTheWorld, match="no either criterion 'Is kind.'"):
        transfer_answer("known-transfer-judge", EXACT_JUDGE, 0, "transfer_scores_2", strange,
                        world)
    unknown = judge_messages([{"role": "user", "content": "An unknown question"}],
                             [example.expert[0]], OPENING)
    with pytest.raises(OutsideTheWorld, match="no HealthBench example"):
        transfer_answer("known-transfer-judge", EXACT_JUDGE, 0, "transfer_scores_1", unknown,
                        world)
    foreign = rubric_intervention_messages("pass", turns, "A free text reply.",
                                           [{"text": example.expert[0], "satisfied": 0}])
    with pytest.raises(OutsideTheWorld, match="edits only the responses it wrote"):
        transfer_answer("known-transfer-responder", RESPONDER, 0, "transfer_response", foreign,
                        world)
    with pytest.raises(OutsideTheWorld, match="does not answer the format"):
        transfer_answer("known-transfer-generator", GENERATOR, 0, "transfer_response", foreign,
                        world)


def test_rates_are_checked_when_the_model_string_is_read():
    with pytest.raises(ValueError, match="needs q_fail"):
        parse_fake_model("fake/known-transfer-responder?q_pass=0.3")
    with pytest.raises(ValueError, match=r"q_pass must be in \[0.0, 1.0\]"):
        parse_fake_model("fake/known-transfer-responder?q_pass=1.3&q_fail=0.6")
    with pytest.raises(ValueError, match="unknown option"):
        parse_fake_model("fake/known-transfer-generator?q_pass=0.3")
    with pytest.raises(ValueError, match="tpr must be in"):
        parse_fake_model("fake/known-transfer-judge?tpr=0.4&tnr=1")
    assert responder_rates(RESPONDER) == ResponderRates(0.3, 0.6, 0.5, "")


def test_the_models_answer_through_the_client_from_the_working_directory(tmp_path, monkeypatch):
    prepared = tmp_path / "data" / "prepared"
    prepared.mkdir(parents=True)
    healthbench_table(2).to_csv(prepared / "healthbench.csv", index=False)
    monkeypatch.chdir(tmp_path)
    turns = json.loads(healthbench_table(2)["prompt_json"][1])
    request = Request.chat(GENERATOR, [
        {"role": "system", "content": "Generate a rubric ..."},
        {"role": "user", "content": "# Conversation\n\n" + render_conversation(turns)
         + "\n\nReturn the rubric as exactly one JSON array of strings."}],
        response_format="transfer_rubric")
    config = LLMConfig(cache_dir=tmp_path / "cache", defaults=ModelSettings(backoff_s=0.0))
    with LLMClient(config) as client:
        completion = client.run([request])[0]
    assert completion.outcome == "ok" and len(completion.parsed) == 6


# --- the world realises the set rates -------------------------------------------------------------

def within_binomial(k: int, n: int, p: float, sds: float = 4.0) -> bool:
    return abs(k - n * p) <= sds * (n * p * (1 - p)) ** 0.5


def test_originals_meet_linked_pairs_together_at_p_met(world):
    rates = ResponderRates(0.3, 0.6, 0.5, "")
    met = total = 0
    for example in world.by_conversation.values():
        for sample in range(3):
            lines = set(stated_lines(original_response(rates, sample, example)))
            for text in example.expert:
                assert (text in lines) == (generated_text(text) in lines)
                met += text in lines
                total += 1
    assert total > 1000 and within_binomial(met, total, 0.5)


@pytest.mark.parametrize("direction,rate", [("pass", 0.3), ("fail", 0.6)])
def test_an_edit_drags_the_linked_criterion_at_its_directions_rate(world, direction, rate):
    rates = ResponderRates(0.3, 0.6, 0.5, "")
    dragged = total = 0
    for example in world.by_conversation.values():
        everything = [t for e in example.expert for t in (e, generated_text(e))]
        start = "\n".join([OPENING] + ([] if direction == "pass" else
                                       ["- " + t for t in everything]))
        for target in [*example.expert, *example.generated]:
            shown = ([], [target]) if direction == "pass" else ([target], [])
            lines = stated_lines(edited_response(rates, direction, example, start, *shown))
            changed = (set(lines) ^ set(stated_lines(start))) - {target}
            assert changed <= {linked_text(target)}
            assert (target in lines) == (direction == "pass")
            dragged += bool(changed)
            total += 1
    assert total > 700 and within_binomial(dragged, total, rate)


def test_judged_q_is_the_set_rate_under_an_exact_judge_and_lower_under_error():
    assert judged_q("+", 0.3, 0.5) == pytest.approx(0.3)
    assert judged_q("-", 0.6, 0.2) == pytest.approx(0.6)
    assert judged_q("+", 0.3, 0.5, tpr=0.9, tnr=0.9) == pytest.approx(
        0.5 * 0.9 * 0.3 * 0.8 / 0.5)
    # a majority of three votes errs less, so it shows more of the truth
    assert judged_q("-", 0.6, 0.5, 0.9, 0.9) < judged_q("-", 0.6, 0.5, 0.9, 0.9, votes=3) < 0.6
    with pytest.raises(ValueError, match="odd"):
        judged_q("+", 0.3, 0.5, votes=2)


# --- the pipeline and its metrics recover the set rates -------------------------------------------

def test_the_metrics_recover_q_plus_and_q_minus_under_an_exact_judge(world):
    run = run_pipeline(world, 60, RESPONDER, EXACT_JUDGE, 1)
    assert run.left_out.empty and run.expert["flags"] == []
    found = q_intervals(run, RESPONDER)
    truth = {"+": 0.3, "-": 0.6}
    for metric, (estimate, low, high) in found.items():
        direction = metrics.Q_METRICS[metric][2]
        assert low <= truth[direction] <= high, (metric, estimate, low, high)
        assert high - low < 0.25, (metric, low, high)
    # Figure 5's asymmetry: the fail interval lies above the pass interval
    assert found["Q-(Cg->C*)"][1] > found["Q+(Cg->C*)"][2]


def test_the_metrics_recover_the_judged_q_under_judge_error(world):
    responder = "fake/known-transfer-responder?q_pass=0.3&q_fail=0.6&salt=b"
    judge = "fake/known-transfer-judge?tpr=0.9&tnr=0.8"
    run = run_pipeline(world, 60, responder, judge, 3)
    found = q_intervals(run, responder)
    for metric, (estimate, low, high) in found.items():
        direction = metrics.Q_METRICS[metric][2]
        truth = judged_q(direction, 0.3 if direction == "+" else 0.6, 0.5, 0.9, 0.8, 3)
        assert low <= truth <= high, (metric, truth, estimate, low, high)


def test_single_criterion_edits_are_matched_at_the_rate_and_never_general(world):
    run = run_pipeline(world, 60, RESPONDER, EXACT_JUDGE, 1)
    inputs = analysis.Inputs(
        examples=run.example_ids, rubrics=run.rubrics, generators=[GENERATOR],
        responses=run.responses, verdicts=run.verdicts, matching=pd.DataFrame(),
        cosine=pd.DataFrame(), main_response_model=RESPONDER, it_response_models=[RESPONDER],
        panels={}, degrader=RESPONDER, degradation_models=[RESPONDER], framings=[], tau=0.7,
        B=10, seed=0)
    categories = analysis.criterion_level(analysis.Lookup(inputs), RESPONDER)
    between = categories[categories["row_kind"] != "within"].set_index(
        ["row_kind", "direction", "category"])
    for row_kind in ("gen->expert", "expert->gen"):
        for direction, rate in (("+", 0.3), ("-", 0.6)):
            matched = between.loc[(row_kind, direction, "matched")]
            n = int(matched["n_criteria"])
            assert within_binomial(round(matched["share"] * n / 100), n, rate)
            assert between.loc[(row_kind, direction, "general"), "share"] == 0
    within = categories[categories["row_kind"] == "within"]
    assert (within.loc[within["category"] == "none", "share"] == 100).all()
