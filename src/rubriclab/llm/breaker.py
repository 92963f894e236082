"""The client's circuit breaker: stop asking a model whose requests keep failing the same way
(or fail in a way no request to it escapes), or whose answers keep coming back unusable."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from . import redact
from .failures import Answered
from .request import Completion
from .settings import LLMConfig, ModelSettings

log = logging.getLogger("rubriclab.llm")


@dataclass
class Usability:
    """One model's answers in one client's life (one job): how many, how many unusable, the
    current run of unusable ones, the last unusable one, and why the model was stopped."""

    answers: int = 0
    unusable: int = 0
    in_a_row: int = 0
    example: Completion | None = None
    stop: str | None = None

    def describe(self) -> str:
        share = self.unusable / self.answers if self.answers else 0.0
        text = f"{self.unusable} of {self.answers} answers unusable ({share:.0%})"
        if self.example is not None:
            shown = self.example.text[:200] if self.example.text else "(no text)"
            text += f"; e.g. {shown!r}: {self.example.error}"
        return text


class Breaker:
    """The LLMClient's stage that notes each outcome and stops asking a model (`_stops`:
    model -> why) once it should be. Mixed into LLMClient, whose state it reads."""

    config: LLMConfig
    _stops: dict[str, str]  # model -> why the last batch stopped asking it
    _usability: dict[str, Usability]  # by model, this job
    _model_fatal: set[str]  # keys whose failure no request to its model escapes

    def _note_outcome(self, answered: Answered, settings: ModelSettings,
                      streaks: dict[str, tuple[str, int]]) -> None:
        """Stop asking a model whose requests fail in a way no other request escapes, or fail
        the same way `max_consecutive_failures` times in a row."""
        completion, failure = answered.completion, answered.failure
        model = completion.request.model
        if failure is None:
            streaks[model] = ("", 0)
            return
        kind = failure.kind
        if not failure.attempted or model in self._stops:
            return
        last_kind, count = streaks.get(model, ("", 0))
        count = count + 1 if kind == last_kind else 1
        streaks[model] = (kind, count)
        if completion.key in self._model_fatal:
            self._stops[model] = (f"stopped asking model {model!r} after {kind}, which no "
                                  f"request to it can get past: {completion.error}")
        elif count >= settings.max_consecutive_failures:
            self._stops[model] = (f"stopped asking model {model!r} after {count} requests in a "
                                  f"row failed with {kind} (last: {completion.error})")
        if model in self._stops:
            log.error("%s", self._stops[model])

    def _note_usability(self, completion: Completion) -> None:
        """Count an answer (cached or not; a failure is no answer) and stop asking its model
        once too many come back unusable: `max_unusable_in_a_row` in a row, or a share above
        `max_unusable_share` of at least `unusable_min_answers` answers."""
        if completion.outcome not in ("ok", "unparseable"):
            return
        model = completion.request.model
        settings = self.config.settings_for(model)
        seen = self._usability[model]
        seen.answers += 1
        if completion.outcome == "ok":
            seen.in_a_row = 0
        else:
            seen.unusable += 1
            seen.in_a_row += 1
            seen.example = completion
        if seen.stop is not None:
            return
        if seen.in_a_row >= settings.max_unusable_in_a_row:
            why = f"{seen.in_a_row} answers in a row were unusable (max_unusable_in_a_row)"
        elif (seen.answers >= settings.unusable_min_answers
              and seen.unusable / seen.answers > settings.max_unusable_share):
            why = (f"more than {settings.max_unusable_share:.0%} of its answers were unusable "
                   "(max_unusable_share)")
        else:
            return
        seen.stop = redact.redact(f"stopped asking model {model!r} after {why}: "
                                  f"{seen.describe()}")
        self._stops[model] = seen.stop
        log.error("%s", seen.stop)
