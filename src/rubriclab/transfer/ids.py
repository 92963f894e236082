"""Response ids and the expert rubric's name: the one place they are spelled (the pipeline
writes responses under them, the analysis and rubriclab.transfer.reads look them up by them).
No heavy imports: the workflow reads rubriclab.transfer.reads when it is parsed."""

EXPERT = "expert"


def original_id(example_id: str, model: str, sample: int = 0) -> str:
    return f"{example_id}|original|{model}|{sample}"


def physician_id(example_id: str) -> str:
    return f"{example_id}|physician"


def degraded_id(example_id: str, model: str) -> str:
    return f"{example_id}|degraded|{model}"


def intervention_id(example_id: str, kind: str, model: str, target: str, index: int,
                    direction: str) -> str:
    """kind "rubric_edit" (index -1) or "criterion_edit"; direction "+" or "-"."""
    return f"{example_id}|{kind}|{model}|{target}|{index}|{direction}"
