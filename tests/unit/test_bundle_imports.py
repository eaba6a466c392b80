"""``bundle check`` names what the programs import that their runtime lacks, read from their source.

What a runtime provides is asked of its own environment here (``make runtimes``), never listed by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.bundle.imports import module_imports, program_imports
from benchgen.sandbox.runtimes import importable_modules, runtime_environment
from cli.main import main
from tests.codabench_bundles import SCORE_PY, write_bundle


def needs_runtime(name: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        not (Path(__file__).resolve().parents[2] / ".runtimes" / name / "bin" / "python").exists(),
        reason=f"the {name} runtime's environment is built by `make runtimes`",
    )


needs_scientific = needs_runtime("scientific")


def test_each_import_counts_as_its_top_level_name() -> None:
    source = (
        "import numpy as np\n"
        "import scipy.stats, jinja2\n"
        "from sklearn.metrics import f1_score\n"
        "def report():\n"
        "    from bs4 import BeautifulSoup\n"
    )

    assert module_imports(source) == {"numpy", "scipy", "jinja2", "sklearn", "bs4"}


def test_relative_imports_and_imports_the_program_copes_without_are_not_counted() -> None:
    source = (
        "from . import helpers\n"
        "try:\n"
        "    import ujson as json\n"
        "except ImportError:\n"
        "    import json\n"
        "try:\n"
        "    import pandas\n"
        "finally:\n"
        "    pass\n"
    )

    # pandas is counted: a try that does not catch ImportError does not guard it
    assert module_imports(source) == {"json", "pandas"}


def test_imports_after_the_program_changes_sys_path_are_the_submissions_and_not_counted() -> None:
    source = (
        "import numpy\nimport sys\nsys.path.insert(0, sys.argv[3])\nimport model\nfrom model import Model\n"
    )

    assert module_imports(source) == {"numpy", "sys"}


def test_the_standard_library_and_the_programs_own_modules_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "metrics.py").write_text("import rdkit.Chem\n", encoding="utf-8")
    (tmp_path / "score.py").write_text(
        "import os, json, collections.abc\nimport lib.metrics\nimport metrics\nimport jinja2\n",
        encoding="utf-8",
    )
    (tmp_path / "broken.py").write_text("def (:\n", encoding="utf-8")

    # a file that does not parse is left to its run to report
    assert program_imports(tmp_path) == {"jinja2": ["score.py"], "rdkit": ["lib/metrics.py"]}


@needs_scientific
def test_what_a_runtime_provides_is_read_from_its_environment() -> None:
    provided = importable_modules(runtime_environment("scientific"))

    # mpl_toolkits is a folder without __init__.py (a namespace package), which pkgutil does not list
    assert {
        "numpy",
        "scipy",
        "sklearn",
        "pandas",
        "matplotlib",
        "mpl_toolkits",
        "yaml",
        "os",
        "sys",
    } <= provided
    assert "jinja2" not in provided


@needs_scientific
def test_bundle_check_names_each_module_the_runtime_lacks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a scoring program rendering its report with jinja2, and an ingestion program importing rdkit
    score_py = "import jinja2\nimport numpy\n" + SCORE_PY
    bundle = write_bundle(tmp_path / "bundle", ingestion=True, score_py=score_py, runtime="scientific")
    ingestion = bundle / "ingestion_program" / "ingestion.py"
    ingestion.write_text("from rdkit import Chem\n" + ingestion.read_text(encoding="utf-8"), encoding="utf-8")

    code = main(["bundle", "check", str(bundle)])

    # then the check passes, warning of each, by program and file; numpy and yaml are there
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [line for line in out if " imports " in line] == [
        "warning: the ingestion program imports rdkit (ingestion.py), which runtime scientific does not "
        "provide",
        "warning: the scoring program imports jinja2 (score.py), which runtime scientific does not provide",
    ]


def test_bundle_check_says_the_imports_were_not_checked_when_the_runtime_is_not_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCHGEN_RUNTIMES", str(tmp_path / "no-runtimes"))
    bundle = write_bundle(tmp_path / "bundle", score_py="import jinja2\n" + SCORE_PY, runtime="scientific")

    code = main(["bundle", "check", str(bundle)])

    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[-1] == (
        "warning: the programs' imports were not checked against runtime scientific: the scientific runtime "
        f"has no environment at {tmp_path / 'no-runtimes' / 'scientific'}: create it with `make runtimes` "
        "(or point BENCHGEN_RUNTIMES at the folder that holds it)"
    )


@needs_runtime("legacy")
def test_bundle_check_says_how_a_v15_bundle_was_converted_and_that_nothing_is_missing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bundle = Path(__file__).resolve().parents[2] / "examples" / "codalab-v15" / "bundle"

    code = main(["bundle", "check", str(bundle)])

    # the ingestion program's `import model` follows its sys.path change: the submission's, not missing
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[1] == (
        "converted from CodaLab competition.yaml v1.5 as Codabench imports it: 2 phases (Development, "
        "Final), each a task of its own; leaderboard columns from leaderboard.columns (accuracy, errors); "
        "no competition_docker_image: Codabench's default image"
    )
    # the one warning is how the legacy runtime differs from that image: no module is missing
    assert [line[:80] for line in out[2:]] == [
        "warning: docker_image codalab/codalab-legacy:py37 runs in the legacy runtime, ap"
    ]
