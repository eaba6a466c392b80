"""The files a run writes stay the same, whatever the engine does to write them faster.

Each shipped example, and a few generated environments of a few thousand cases, is ingested, scored and
turned into a finetune artifact; every file's contents (each zip member's, not the zip's own bytes, whose
compression may change) is hashed and compared with ``tests/data/example_outputs.json``. A change meant
to alter an output regenerates that file with ``BENCHGEN_WRITE_EXAMPLE_OUTPUTS=1`` and says why in its
commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from benchgen.bundle.runtime import RUNTIMES
from benchgen.environment import open_environment
from benchgen.finetune.artifact import build_artifact
from benchgen.ingest import ingest
from benchgen.judging import JUDGMENTS_NAME
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunInfo
from benchgen.scoring import registry
from benchgen.scoring.engine import score_predictions
from benchgen.settings import RuntimeSettings
from examplegen import generate_environment
from tests.judged import judge_submission

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "tests" / "data" / "example_outputs.json"
WRITE = os.environ.get("BENCHGEN_WRITE_EXAMPLE_OUTPUTS") == "1"
# The examples submitted as one results file (the Codabench-style ones submit folders), but `code`, whose
# verdicts carry how long each case's tests ran.
SHIPPED = sorted(
    path.parent.parent.name
    for path in (ROOT / "examples").glob("*/submission/predictions.json*")
    if path.parent.parent.name != "code"
)
GENERATED = {"gsm8k-tr": 3000, "gsm8k-en": 2000, "qa": 1500, "routing": 1500}
# What depends on the machine rather than on the engine: ingest's own time, when the submission states
# none, and where the runtime's interpreter a scoring program ran with is, which its log's command names.
_ELAPSED = re.compile(rb'"execution_time": [0-9.e-]+')
_INTERPRETERS = [
    str(RuntimeSettings.from_environment().runtimes_folder / name / "bin" / "python").encode()
    for name in RUNTIMES
]


def _digest(data: bytes) -> str:
    data = _ELAPSED.sub(b'"execution_time": 0', data)
    for interpreter in _INTERPRETERS:
        data = data.replace(interpreter, b"python")
    return hashlib.sha256(data).hexdigest()


def _contents(out: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        name = path.relative_to(out).as_posix()
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as archive:
                for member in sorted(archive.namelist()):
                    found[f"{name}!{member}"] = _digest(archive.read(member))
        else:
            found[name] = _digest(path.read_bytes())
    return found


def _run(bundle: Path, submission: Path, work: Path) -> dict[str, str]:
    out = work / "out"
    env = open_environment(bundle, work / "environment")
    ingested = ingest(env, submission, out, workdir=work / "ingest")
    if env.template is not None and registry.template(env.template).asks is not None:
        # A judged example's answers are judged first, by the example's simulated judge, beside them.
        judge_submission(env, submission, ingested.prediction_output.parent / JUDGMENTS_NAME)
    scored = score_predictions(env, ingested.prediction_output, out, workdir=work / "score")
    run = RunInfo(
        run_id="golden",
        environment_id="golden",
        environment_version="1",
        model="golden-model",
        benchmark=env.spec.title,
        overall_score=scored.overall_score,
        finished_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    build_artifact(env, scored.files[RunOutput.SCORING_OUTPUT], out, run=run)
    return _contents(out)


def _submission(folder: Path) -> Path:
    return next(path for path in sorted(folder.iterdir()) if path.is_file())


def _outputs(tmp_path: Path, case: str) -> dict[str, str]:
    kind, name = case.split(":")
    if kind == "example":
        example = ROOT / "examples" / name
        return _run(example / "bundle", _submission(example / "submission"), tmp_path)
    made = generate_environment(name, tmp_path / "generated", cases=GENERATED[name], seed=20261201)
    return _run(made.bundle_dir, made.submission_path, tmp_path)


CASES = [f"example:{name}" for name in SHIPPED] + [f"generated:{name}" for name in GENERATED]


@pytest.mark.parametrize("case", CASES)
def test_a_run_writes_the_same_contents_as_before(case: str, tmp_path: Path) -> None:
    found = _outputs(tmp_path, case)
    assert found, "the run wrote no file"
    if WRITE:
        recorded = json.loads(EXPECTED.read_text()) if EXPECTED.exists() else {}
        recorded[case] = found
        EXPECTED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    expected = json.loads(EXPECTED.read_text())[case]
    changed = sorted(name for name in expected.keys() | found.keys() if expected.get(name) != found.get(name))
    assert not changed, f"{case}: these outputs changed: {', '.join(changed)}"
