"""The methods' commands load no part of the pipeline: `rubriclab correct` (and --help) imports
neither the model layer's litellm nor Snakemake nor matplotlib, so that it runs in the light
install (`pip install rubriclab`, no extras) and starts fast; the pipeline's commands, run
without their extra, say in one line what to install. tests/test_light_install.py checks the
same in a real venv (long lane)."""

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tutorial"
PIPELINE_ONLY = ("litellm", "snakemake", "matplotlib")
# What `--help` has no use for at all: printing a usage line loads no data library.
HELP_NEEDS_NONE_OF = PIPELINE_ONLY + ("scipy", "pandas", "numpy", "yaml", "psutil")

# Runs rubriclab.cli.main on argv in a fresh interpreter and prints its exit status and the
# top-level packages it had imported by then, as JSON.
PROBE = """
import json, sys
from rubriclab.cli import main
argv = json.loads(sys.argv[1])
try:
    code = main(argv)
except SystemExit as exit_:
    code = exit_.code
print(json.dumps({"code": code, "modules": sorted({m.partition(".")[0] for m in sys.modules})}))
"""


def _probe(argv: list[str], cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("command", ["correct", "attribute", "gate"])
def test_help_of_the_methods_loads_no_pipeline_and_no_data_library(command, tmp_path):
    probe = _probe([command, "--help"], tmp_path)
    assert probe["code"] == 0
    loaded = set(probe["modules"]) & set(HELP_NEEDS_NONE_OF)
    assert not loaded, f"`rubriclab {command} --help` imported {sorted(loaded)}"


def test_correct_on_a_file_loads_no_pipeline(tmp_path):
    judged = tmp_path / "judged.csv"
    rows = ["item_id,verdict,human"] + [
        f"i{i},{i % 3 != 0:d},{'' if i >= 30 else int(i % 4 != 0)}" for i in range(90)]
    judged.write_text("\n".join(rows) + "\n", encoding="utf-8")
    probe = _probe(["correct", str(judged), "--coverage-check", "0"], tmp_path)
    assert probe["code"] == 0
    assert "scipy" in probe["modules"]  # the probe sees what the command ran with
    loaded = set(probe["modules"]) & set(PIPELINE_ONLY + ("yaml", "psutil"))
    assert not loaded, f"`rubriclab correct` imported {sorted(loaded)}"


def test_attribute_and_gate_load_no_pipeline(tmp_path):
    attribute = _probe(["attribute", str(EXAMPLES / "verdicts.csv"),
                        str(EXAMPLES / "labels.csv")], tmp_path)
    gate = _probe(["gate", str(EXAMPLES / "revision.csv"), str(EXAMPLES / "verdicts.csv"),
                   str(EXAMPLES / "labels.csv"), "--proposed", str(EXAMPLES / "proposed.csv")],
                  tmp_path)
    for name, probe in (("attribute", attribute), ("gate", gate)):
        assert probe["code"] == 0, name
        loaded = set(probe["modules"]) & set(PIPELINE_ONLY + ("yaml", "psutil"))
        assert not loaded, f"`rubriclab {name}` imported {sorted(loaded)}"


# The pipeline's packages made unimportable, as in the light install.
WITHOUT_PIPELINE = """
import importlib.abc, json, sys
HIDDEN = {"litellm", "snakemake", "snakemake_interface_common", "psutil", "yaml",
          "cryptography", "psycopg", "matplotlib", "jsonschema"}
class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Hide())
from rubriclab.cli import main
sys.exit(main(json.loads(sys.argv[1])))
"""


@pytest.mark.parametrize("argv", [["cache", "stats"], ["cache", "keygen", "k"], ["plan"],
                                  ["preflight"]])
def test_a_pipeline_command_without_the_extra_names_it_in_one_line(argv, tmp_path):
    done = subprocess.run([sys.executable, "-c", WITHOUT_PIPELINE, json.dumps(argv)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"rubriclab {argv[0]}: needs the pipeline extra (")
    assert lines[0].endswith("pip install 'rubriclab[pipeline]'")


def test_the_lazy_packages_resolve_every_public_name():
    import rubriclab.llm
    import rubriclab.methods
    import rubriclab.stats

    for package in (rubriclab.methods, rubriclab.stats, rubriclab.llm):
        for name in package.__all__:
            # a submodule named like a public name would shadow it once imported
            value = getattr(package, name)
            assert not isinstance(value, ModuleType), f"{package.__name__}.{name} is a module"
        with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
            getattr(package, "nonesuch")
    assert set(rubriclab.methods._LAZY) == set(rubriclab.methods.__all__)
    assert set(rubriclab.llm._LAZY) == set(rubriclab.llm.__all__)
