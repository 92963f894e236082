"""tests/structure.py: src/ keeps its shape (no import circle, no import of a higher floor, no long
file, no provider prefix outside the registry), and the check says no to trees that do not."""

from pathlib import Path

import pytest

from tests import structure

SRC = Path(__file__).resolve().parents[1] / "src"


def test_src_keeps_its_shape():
    found = structure.findings(SRC)
    assert not found, "tests/structure.py found:\n" + "\n".join(found)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "rubriclab" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_a_sound_tree_has_no_findings(tmp_path):
    root = write(tmp_path, {
        "__init__.py": '"""face"""\n',
        "files.py": "import os\n",
        "config.py": "from rubriclab.files import os\n",
        "llm/__init__.py": "from .client import call\n",
        "llm/client.py": "from rubriclab import config\n\ndef call():\n    return config\n",
        "cli.py": "from typing import TYPE_CHECKING\nfrom rubriclab.llm import call\n"
                  "if TYPE_CHECKING:\n    from rubriclab import cli\n",
    })
    assert structure.findings(root) == []


def test_a_circle_is_found_with_where_each_import_is(tmp_path):
    root = write(tmp_path, {
        "__init__.py": "",
        "llm/__init__.py": "",
        "llm/cache.py": "from . import ledger\n",
        # A function-level import closes the circle as surely as one at the top.
        "llm/ledger.py": "def f():\n    from rubriclab.llm.cache import get\n    return get\n",
    })
    found = structure.findings(root)
    assert len(found) == 1, found
    assert found[0].startswith("import circle between modules: "
                               "rubriclab.llm.cache -> rubriclab.llm.ledger -> rubriclab.llm.cache")
    assert f"{tmp_path.name}/rubriclab/llm/ledger.py:2: rubriclab.llm.ledger imports " \
           "rubriclab.llm.cache" in found[0]
    assert f"{tmp_path.name}/rubriclab/llm/cache.py:1: " in found[0]


def test_a_circle_through_type_checking_imports_only_is_not_one(tmp_path):
    root = write(tmp_path, {
        "__init__.py": "",
        "files.py": "import typing\nif typing.TYPE_CHECKING:\n    from rubriclab.config import X\n",
        "config.py": "from rubriclab import files\n",
    })
    assert structure.findings(root) == []


def test_an_import_of_a_higher_floor_is_found(tmp_path):
    root = write(tmp_path, {
        "__init__.py": "",
        "cli.py": "",
        "llm/__init__.py": "",
        "llm/client.py": "import importlib\nmod = importlib.import_module('rubriclab.cli')\n",
    })
    found = structure.findings(root)
    assert found == [f"{tmp_path.name}/rubriclab/llm/client.py:2: rubriclab.llm.client (floor 2, "
                     "llm) imports rubriclab.cli (floor 7, cli), a higher floor"]


def test_a_circle_between_packages_of_one_floor_is_found(tmp_path):
    root = write(tmp_path, {
        "__init__.py": "",
        "carry/__init__.py": "",
        "carry/a.py": "from rubriclab.transfer import b\n",
        "transfer/__init__.py": "",
        "transfer/b.py": "",
        "transfer/c.py": "from rubriclab.carry import d\n",
        "carry/d.py": "",
    })
    found = structure.findings(root)
    assert len(found) == 1, found
    assert found[0].startswith("import circle between rubriclab's packages: "
                               "rubriclab.carry -> rubriclab.transfer -> rubriclab.carry")


def test_a_long_file_an_unplaced_module_and_a_provider_prefix_are_found(tmp_path):
    root = write(tmp_path, {
        "__init__.py": "",
        "files.py": "x = 1\n" * 601,
        "newthing.py": "",
        "sizing.py": 'LOCAL = ("local/",)\n\ndef f(m):\n    return m.startswith(("fake/", "x"))\n',
        "plan/__init__.py": "from rubriclab.sizing import LOCAL as L\n\n"
                            "def g(m):\n    return m.startswith(L)\n",
        "llm/__init__.py": "",
        "llm/providers.py": 'def f(m):\n    return m.startswith("fake/")\n',
    })
    name = tmp_path.name
    assert structure.findings(root) == [
        f"rubriclab.newthing ({name}/rubriclab/newthing.py) is on no floor: give it one in LAYERS "
        "(tests/structure.py)",
        f"{name}/rubriclab/files.py: 601 lines, over 600",
        f"{name}/rubriclab/plan/__init__.py:4: startswith('local/') chooses a provider by its prefix "
        "outside the provider registry (rubriclab/llm/providers.py)",
        f"{name}/rubriclab/sizing.py:4: startswith('fake/') chooses a provider by its prefix "
        "outside the provider registry (rubriclab/llm/providers.py)",
    ]


def test_the_command_fails_on_a_bad_tree_and_names_what(tmp_path, capsys):
    root = write(tmp_path, {"__init__.py": "", "files.py": "from rubriclab import cli\n",
                            "cli.py": "from rubriclab import files\n"})
    assert structure.main([str(root)]) == 1
    out = capsys.readouterr()
    assert "rubriclab.files (floor 1, files) imports rubriclab.cli (floor 7, cli)" in out.out
    assert "import circle between modules: rubriclab.cli -> rubriclab.files -> rubriclab.cli" \
        in out.out
    assert "finding(s)" in out.err


def test_a_tree_without_the_package_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no package rubriclab"):
        structure.findings(tmp_path)
