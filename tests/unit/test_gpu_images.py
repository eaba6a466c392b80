"""A bundle naming a GPU image runs on the CPU, as a Codabench CPU worker runs it, and a program that needs
CUDA fails with that reason on the run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from tests.codabench_bundles import DOCKER_IMAGE, LABELS, results_folder, write_bundle

GPU_IMAGE = "codalab/codalab-legacy:gpu"
# A scorer that loads the CUDA driver library before scoring, as frameworks do on a GPU machine.
CUDA_SCORE_PY = """\
import ctypes
ctypes.CDLL("libcuda.so.1")
"""


def _gpu_bundle(root: Path, **programs: Any) -> Path:
    bundle = write_bundle(root, **programs)
    competition = bundle / "competition.yaml"
    text = competition.read_text(encoding="utf-8")
    competition.write_text(text.replace(f"docker_image: {DOCKER_IMAGE}", f"docker_image: {GPU_IMAGE}"))
    return bundle


def _score(bundle: Path, tmp_path: Path) -> tuple[int, dict[str, object]]:
    folder = results_folder(tmp_path / "results", [*LABELS[:4], "setosa"])
    out = tmp_path / "run"
    code = main(["score", "--bundle", str(bundle), "--submission", str(folder), "--out", str(out)])
    run: dict[str, object] = json.loads((out / "run.json").read_text(encoding="utf-8"))
    return code, run


def test_a_gpu_image_bundle_whose_programs_use_the_cpu_completes_saying_it_ran_on_the_cpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a Codabench bundle naming a GPU image, whose scorer needs no GPU
    bundle = _gpu_bundle(tmp_path / "bundle")

    # when a results submission with 4 of 5 labels right is scored
    code, run = _score(bundle, tmp_path)

    # then the run completes with 4/5 in the runtime nearest the image, and says that it ran on the CPU
    assert (code, run["status"]) == (0, "Completed")
    assert run["metrics"] == {"accuracy": 0.8, "duration": 0.0}
    assert run["runtime"] == f"legacy (mapped from docker_image {GPU_IMAGE})"
    warnings = [str(warning) for warning in run["warnings"]]  # type: ignore[attr-defined]
    assert warnings[0].startswith(f"docker_image {GPU_IMAGE} is a GPU image: its programs run on the CPU")
    assert "numbers can differ: numpy 1.18 -> 1.23" in warnings[1]


def test_a_scoring_program_that_needs_cuda_fails_the_run_saying_it_needs_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a GPU-image bundle whose scorer loads the CUDA driver, which a CPU machine does not have
    bundle = _gpu_bundle(tmp_path / "bundle", score_py=CUDA_SCORE_PY)

    # when it is scored
    code, run = _score(bundle, tmp_path)

    # then the run fails, and its reason first says that the scoring program needs a GPU
    assert (code, run["status"]) == (2, "Failed")
    reason = str(run["failure_reason"])
    assert reason.startswith("the scoring program needs a GPU: its error output names 'libcuda.so.1'")
    assert "the scoring program exited with code 1" in reason
    assert "OSError: libcuda.so.1" in reason


def test_an_ingestion_program_that_needs_cuda_says_it_needs_a_gpu(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # given a code-submission bundle whose ingestion program imports a module that exists only for CUDA
    bundle = _gpu_bundle(tmp_path / "bundle", ingestion=True, ingestion_py="import cupy\n")
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "metadata").write_text("description: a model\n", encoding="utf-8")
    (submission / "model.py").write_text("def predict(row):\n    return 'setosa'\n", encoding="utf-8")
    out = tmp_path / "run"

    # when it is scored
    code = main(["score", "--bundle", str(bundle), "--submission", str(submission), "--out", str(out)])

    # then the run fails, saying that the ingestion program needs a GPU
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))
    assert (code, run["status"]) == (2, "Failed")
    assert str(run["failure_reason"]).startswith(
        "the ingestion program needs a GPU: its error output names \"No module named 'cupy'\""
    )


def test_a_program_failing_for_another_reason_is_not_said_to_need_a_gpu(tmp_path: Path) -> None:
    bundle = _gpu_bundle(tmp_path / "bundle", score_py="raise SystemExit('no scores today')\n")

    code, run = _score(bundle, tmp_path)

    assert (code, run["status"]) == (2, "Failed")
    assert str(run["failure_reason"]).startswith("the scoring program exited with code 1")
    assert "GPU" not in str(run["failure_reason"])
