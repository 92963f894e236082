"""The model layer's own layers (issue 22, item 8): settings a leaf, litellm's import below
pricing, token counting, backends and batches."""

import ast
from pathlib import Path

LLM = Path(__file__).resolve().parents[2] / "src" / "rubriclab" / "llm"


def imported(module: str) -> set[str]:
    """The rubriclab.llm modules a module imports, at any depth of its code."""
    found = set()
    for node in ast.walk(ast.parse((LLM / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.add(node.module or "")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rubriclab"):
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("rubriclab")}
    return found


def test_settings_is_a_leaf():
    assert imported("settings") <= {"providers"}  # the registry of model families, a leaf
    assert imported("providers") == set()


def test_litellm_is_imported_below_pricing_tokens_backends_and_batches():
    assert imported("litellm_import") == set()
    for module in ("pricing", "tokens", "prompt_cache"):
        assert "backends" not in imported(module), module
    for module in ("pricing", "tokens", "backends", "batch_api", "batch_openai", "batch_gemini"):
        assert "litellm_import" in imported(module), module

