"""The three works' methods on your own judge and rubric, over plain pandas tables.

- `attribute`: which checks do the work: Shapley catch credit, false-fail blame, unique catches
  and fail counts per check, and the rubric's correct-passed and flawed-caught rates with
  intervals (carry, Section 6);
- `gate`: whether to accept a proposed revision of a rubric, change by change, under carry's
  gates R, P, S and S+P (carry, Section 7);
- `correct`: the judge's pass rate corrected for its errors (Rogan-Gladen, with the interval
  the coverage study recommends and its instability flags) and the prediction-powered
  estimate (verify);
- `labels_needed`: how many more labels of each class bring the corrected rate's interval to a
  target width (verify: "the next labels should go into the failing class");
- `agreement`: Cohen's kappa and Gwet's AC1 of judge and people, per check, with intervals;
- `transfer_q`: interventional transfer between generated and expert rubrics, the four Q
  metrics with paired bootstrap intervals (transfer, Equation 1).

Every function wraps the code the pipeline runs (rubriclab.carry, rubriclab.verify,
rubriclab.stats, rubriclab.transfer); `read_table` reads CSV, parquet, JSON lines or a Hugging
Face dataset. Malformed tables raise `InputError`, naming the column. The command line
(`rubriclab attribute`, `rubriclab gate`, `rubriclab correct`) runs the same functions; see
docs/api.md and docs/tutorial.md.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Each name is imported on first use (PEP 562), so that `rubriclab correct --help` and a
# program using one method load neither scipy nor the other methods. A new public name goes
# into both TYPE_CHECKING's imports (for mypy) and _LAZY (its module).
if TYPE_CHECKING:
    from rubriclab.methods.rater_agreement import AgreementResult, agreement
    from rubriclab.methods.attribution import AttributionResult, attribute
    from rubriclab.methods.correction import CorrectionResult, correct, correct_counts
    from rubriclab.methods.gates import GateResult, gate
    from rubriclab.methods.label_plan import (
        LabelsNeededResult, labels_needed, labels_needed_counts,
    )
    from rubriclab.methods.tables import InputError, read_table
    from rubriclab.methods.transfer import transfer_q

_LAZY = {
    "AgreementResult": "rater_agreement", "agreement": "rater_agreement",
    "AttributionResult": "attribution", "attribute": "attribution",
    "CorrectionResult": "correction", "correct": "correction", "correct_counts": "correction",
    "GateResult": "gates", "gate": "gates",
    "LabelsNeededResult": "label_plan", "labels_needed": "label_plan",
    "labels_needed_counts": "label_plan",
    "InputError": "tables", "read_table": "tables",
    "transfer_q": "transfer",
}

__all__ = [
    "AgreementResult", "AttributionResult", "CorrectionResult", "GateResult", "InputError",
    "LabelsNeededResult", "agreement", "attribute", "correct", "correct_counts", "gate",
    "labels_needed", "labels_needed_counts", "read_table", "transfer_q",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
