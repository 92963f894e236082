"""verify: "Verifiers First, Rubrics Second".

The refund worked example as a world with a state verifier, scripted trajectories and an agent
loop (`refund`), the four-criterion reply rubric (`reply_rubric`), and judge calibration
against human labels with the Rogan-Gladen corrected pass rate (`calibration`).
"""

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
