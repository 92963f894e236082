"""verify: "Verifiers First, Rubrics Second".

The refund worked example as a world with a state verifier, scripted trajectories and an agent
loop (`refund`), the four-criterion reply rubric (`reply_rubric`), and judge calibration
against human labels with the Rogan-Gladen corrected pass rate (`calibration`).
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .calibration import (
        POST_CONFUSION,
        POST_JUDGED,
        Confusion,
        CorrectedRate,
        RGResult,
        confusion_from_verdicts,
        corrected_pass_rate,
        rogan_gladen,
        wilson_interval,
    )
from .refund import (
    POLICY,
    SCRIPTED_TRAJECTORIES,
    TICKET,
    Check,
    RefundWorld,
    ScriptedTrajectory,
    ToolCall,
    Trial,
    VerifierResult,
    replay,
    run_agent_trial,
    verify,
)
from .reply_rubric import RUBRIC_CRITERIA, Criterion, ReplyGrade, grade_reply, rubric_messages

from . import known_world  # noqa: F401  (registers verify's known-truth world with the model layer)

__all__ = [
    "Check", "Confusion", "CorrectedRate", "Criterion", "POLICY", "POST_CONFUSION",
    "POST_JUDGED", "RGResult", "RUBRIC_CRITERIA", "RefundWorld", "ReplyGrade",
    "SCRIPTED_TRAJECTORIES", "ScriptedTrajectory", "TICKET", "ToolCall", "Trial",
    "VerifierResult", "confusion_from_verdicts", "corrected_pass_rate", "grade_reply",
    "replay", "rogan_gladen", "rubric_messages", "run_agent_trial", "verify",
    "wilson_interval",
]

# calibration imports scipy.stats (about half a second): it is loaded on first use of one of its
# names here, so that a process that only reads verify's answer formats (the model layer finds
# them through the entry point rubriclab.verify.formats, which imports this package) or its
# known-truth world does not pay for it.
_CALIBRATION = ("POST_CONFUSION", "POST_JUDGED", "Confusion", "CorrectedRate", "RGResult",
                "confusion_from_verdicts", "corrected_pass_rate", "rogan_gladen",
                "wilson_interval")


def __getattr__(name: str):
    if name in _CALIBRATION:
        from . import calibration

        return getattr(calibration, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
