"""A version's judge calibration, judged like a run's answers: its labelled answers are a judging job.

Registration plans it (:func:`plan_calibration`: the judge reached through the publisher's connection, the
labelled answers with the person's verdicts cut into shards under
``calibrations/<environment_id>/<version>/`` as a judging pass's plan cuts a run's), records the version
with its calibration ``running`` and starts the CalibrationPipeline, which runs the judging pass's
JudgeShard step on each shard (over :func:`calibration_job`'s files, within the connection's in-flight
bounds) and then :func:`assemble` (the figures, recorded on the version: measured, or failed with the
reason). Each step reads the version again and goes on only while its calibration is running; a duplicate
start collides on the execution's name.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from benchgen.bucket_layout import calibration_execution_name, calibration_key
from benchgen.judging import JUDGE_NAME
from benchgen.ports.environments import CalibratedEnvironments, EnvironmentsReader
from benchgen.ports.executions import Starter
from benchgen.ports.storage import ObjectStorage
from benchgen.records.judge_calibration import CalibrationStatus, JudgeCalibration
from benchgen.records.runs import LiveModel
from benchgen.scoring import registry
from benchgen.scoring.calibration import CalibrationRequests, CalibrationSet, LabelledAnswer, figures
from benchgen.steps.judging import Judge, JudgingError, job_lines, write_job

START_NAME = "start.json"


def calibration_label(environment_id: str, version: str) -> str:
    """How the CalibrationPipeline names a version: ``<environment_id>/<version>``."""
    return f"{environment_id}/{version}"


def _version_of(label: str) -> tuple[str, str]:
    environment_id, _, version = label.partition("/")
    if not environment_id or not version:
        raise JudgingError(f"{label!r} names no environment version: expected <environment_id>/<version>")
    return environment_id, version


def _files(label: str) -> Callable[[str], str]:
    return functools.partial(calibration_key, *_version_of(label))


def plan_calibration(
    found: CalibrationSet,
    judge: LiveModel,
    *,
    environment_id: str,
    version: str,
    store: ObjectStorage,
    workdir: Path,
    shard_size: int,
) -> JudgeCalibration:
    """Write the working files of the judge's calibration on ``found``'s labelled answers (each line a
    case, the answer judged and the person's pass/fail per criterion) and what starts it; the version's
    calibration, running."""
    label = calibration_label(environment_id, version)
    lines = (
        {
            "case": msgspec.to_builtins(labelled.case),
            "answer": labelled.answer,
            "person": dict(labelled.person),
        }
        for labelled in found.answers
    )
    planned = write_job(
        _files(label),
        {"calibration": label},
        Judge(template=found.template, settings=found.settings, model=judge),
        lines,
        cases=len(found.answers),
        shard_size=shard_size,
        store=store,
        workdir=workdir,
    )
    start = workdir / START_NAME
    start.write_text(json.dumps({"calibration": label, "plan": planned}), encoding="utf-8")
    store.upload(start, _files(label)(START_NAME), content_type="application/json")
    return JudgeCalibration(
        connection=found.settings.connection,
        model_id=found.model_id,
        status=CalibrationStatus.RUNNING,
        answers=len(found.answers),
    )


def start_calibration(
    environment_id: str, version: str, *, store: ObjectStorage, starter: Starter, workdir: Path
) -> bool:
    """Start the version's planned calibration, once; ``False`` when it was started already."""
    path = store.download(calibration_key(environment_id, version, START_NAME), workdir / START_NAME)
    payload = json.loads(path.read_text(encoding="utf-8"))
    return starter.start_once(calibration_execution_name(environment_id, version), payload)


def calibration_job(label: str, *, environments: EnvironmentsReader) -> Callable[[str], str]:
    """Where the calibration of the version ``label`` names keeps its working files (the judging pass's
    JudgeShard step reads and writes them), while the calibration is running."""
    environment_id, version = _version_of(label)
    record = environments.get(environment_id, version)
    calibration = record.judge_calibration if record is not None else None
    if calibration is None or calibration.status is not CalibrationStatus.RUNNING:
        raise JudgingError(f"the judge calibration of {label} is no longer running: it stops here")
    return functools.partial(calibration_key, environment_id, version)


def assemble(
    label: str, shard_count: int, *, environments: CalibratedEnvironments, store: ObjectStorage, workdir: Path
) -> dict[str, Any]:
    """The figures of the judge's agreement with people from its records of the labelled answers,
    recorded on the version."""
    key = calibration_job(label, environments=environments)
    judge_path = store.download(key(JUDGE_NAME), workdir / JUDGE_NAME)
    judge = Judge.model_validate_json(judge_path.read_bytes())
    definition = registry.template(judge.template)
    calibrates = definition.asks
    if not isinstance(calibrates, CalibrationRequests):
        raise JudgingError(f"the judge of template {judge.template} cannot be calibrated")
    answers = [
        LabelledAnswer(
            msgspec.convert(line["case"], definition.case_type), line["answer"], dict(line["person"])
        )
        for line in job_lines(key, "cases", shard_count, store, workdir)
    ]
    records = list(job_lines(key, "judgments", shard_count, store, workdir))
    found = figures(
        answers, records, calibrates, connection=judge.settings.connection, model_id=judge.model.model_id
    )
    if not environments.record_calibration(*_version_of(label), found):
        raise JudgingError(f"the judge calibration of {label} stopped running while its figures were made")
    return {"calibration": label, "status": found.status.value, "answers": found.answers}


def record_calibration_failure(label: str, reason: str, *, environments: CalibratedEnvironments) -> None:
    """The CalibrationPipeline's caught failure: the running calibration fails for ``reason``; a finished
    one keeps its figures."""
    environment_id, version = _version_of(label)
    record = environments.get(environment_id, version)
    calibration = record.judge_calibration if record is not None else None
    if calibration is None:
        return
    failed = calibration.model_copy(update={"status": CalibrationStatus.FAILED, "reason": reason[:1000]})
    environments.record_calibration(environment_id, version, failed)
