"""transfer's known-truth world: scripted models that answer transfer's prompts (seed 002,
Appendix E) from a declared world, so that the pipeline's interventional-transfer estimates
(Equation 1, Figure 5) can be checked against rates set in the model strings
(`rubriclab.known_truth` explains the known-truth world; this module is its transfer part).

    fake/known-transfer-generator        writes each example's generated rubric
    fake/known-transfer-responder?q_pass=0.3&q_fail=0.6[&p_met=0.5][&salt=..]
                                         answers the conversation (the original response and
                                         the panel's samples), edits a response to pass or fail
                                         criteria (the interventions), and writes RubricRAG's
                                         degraded response
    fake/known-transfer-judge?tpr=1&tnr=1[&salt=..]
                                         scores every criterion of a rubric (prompt 11) with set
                                         per-criterion rates, and, exactly, restates negative
                                         criteria (prompt 3) and matches criteria (prompts 7-10),
                                         as the seed's one Gemini Flash plays judge, restater and
                                         matcher (Table A.3)

The world. Only what the project prepares: the HealthBench examples of
data/prepared/healthbench.csv (the working directory's; every transfer example comes from it),
each with its conversation and expert rubric. On top of them the world declares a closed
vocabulary, each text with its meaning:
- an expert criterion as the pipeline shows it: a positive one as written, a negative one
  restated as RESTATED_FORM ("Avoids this flaw: <criterion>"), each on one line;
- the generated rubric of an example: one criterion per expert criterion, GENERATED_FORM
  ("Addresses the concern behind this point: <expert criterion>"), in the expert rubric's
  order. A generated criterion and the expert criterion it names are LINKED; nothing else is;
- a response: the line OPENING, then one line "- <criterion>" for each criterion (of either
  rubric) it meets. It meets a criterion exactly when it has that line; a text without such a
  line (a physician's free text) meets none.

What the responder does, each draw a seeded hash (`world._unit`) compared with a set rate:
- original response (prompt 1, sample k): each linked pair is met together (both lines) with
  probability p_met (default 0.5, a coin), drawn per (salt, k, conversation, expert criterion);
- edit to pass (prompt 4: whole rubric, or one criterion): adds the line of every criterion
  the prompt lists as not satisfied, and the line of its linked criterion, if absent, with
  probability q_pass; keeps everything else;
- edit to fail (prompt 5): removes the line of every criterion listed as satisfied, and the line
  of its linked criterion, if present, with probability q_fail; keeps everything else.
  A drag is drawn per (salt, direction, conversation, edited criterion, linked criterion): the
  rubric-level and the single-criterion edit of a criterion drag alike, and a higher rate only
  adds drags (common draws across a sweep of rates);
- degraded response (prompt 6): the opening and the lines of the unrelated rubric it is given,
  none of the example's own criteria.
q_pass and q_fail have no default: they are the truth to recover. Pass and fail edits act only
through the criteria the prompt shows, as in the seed: a whole-rubric edit of one rubric shows
none of the other's, which moves only through links.

What the pipeline must then show. In the original response a linked pair is met or unmet
together, so under an exact judge (tpr = tnr = 1) every measurement criterion at a has its
linked target criterion at a and is edited towards b, and moves with the rate of the edit's
direction: Q+ = q_pass and Q- = q_fail for both targets (Q(Cg->C*) and Q(C*->Cg)); the
single-criterion edits of Figure 6 make each target "matched" with that rate and "irrelevant"
otherwise (never "general", and nothing moves within a rubric). With judge error, the
expected judged Q is `judged_q` (the judge's error both decides what the editor is shown and
blurs the measurement). The matcher's answers follow the links: similarity 9 for a linked
pair and 0 otherwise; "measure the same thing" and "move with" map a generated criterion to
its linked expert criterion; "implies" to none (an edit meets a generated criterion without
its linked one whenever q_pass < 1).

How the judge reads its prompt (the design of `rubriclab.known_truth`): it sees only its prompt. It finds the
example by the conversation's text, checks every criterion it is asked about is the example's
(expert, as restated, or generated), and reads the truth off the response's lines. Each
per-criterion score is the truth with probability tpr (met) or tnr (not met), drawn from a hash
of the model string, sample index, messages and criterion number (each vote its own draw).
A prompt, example, criterion or response outside the world stops the call with an error naming
it. The restater returns RESTATED_FORM of each criterion it is shown (a negative criterion of
the world); the restatement screens of rubriclab.transfer.restate pass it.

The world declares no truth for the physician responses (they meet none of its criteria), so
the baselines that read them (Figure 4's physician correlation and discrimination) mean nothing
here; nor do the baselines' absolute levels, which follow from the declared links. What the
world is for is the four Q metrics (Figure 5) and Figure 6's categories.

The answers share `world.KNOWN_FINGERPRINT` in every cache key: raise its version when what
these models answer changes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from math import comb
from pathlib import Path
from urllib.parse import parse_qs

from .world import (
    TRANSFER_GENERATOR, TRANSFER_JUDGE, TRANSFER_RESPONDER, OutsideTheWorld, _unit, judge_rates,
)

DATA_DIR = Path("data/prepared")  # relative to the working directory of the job
HEALTHBENCH = "healthbench.csv"

RESTATED_FORM = "Avoids this flaw: {}"
GENERATED_FORM = "Addresses the concern behind this point: {}"
OPENING = "Here is what I would tell you."
LINE = "- "

# Markers of transfer's prompts (rubriclab.transfer.prompts, which this world does not import);
# tests/known_truth/test_known_transfer.py answers prompts built there.
_RESPONSE_SYSTEM = "You are a helpful AI assistant. Answer the user’s question."
_PASS_OPENING = "Rewrite the response so it satisfies every criterion below.\n\n"
_FAIL_OPENING = "Rewrite the response so it satisfies no criterion below.\n\n"
_SATISFIED = "# Criteria it satisfies—"
_UNSATISFIED = "\n\n# Criteria it does NOT satisfy—"
_AFTER_CRITERIA = "\n\nChange as little as possible"
_CONVERSATION = "# Conversation\n\n"
_RESPONSE = "\n\n# Response\n\n"
_DEGRADE_OPENING = "# Rubric\n\n"
_RUBRIC = "\n\n# Rubric\n\n"
_EMPTY_SECTION = "(none)"
_GENERATION_INSTRUCTION = "\n\nReturn the rubric as exactly one JSON array"
_RESTATE_OPENING = "Rewrite each of these criteria so that satisfying it is good.\n\n"
_SIMILARITY = re.compile(r"\AREFERENCE: (.*)\n\nGENERATED: (.*)\n\nSimilarity score \(0\.\.9\):\Z",
                         re.DOTALL)
_TRUE_RUBRIC = "\n\n# True Rubric\n\n"
_GENERATED_RUBRIC = "\n\n# Generated Rubric\n\n"
_FRAMINGS = {"determine which true criteria measure the same thing": "match_rubric",
             "imagine perturbing a response": "simulate_intervention",
             "determine which true criteria it logically implies": "implies"}
_NUMBERED = re.compile(r"^(0|[1-9][0-9]*)\. (.*)$")
_SCORES = re.compile(r"^transfer_scores_([1-9][0-9]*)$")
_MATCH = re.compile(r"^transfer_match_([1-9][0-9]*)$")


# --- the world ------------------------------------------------------------------------------

def one_line(text: str) -> str:
    """A criterion as transfer's prompts show it (rubriclab.transfer.prompts.criterion_line)."""
    return " ".join(text.split())


def restated_text(criterion: str) -> str:
    return RESTATED_FORM.format(one_line(criterion))


def generated_text(expert_criterion: str) -> str:
    return GENERATED_FORM.format(one_line(expert_criterion))


def linked_text(criterion: str) -> str:
    """The criterion of the other rubric linked to this one."""
    prefix = GENERATED_FORM.format("")
    return criterion[len(prefix):] if criterion.startswith(prefix) else generated_text(criterion)


@dataclass(frozen=True)
class Example:
    example_id: str
    conversation: str            # as transfer's prompts render it
    expert: tuple[str, ...]      # as the pipeline shows them: negative ones restated, one line
    negative: tuple[str, ...]    # the negative criteria as written (one line), for the restater

    @property
    def generated(self) -> tuple[str, ...]:
        return tuple(generated_text(text) for text in self.expert)

    def check_criteria(self, texts, rubric: str = "either") -> None:
        """Raise unless every text is a criterion of this example (of `rubric`)."""
        allowed = {"expert": set(self.expert), "generated": set(self.generated),
                   "either": set(self.expert) | set(self.generated)}[rubric]
        for text in texts:
            if text not in allowed:
                raise OutsideTheWorld(f"the known transfer world has no {rubric} criterion "
                                      f"{text[:100]!r} for example {self.example_id}")


class TransferWorld:
    """The prepared HealthBench examples, by conversation text."""

    def __init__(self, examples: list[Example], source: str = ""):
        self.source = source
        self.by_conversation: dict[str, Example] = {}
        for example in examples:
            known_one = self.by_conversation.get(example.conversation)
            if known_one is not None and known_one.expert != example.expert:
                raise ValueError(f"{source}: examples {known_one.example_id!r} and "
                                 f"{example.example_id!r} have the same conversation and "
                                 "different rubrics")
            self.by_conversation.setdefault(example.conversation, example)
        self.negative = {text for e in examples for text in e.negative}
        self.expert = {text for e in examples for text in e.expert}

    @classmethod
    def from_table(cls, table, source: str = "") -> TransferWorld:
        """From a prepared HealthBench table (item_id, prompt_json, rubric_json)."""
        examples = []
        for row in table.itertuples(index=False):
            turns = json.loads(row.prompt_json)
            rubric = json.loads(row.rubric_json)
            expert, negative = [], []
            for entry in rubric:
                if entry["points"] < 0:
                    negative.append(one_line(entry["criterion"]))
                    expert.append(restated_text(entry["criterion"]))
                else:
                    expert.append(one_line(entry["criterion"]))
            examples.append(Example(row.item_id, render_conversation(turns), tuple(expert),
                                    tuple(negative)))
        return cls(examples, source)

    def example(self, conversation: str) -> Example:
        found = self.by_conversation.get(conversation)
        if found is None:
            raise OutsideTheWorld(f"the known transfer world has no HealthBench example with "
                                  f"this conversation in {self.source or 'its world'} (it "
                                  f"begins {conversation[:80]!r})")
        return found


def render_conversation(turns: list[dict]) -> str:
    """rubriclab.data.healthbench.render_task, as every transfer prompt shows a conversation."""
    return "\n\n".join(f"{turn['role']}: {turn['content']}" for turn in turns)


@lru_cache(maxsize=4)
def _world_at(path: str, stamp: int) -> TransferWorld:
    import pandas as pd  # only where a world is read: the model layer loads fast

    return TransferWorld.from_table(pd.read_csv(path, keep_default_na=False), path)


def current_world(data_dir: Path = DATA_DIR) -> TransferWorld:
    """The world of the working directory's prepared HealthBench table, read once per process
    (again when it changes)."""
    path = data_dir / HEALTHBENCH
    if not path.exists():
        raise OutsideTheWorld(f"the known transfer world reads {path} (in {Path.cwd()}), which "
                              "does not exist")
    return _world_at(str(path.resolve()), path.stat().st_mtime_ns)


# --- responses ------------------------------------------------------------------------------

def compose_response(lines: list[str]) -> str:
    return "\n".join([OPENING, *(LINE + text for text in lines)])


def stated_lines(response: str) -> list[str]:
    """The criteria a response's lines state, in order (any text: free text states none)."""
    return [line[len(LINE):] for line in response.split("\n") if line.startswith(LINE)]


def world_lines(response: str) -> list[str]:
    """The lines of a response the world wrote; an error for any other text."""
    lines = response.split("\n")
    if lines[0] != OPENING or not all(line.startswith(LINE) for line in lines[1:]):
        raise OutsideTheWorld(f"the known transfer responder edits only the responses it wrote "
                              f"({OPENING!r} and '- ' lines), not {response[:80]!r}")
    return [line[len(LINE):] for line in lines[1:]]


# --- options ----------------------------------------------------------------------------------

def _options(model: str) -> dict[str, list[str]]:
    return parse_qs(model.partition("?")[2])


def _rate(model: str, name: str, default: float | None, low: float, high: float) -> float:
    options = _options(model)
    if name not in options:
        if default is None:
            raise ValueError(f"fake model {model!r}: a known transfer responder needs "
                             f"{name}=<rate>")
        return default
    try:
        value = float(options[name][0])
    except ValueError:
        raise ValueError(f"fake model {model!r}: {name} must be a number") from None
    if not low <= value <= high:
        raise ValueError(f"fake model {model!r}: {name} must be in [{low}, {high}], got {value}")
    return value


@dataclass(frozen=True)
class ResponderRates:
    q_pass: float
    q_fail: float
    p_met: float
    salt: str


def responder_rates(model: str) -> ResponderRates:
    """q_pass, q_fail in [0, 1] (required); p_met in [0.05, 0.95], default 0.5 (a coin): both
    states must occur in the originals, or one direction's Q has no denominator."""
    return ResponderRates(_rate(model, "q_pass", None, 0.0, 1.0),
                          _rate(model, "q_fail", None, 0.0, 1.0),
                          _rate(model, "p_met", 0.5, 0.05, 0.95),
                          _options(model).get("salt", [""])[0])


def check_options(behaviour: str, model: str) -> None:
    """The options' values (models.check_options has checked their names)."""
    if behaviour == TRANSFER_RESPONDER:
        responder_rates(model)
    elif behaviour == TRANSFER_JUDGE:
        judge_rates(model)


# --- what the pipeline should show --------------------------------------------------------------

def majority_rate(rate: float, votes: int) -> float:
    """P(the majority of `votes` independent answers is right), each right with `rate`."""
    if type(votes) is not int or votes < 1 or votes % 2 == 0:
        raise ValueError(f"votes must be an odd int >= 1 (an even count can tie), got {votes!r}")
    return sum(comb(votes, k) * rate ** k * (1 - rate) ** (votes - k)
               for k in range(votes // 2 + 1, votes + 1))


def judged_q(direction: str, q: float, p_met: float, tpr: float = 1.0, tnr: float = 1.0,
             votes: int = 1) -> float:
    """The Q^direction (Equation 1) the pipeline should estimate in this world, for either
    target rubric, with a judge of the given per-criterion rates and majority of `votes`.

    Per linked pair met with probability p in the original, t and n the majority's rates and
    J(x) = x t + (1 - x)(1 - n) the chance a criterion met with probability x is judged met:
    the edit towards b is made where the judge shows the target at a, and drags the linked
    criterion with rate q, so
        Q+ = (1 - p) n q (t + n - 1) / (1 - J(p)),   Q- = p t q (t + n - 1) / J(p).
    With an exact judge both are q.
    """
    t, n = majority_rate(tpr, votes), majority_rate(tnr, votes)
    judged_met = p_met * t + (1 - p_met) * (1 - n)
    if direction == "+":
        return (1 - p_met) * n * q * (t + n - 1) / (1 - judged_met)
    if direction == "-":
        return p_met * t * q * (t + n - 1) / judged_met
    raise ValueError(f"direction must be '+' or '-', got {direction!r}")


# --- reading prompts ----------------------------------------------------------------------------

def _user(messages: list[dict[str, str]]) -> str:
    return next((m["content"] for m in reversed(messages) if m["role"] == "user"), "")


def _system(messages: list[dict[str, str]]) -> str:
    return messages[0]["content"] if messages and messages[0]["role"] == "system" else ""


def _between(text: str, start: str, end: str, where: str, *, last_end: bool = False) -> str:
    """The text after the first `start` and before `end` (its first occurrence after `start`,
    or its last with last_end)."""
    begin = text.find(start)
    if begin < 0:
        stop = -1
    else:
        stop = text.rfind(end) if last_end else text.find(end, begin + len(start))
    if begin < 0 or stop < begin + len(start):
        raise OutsideTheWorld(f"the known transfer world cannot read the {where} of a prompt "
                              f"beginning {text[:80]!r}")
    return text[begin + len(start):stop]


def _bullets(section: str, where: str) -> list[str]:
    if section == _EMPTY_SECTION:
        return []
    lines = section.split("\n")
    if not all(line.startswith(LINE) for line in lines):
        raise OutsideTheWorld(f"the known transfer world cannot read the {where} list "
                              f"{section[:80]!r}")
    return [line[len(LINE):] for line in lines]


def _labelled(section: str, label: str, where: str) -> list[str]:
    """Lines "<label><k><separator><text>" numbered 0, 1, ... in order."""
    texts = []
    separator = ". " if label == "" else ": "
    for k, line in enumerate(section.split("\n")):
        prefix = f"{label}{k}{separator}"
        if not line.startswith(prefix):
            raise OutsideTheWorld(f"the known transfer world expected {where} line {prefix!r}..., "
                                  f"got {line[:80]!r}")
        texts.append(line[len(prefix):])
    return texts


# --- the generator ------------------------------------------------------------------------------

def generator_answer(messages: list[dict[str, str]], world: TransferWorld) -> str:
    """Prompt 2: the example's declared generated rubric, as a JSON array."""
    conversation = _between(_user(messages), _CONVERSATION, _GENERATION_INSTRUCTION,
                            "generation prompt's conversation", last_end=True)
    return json.dumps(list(world.example(conversation).generated), ensure_ascii=False)


# --- the responder ------------------------------------------------------------------------------

def _draw(parts: list) -> float:
    return _unit(parts)


def original_response(rates: ResponderRates, sample_index: int, example: Example) -> str:
    lines = []
    for text in example.expert:
        if _draw(["met", rates.salt, sample_index, example.conversation, text]) < rates.p_met:
            lines += [text, generated_text(text)]
    return compose_response(lines)


def edited_response(rates: ResponderRates, direction: str, example: Example, response: str,
                    satisfied: list[str], unsatisfied: list[str]) -> str:
    """Prompt 4 ("pass") or 5 ("fail"): the response edited towards the criteria the prompt
    asks to change, each dragging its linked criterion with the direction's rate."""
    example.check_criteria(satisfied + unsatisfied)
    lines = world_lines(response)
    rate, targets = (rates.q_pass, unsatisfied) if direction == "pass" else (rates.q_fail,
                                                                             satisfied)
    for target in targets:
        linked = linked_text(target)
        dragged = _draw(["drag", rates.salt, direction, example.conversation, target,
                         linked]) < rate
        for text in (target, linked) if dragged else (target,):
            if direction == "pass" and text not in lines:
                lines.append(text)
            elif direction == "fail" and text in lines:
                lines.remove(text)
    return compose_response(lines)


def responder_answer(model: str, sample_index: int, messages: list[dict[str, str]],
                     world: TransferWorld) -> str:
    rates = responder_rates(model)
    user = _user(messages)
    for direction, opening in (("pass", _PASS_OPENING), ("fail", _FAIL_OPENING)):
        if user.startswith(opening):
            conversation = _between(user, "\n\n" + _CONVERSATION, _RESPONSE, "conversation",
                                    last_end=True)
            response = user[user.rfind(_RESPONSE) + len(_RESPONSE):]
            satisfied = _bullets(_between(user, "\n\n", _UNSATISFIED, "satisfied criteria")
                                 .partition("\n\n")[2], "satisfied")
            unsatisfied = _bullets(_between(user, _UNSATISFIED, _AFTER_CRITERIA,
                                            "unsatisfied criteria").partition("\n\n")[2],
                                   "unsatisfied")
            return edited_response(rates, direction, world.example(conversation), response,
                                   satisfied, unsatisfied)
    if user.startswith(_DEGRADE_OPENING):
        rubric = _between(user, _DEGRADE_OPENING, "\n\n" + _CONVERSATION, "degrade rubric")
        conversation = user[user.index("\n\n" + _CONVERSATION) + len(_CONVERSATION) + 2:]
        world.example(conversation)
        return compose_response(_bullets(rubric, "degrade rubric"))
    if _system(messages) == _RESPONSE_SYSTEM and messages[-1]["role"] == "user":
        example = world.example(render_conversation(messages[1:]))
        return original_response(rates, sample_index, example)
    raise OutsideTheWorld("the known transfer responder answers transfer's response, edit and "
                          f"degrade prompts (Appendix E 1, 4-6), not one beginning {user[:80]!r}")


# --- the judge (and restater, matcher) ----------------------------------------------------------

def judge_scores(model: str, sample_index: int, messages: list[dict[str, str]], n: int,
                 world: TransferWorld) -> str:
    """Prompt 11: every criterion scored 1/0, the truth with probability tpr / tnr."""
    tpr, tnr = judge_rates(model)
    user = _user(messages)
    before_response = user.rfind(_RESPONSE)
    rubric_at = user.rfind(_RUBRIC, 0, before_response)
    if not user.startswith(_CONVERSATION) or before_response < 0 or rubric_at < 0:
        raise OutsideTheWorld(f"the known transfer judge reads transfer's judge prompt "
                              f"(Appendix E 11), not one beginning {user[:80]!r}")
    example = world.example(user[len(_CONVERSATION):rubric_at])
    criteria = _labelled(user[rubric_at + len(_RUBRIC):before_response], "", "rubric")
    if len(criteria) != n:
        raise OutsideTheWorld(f"the judge prompt lists {len(criteria)} criteria, its format "
                              f"asks for {n}")
    example.check_criteria(criteria)
    stated = set(stated_lines(user[before_response + len(_RESPONSE):]))
    scores = {}
    for k, text in enumerate(criteria):
        truth = text in stated
        right = _draw([model, sample_index, messages, k]) < (tpr if truth else tnr)
        scores[str(k)] = int(truth if right else not truth)
    return json.dumps(scores)


def restater_answer(messages: list[dict[str, str]], world: TransferWorld) -> str:
    user = _user(messages)
    if not user.startswith(_RESTATE_OPENING):
        raise OutsideTheWorld(f"not transfer's restatement prompt: {user[:80]!r}")
    answer = {}
    for line in user[len(_RESTATE_OPENING):].split("\n"):
        match = _NUMBERED.match(line)
        if not match or match.group(2) not in world.negative:
            raise OutsideTheWorld(f"the known transfer world has no negative criterion "
                                  f"{line[:100]!r} to restate")
        answer[match.group(1)] = RESTATED_FORM.format(match.group(2))
    return json.dumps(answer, ensure_ascii=False)


def similarity_answer(messages: list[dict[str, str]], world: TransferWorld) -> str:
    """Prompt 7: 9 for a linked pair, 0 otherwise."""
    match = _SIMILARITY.match(_user(messages))
    if not match:
        raise OutsideTheWorld(f"not transfer's similarity prompt: {_user(messages)[:80]!r}")
    reference, generated = match.groups()
    if reference not in world.expert or linked_text(generated) not in world.expert \
            or not generated.startswith(GENERATED_FORM.format("")):
        raise OutsideTheWorld(f"the known transfer world has no expert criterion "
                              f"{reference[:80]!r} or generated criterion {generated[:80]!r}")
    return "9" if linked_text(generated) == reference else "0"


def matching_answer(messages: list[dict[str, str]], n: int, world: TransferWorld) -> str:
    """Prompts 8-10: a generated criterion measures the same thing as, and moves with, its
    linked expert criterion; it implies none."""
    framing = next((name for marker, name in _FRAMINGS.items() if marker in _system(messages)),
                   None)
    user = _user(messages)
    true_at, generated_at = user.rfind(_TRUE_RUBRIC), user.rfind(_GENERATED_RUBRIC)
    start = user.find("\n\n" + _CONVERSATION)
    if framing is None or not 0 <= start < true_at < generated_at:
        raise OutsideTheWorld(f"not one of transfer's matching prompts: {user[:80]!r}")
    example = world.example(user[start + 2 + len(_CONVERSATION):true_at])
    true = _labelled(user[true_at + len(_TRUE_RUBRIC):generated_at], "T", "true rubric")
    generated = _labelled(user[generated_at + len(_GENERATED_RUBRIC):].split("\n\n")[0], "G",
                          "generated rubric")
    if len(generated) != n:
        raise OutsideTheWorld(f"the matching prompt lists {len(generated)} generated criteria, "
                              f"its format asks for {n}")
    example.check_criteria(true, "expert")
    example.check_criteria(generated, "generated")
    indices = {}
    for i, text in enumerate(generated):
        linked = [f"T{j}" for j, t in enumerate(true) if t == linked_text(text)]
        indices[f"G{i}"] = [] if framing == "implies" else linked
    return json.dumps({"indices": indices})


# --- dispatch -----------------------------------------------------------------------------------

def transfer_answer(behaviour: str, model: str, sample_index: int, response_format: str,
                    messages: list[dict[str, str]], world: TransferWorld | None = None) -> str:
    """The answer of a fake/known-transfer-* model (known_truth.models dispatches here)."""
    world = current_world() if world is None else world
    if behaviour == TRANSFER_GENERATOR and response_format == "transfer_rubric":
        return generator_answer(messages, world)
    if behaviour == TRANSFER_RESPONDER and response_format == "transfer_response":
        return responder_answer(model, sample_index, messages, world)
    if behaviour == TRANSFER_JUDGE:
        scores, match = _SCORES.match(response_format), _MATCH.match(response_format)
        if scores:
            return judge_scores(model, sample_index, messages, int(scores.group(1)), world)
        if response_format == "transfer_restated":
            return restater_answer(messages, world)
        if response_format == "transfer_similarity":
            return similarity_answer(messages, world)
        if match:
            return matching_answer(messages, int(match.group(1)), world)
    raise OutsideTheWorld(f"fake/{behaviour} does not answer the format {response_format!r}")
