"""docs/tutorial.md: every command on the page is run and prints what the page shows.

A ```console block holds one or more commands (a line "$ rubriclab ...") each followed by its
output, stdout then stderr; a command that exits non-zero ends with "[exit status N]". The
commands run in-process (rubriclab.cli.main) from a copy of the repository's examples/, so that
their --out files land in a temporary folder. A ```text block shows the head of one of the
tutorial's example files.
"""

import contextlib
import io
import re
import shlex
import shutil
from pathlib import Path

import pytest

from rubriclab.cli import main

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "tutorial.md"
BLOCK = re.compile(r"^```(console|text)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def blocks(kind: str) -> list[str]:
    return [body for found, body in BLOCK.findall(PAGE.read_text()) if found == kind]


def commands() -> list[tuple[str, str]]:
    """(command, expected output) pairs of every console block."""
    pairs = []
    for body in blocks("console"):
        parts = re.split(r"^\$ ", body, flags=re.MULTILINE)
        assert parts[0] == "", f"a console block must start with a command:\n{body}"
        for part in parts[1:]:
            command, _, output = part.partition("\n")
            pairs.append((command, output))
    return pairs


def test_the_page_has_the_commands_the_tutorial_promises():
    names = [shlex.split(command)[1] for command, _ in commands()]
    assert {"attribute", "gate", "correct", "labels-needed", "agreement"} <= set(names)
    assert len(names) >= 5


def test_the_page_runs_the_one_file_form_of_every_command_that_takes_labels():
    """correct, labels-needed and agreement each run once on one file with a label column."""
    one_file = set()
    for command, _ in commands():
        argv = shlex.split(command)
        files = [a for i, a in enumerate(argv[2:], 2)
                 if not a.startswith("-") and not argv[i - 1].startswith("--")]
        if files == ["examples/tutorial/one_file.csv"]:
            one_file.add(argv[1])
    assert one_file == {"correct", "labels-needed", "agreement"}


@pytest.mark.parametrize("command, expected", commands(), ids=lambda v: v[:60])
def test_each_command_prints_what_the_page_shows(command, expected, tmp_path, monkeypatch):
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(command)
    assert argv[0] == "rubriclab"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(argv[1:])
    shown = stdout.getvalue() + stderr.getvalue()
    if code:
        shown += f"[exit status {code}]\n"
    assert shown == expected
    for flag in ("--out", "--rates-out", "--rubrics-out"):
        if flag in argv:
            assert (tmp_path / argv[argv.index(flag) + 1]).stat().st_size > 0


@pytest.mark.parametrize("shown", blocks("text"), ids=lambda v: v.split("\n")[0][:40])
def test_each_file_excerpt_is_the_head_of_an_example_file(shown):
    files = sorted((REPO / "examples" / "tutorial").glob("*.csv"))
    assert any(path.read_text().startswith(shown) for path in files), shown
