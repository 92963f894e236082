"""rubriclab: reproducible replications of three works on checklist rubrics and LLM judges."""

__version__ = "0.1.0"
