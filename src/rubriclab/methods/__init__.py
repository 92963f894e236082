"""The three works' methods on your own judge and rubric, over plain pandas tables.

- `attribute`: which checks do the work: Shapley catch credit, false-fail blame, unique catches
  and fail counts per check, and the rubric's correct-passed and flawed-caught rates with
  intervals (carry, Section 6);
- `gate`: whether to accept a proposed revision of a rubric, change by change, under carry's
  gates R, P, S and S+P (carry, Section 7);
- `correct`: the judge's pass rate corrected for its errors (Rogan-Gladen, with the interval
  the coverage study recommends and its instability flags) and the prediction-powered
  estimate (verify);
- `transfer_q`: interventional transfer between generated and expert rubrics, the four Q
  metrics with paired bootstrap intervals (transfer, Equation 1).

Every function wraps the code the pipeline runs (rubriclab.carry, rubriclab.verify,
rubriclab.stats, rubriclab.transfer); `read_table` reads CSV, parquet, JSON lines or a Hugging
Face dataset. Malformed tables raise `InputError`, naming the column. The command line
(`rubriclab attribute`, `rubriclab gate`, `rubriclab correct`) runs the same functions; see
docs/api.md and docs/tutorial.md.
"""

from rubriclab.methods.attribution import AttributionResult, attribute
from rubriclab.methods.correction import CorrectionResult, correct, correct_counts
from rubriclab.methods.gates import GateResult, gate
from rubriclab.methods.tables import InputError, read_table
from rubriclab.methods.transfer import transfer_q

__all__ = [
    "AttributionResult", "CorrectionResult", "GateResult", "InputError", "attribute", "correct",
    "correct_counts", "gate", "read_table", "transfer_q",
]
