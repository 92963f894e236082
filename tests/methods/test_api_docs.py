"""docs/api.md: every ```python block runs, and prints what its "# " comment lines show.

Blocks run in order in one namespace, from the repository root. A block's expected output is
its lines that start with "# " (the prefix dropped); "..." in them stands for any text.
"""

import contextlib
import io
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "api.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", PAGE.read_text(), re.MULTILINE | re.DOTALL)


def expected_pattern(block: str) -> re.Pattern:
    lines = [line[2:] if line.startswith("# ") else "" for line in block.splitlines()
             if line.startswith("#")]
    return re.compile("\n".join(re.escape(line).replace(re.escape("..."), ".*")
                                for line in lines) + ("\n" if lines else ""))


def test_every_public_function_is_documented():
    import rubriclab.methods as methods

    text = PAGE.read_text()
    for name in methods.__all__:
        if not name.endswith("Result"):
            assert f"## `{name}" in text, name


def test_each_example_prints_what_the_page_shows(monkeypatch):
    monkeypatch.chdir(REPO)
    namespace: dict = {}
    assert len(BLOCKS) >= 7
    for block in BLOCKS:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block, str(PAGE), "exec"), namespace)  # noqa: S102 - the page's code
        pattern = expected_pattern(block)
        if not pattern.fullmatch(printed.getvalue()):
            pytest.fail(f"docs/api.md block printed\n{printed.getvalue()}\nexpected\n"
                        f"{pattern.pattern}\nblock:\n{block}")
