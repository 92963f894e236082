"""The scripted `fake/known-*` models as one answerer: checks each model string's options and
dispatches each call to its world (carry's, transfer's, and the worlds of the works above that
register themselves here when imported, as verify's does)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from .authors import reviser_answer, reviser_probabilities, writer_answer
from .judge import judge_answer
from .transfer import check_options as check_transfer_options
from .transfer import transfer_answer
from .world import (
    AGENT, JUDGE, OPTIONS, REVISER, TRANSFER_BEHAVIOURS, WRITER, OutsideTheWorld,
    agent_pass_rate, current_world, judge_rates,
)


def check_options(behaviour: str, model: str, options: set[str]) -> None:
    unknown = options - OPTIONS[behaviour]
    if unknown:
        raise ValueError(f"fake model {model!r}: unknown option(s) {sorted(unknown)}; "
                         f"fake/{behaviour} takes {sorted(OPTIONS[behaviour])}")
    if behaviour == JUDGE:
        judge_rates(model)
    if behaviour == REVISER:
        reviser_probabilities(model)
    if behaviour == AGENT:
        agent_pass_rate(model)
    if behaviour in TRANSFER_BEHAVIOURS:
        check_transfer_options(behaviour, model)


# Worlds of the works above, registered by them when imported (verify's:
# rubriclab.verify.known_world, imported with rubriclab.verify), so that the scripted models answer
# their prompts without importing the works.
_WORLDS: dict[str, SimpleNamespace] = {}


def register_world(name: str, **answerers: Callable) -> None:
    _WORLDS[name] = SimpleNamespace(**answerers)


def registered_world(name: str, behaviour: str) -> SimpleNamespace:
    if name not in _WORLDS:
        raise OutsideTheWorld(f"fake/{behaviour} answers in {name}'s known-truth world, which "
                              f"registers itself when rubriclab.{name} is imported; this "
                              f"process has not imported it")
    return _WORLDS[name]


def known_answer(behaviour: str, model: str, sample_index: int, response_format: str,
                 messages: list[dict[str, str]]) -> str:
    """The answer of a `fake/known-*` model (rubriclab.llm.fake dispatches here, through
    the provider registry)."""
    if behaviour == AGENT:
        return registered_world("verify", behaviour).agent_answer(
            model, sample_index, response_format, messages)
    if behaviour == JUDGE:
        verify = _WORLDS.get("verify")
        if verify is not None and verify.is_reply_prompt(messages):
            return verify.reply_judge_answer(model, sample_index, response_format, messages)
        return judge_answer(model, sample_index, response_format, messages, current_world())
    if behaviour in TRANSFER_BEHAVIOURS:
        return transfer_answer(behaviour, model, sample_index, response_format, messages)
    if behaviour == WRITER:
        return writer_answer(response_format, messages)
    if behaviour == REVISER:
        return reviser_answer(model, sample_index, messages, current_world())
    raise ValueError(f"unknown known-truth model {behaviour!r}")
