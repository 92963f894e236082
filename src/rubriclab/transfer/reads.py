"""Which rubrics each response is judged on: exactly the verdicts rubriclab.transfer.analysis
looks up, so that no judge call is paid for that no figure or table reads.

By the kind of response (docs/replication.md, "transfer: what is judged, and which edits are made"):

    physician                        every rubric (GenRubric-style correlation on physician
                                     responses and discrimination, each generator vs. expert)
    original, panel or IT model      every rubric (panel correlation; the IT metrics' "before";
                                     the whole-rubric edits show the judged split of each rubric)
    original, degradation model only expert (Table A.5's drop)
    degraded, the degrader           every rubric (discrimination, Figure 4)
    degraded, other models           expert (Table A.5)
    rubric_edit targeting expert     every generated rubric (Q(C* -> Cg))
    rubric_edit targeting a generator  expert (Q(Cg -> C*))
    criterion_edit targeting expert  every rubric (Figure 6: expert -> each generator, and
                                     within expert)
    criterion_edit targeting g       expert and g (Figure 6: g -> expert, within g)

Figure 6 and Table A.9 read single-criterion edits of the main response model only; other
models get them only when transfer.criterion_edit_models names them, and are then judged on the
same rubrics (for the user's own use: no figure or table reads them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rubriclab.transfer.ids import EXPERT, original_id


@dataclass(frozen=True)
class AnalysisReads:
    """The roles the analysis gives models (transfer_analyse's params), which fix what it reads."""

    generators: tuple[str, ...]
    main_response_model: str
    it_response_models: tuple[str, ...]
    panel: tuple[str, ...]                # responder ids "model|sample" of every panel
    degrader: str
    degradation_models: tuple[str, ...]

    @classmethod
    def from_config(cls, *, generators: Sequence[str], main_response_model: str,
                    it_response_models: Sequence[str], panels: Mapping[str, Sequence[str]],
                    degrader: str, degradation_models: Sequence[str]) -> AnalysisReads:
        """From the values transfer_analyse is given (panels: name -> responder ids)."""
        panel = tuple(dict.fromkeys(r for members in panels.values() for r in members))
        return cls(tuple(generators), main_response_model, tuple(it_response_models), panel,
                   degrader, tuple(degradation_models))

    @property
    def every_rubric(self) -> tuple[str, ...]:
        return (EXPERT, *self.generators)

    def rubrics(self, response: Any) -> tuple[str, ...]:
        """The rubrics `response` (a responses-table row) is read on; an error for a response
        no analysis reads (a table the workflow should not have made)."""
        kind, model = response.kind, response.model
        where = f"response {response.response_id!r}"
        if kind == "physician":
            return self.every_rubric
        if kind == "original":
            sample = str(response.response_id).rsplit("|", 1)[-1]
            if not sample.isdigit() or original_id(response.example_id, model,
                                                   int(sample)) != response.response_id:
                raise ValueError(f"{where}: not an original response id")
            responder = f"{model}|{sample}"
            if responder in self.panel or (sample == "0" and model in self.it_response_models):
                return self.every_rubric
            if sample == "0" and model in self.degradation_models:
                return (EXPERT,)
            raise ValueError(f"{where}: its responder {responder!r} is in no panel, IT model or "
                             "degradation model, so no analysis reads it")
        if kind == "degraded":
            if model == self.degrader:
                return self.every_rubric
            if model in self.degradation_models:
                return (EXPERT,)
            raise ValueError(f"{where}: {model!r} is neither the degrader nor a degradation "
                             "model, so no analysis reads it")
        if kind in ("rubric_edit", "criterion_edit"):
            target = response.target_rubric
            if target not in self.every_rubric:
                raise ValueError(f"{where}: target rubric {target!r} is neither {EXPERT!r} nor "
                                 f"a generator {list(self.generators)}")
            if kind == "rubric_edit":
                if model not in self.it_response_models:
                    raise ValueError(f"{where}: {model!r} is not an IT response model, so no "
                                     "analysis reads its edits")
                return self.generators if target == EXPERT else (EXPERT,)
            return self.every_rubric if target == EXPERT else (EXPERT, target)
        raise ValueError(f"{where}: unknown kind {kind!r}")


def criterion_edit_models(configured: Sequence[str] | None, response_model: str,
                          it_response_models: Sequence[str]) -> list[str]:
    """transfer.criterion_edit_models resolved: null is [response_model]; a list must hold
    response_model (Figure 6 and Table A.9 read its edits) and only IT response models (the
    only ones that get interventions)."""
    models = list(configured) if configured else [response_model]
    if response_model not in models:
        raise ValueError("config key 'transfer.criterion_edit_models' must include "
                         f"transfer.response_model ({response_model!r}): Figure 6 and Table A.9 "
                         "read its single-criterion edits")
    outside = [m for m in models if m not in it_response_models]
    if outside:
        raise ValueError(f"config key 'transfer.criterion_edit_models': {outside} are not in "
                         "transfer.it_response_models (only those get interventions)")
    return models
