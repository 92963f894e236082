"""The light install, for real: a fresh venv, `pip install <this project>` without extras (from
the package index as pip is configured here), then the installed `rubriclab correct` on one
file of 0/1 verdicts with a partly filled label column prints the corrected rate, while
litellm and Snakemake are absent (issue 38, "A light install"). Long lane: the install takes a
minute or more."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[1]
# What the package is built from (pyproject.toml names README.md as its readme).
PACKAGE_FILES = ("pyproject.toml", "README.md", "LICENSE")
INSTALL_TIMEOUT_S = 900


def _run(argv: list, *, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def light_venv(tmp_path_factory) -> Path:
    """A venv holding `pip install .` of a copy of the package, no extras."""
    base = tmp_path_factory.mktemp("light")
    source = base / "source"
    source.mkdir()
    for name in PACKAGE_FILES:
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "src", source / "src",
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    venv = base / "venv"
    made = _run([sys.executable, "-m", "venv", venv], cwd=base)
    assert made.returncode == 0, made.stderr
    installed = _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", source],
                     cwd=base, timeout=INSTALL_TIMEOUT_S)
    assert installed.returncode == 0, f"pip install failed:\n{installed.stdout}\n{installed.stderr}"
    return venv


def _judged_file(folder: Path) -> tuple[Path, float]:
    """One long-format file: 0/1 verdicts on 300 items, the human column filled for 100; and
    the Rogan-Gladen corrected rate computed here from its counts."""
    rows = ["item_id,verdict,human"]
    judge_passes = tp = pos = tn = neg = 0
    for i in range(300):
        truth = i % 10 < 7  # 70% pass
        judge = truth if i % 13 else not truth  # the judge wrong on every 13th item
        judge_passes += judge
        human = ""
        if i < 100:
            human = str(int(truth))
            pos, tp = pos + truth, tp + (truth and judge)
            neg, tn = neg + (not truth), tn + (not truth and not judge)
        rows.append(f"item{i},{int(judge)},{human}")
    path = folder / "judged.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    q, tpr, tnr = judge_passes / 300, tp / pos, tn / neg
    return path, (q + tnr - 1) / (tpr + tnr - 1)


def test_the_light_install_runs_correct_on_one_file(light_venv, tmp_path):
    judged, expected = _judged_file(tmp_path)
    done = _run([light_venv / "bin" / "rubriclab", "correct", judged, "--coverage-check", "0"],
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = [l for l in done.stdout.splitlines() if "Rogan-Gladen corrected pass rate" in l]
    assert f"| {100 * expected:.1f}% " in line, (line, expected)


@pytest.mark.parametrize("module", ["litellm", "snakemake", "matplotlib", "yaml"])
def test_the_light_install_has_no_pipeline(light_venv, tmp_path, module):
    done = _run([light_venv / "bin" / "python", "-c", f"import {module}"], cwd=tmp_path)
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr, done.stderr


def test_the_light_install_names_the_extras_it_lacks(light_venv, tmp_path):
    cache = _run([light_venv / "bin" / "rubriclab", "cache", "stats"], cwd=tmp_path)
    assert cache.returncode == 2
    assert cache.stderr.strip().endswith("pip install 'rubriclab[pipeline]'"), cache.stderr
    parquet = tmp_path / "judged.parquet"
    parquet.write_bytes(b"PAR1")  # never read: pyarrow is missing before the file is opened
    read = _run([light_venv / "bin" / "rubriclab", "correct", parquet], cwd=tmp_path)
    assert read.returncode == 2
    assert read.stderr.strip().endswith("pip install 'rubriclab[parquet]'"), read.stderr
