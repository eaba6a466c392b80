"""Registering an environment version when its bundle lands in the bucket."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from aws_lambda_powertools import Logger

from benchgen.admission import check_bundle
from benchgen.bucket_layout import BundleKey, ObjectKeyError, misplaced_bundle_slot, parse_bundle_key
from benchgen.bundle.spec import Phase, Task
from benchgen.environment import Environment, open_environment
from benchgen.errors import BenchGenError
from benchgen.ownership import OPERATOR, PUBLISHER_KEY, stamp_refusal
from benchgen.ports.connections import ConnectionsReader
from benchgen.ports.environments import EnvironmentsStore
from benchgen.ports.executions import Starter
from benchgen.ports.storage import ObjectStorage
from benchgen.providers.judges import JudgeUnreachable
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord, EnvironmentStatus
from benchgen.records.judge_calibration import CalibrationStatus, JudgeCalibration
from benchgen.scoring.calibration import CalibrationSet, calibration_set
from benchgen.steps.calibration import plan_calibration, start_calibration
from benchgen.steps.case_shards import cut_cases, shardable_tasks
from benchgen.steps.judging import reach_judge

logger = Logger(child=True)


def publisher_check(
    environment_id: str, stamp: Mapping[str, str], environments: EnvironmentsStore
) -> tuple[str, str | None]:
    """Who published the upload, and why they may not (``None`` when they may); see ``ownership``.

    An unstamped upload is an operator's; the first publisher of an environment id becomes its owner.
    """
    publisher = stamp.get(PUBLISHER_KEY)
    owner = environments.claim_owner(
        EnvironmentOwner(environment_id=environment_id, owner=publisher or OPERATOR)
    )
    if publisher is None:
        return OPERATOR, None
    return publisher, stamp_refusal(owner, stamp)


def register_environment(
    key: str,
    version_id: str | None,
    *,
    store: ObjectStorage,
    environments: EnvironmentsStore,
    workdir: Path,
    max_program_seconds: int | None = None,
    shard_cases: int | None = None,
    judges: Judges | None = None,
) -> EnvironmentRecord:
    """Validate the uploaded bundle and record the version, once.

    A version is immutable: a second upload to the same key (the bucket keeps both object versions) does
    not replace what was registered; the record keeps pointing at the object version it validated. Only
    the environment's publishers publish: anyone else's upload is recorded as rejected, with the reason.
    A key laid out wrongly is recorded as a rejected environment saying how to lay it out. Given
    ``shard_cases``, the cases of every task a run may score in shards are cut into shards of that many
    (see :mod:`benchgen.steps.case_shards`) before the version is recorded. When its template asks a judge,
    the version is recorded with the judge's calibration running, and ``judges``' CalibrationPipeline
    started, once, to measure its agreement with the human-labelled answers (:func:`judge_calibration`):
    a judge that cannot be reached leaves it failed, the version registered.
    """
    try:
        bundle_key = parse_bundle_key(key)
    except ObjectKeyError as error:
        return _reject_misplaced(key, version_id, error, environments)
    existing = environments.get(bundle_key.environment_id, bundle_key.version)
    if existing is not None:
        # A delivery after the one that recorded it may be the retry of one that died before the start.
        _start_running_calibration(existing, judges, store, workdir)
        if existing.bundle_version_id != version_id:
            logger.warning(
                "version already registered; the new upload is kept in the bucket but not used",
                extra={"environment_id": bundle_key.environment_id, "version": bundle_key.version},
            )
        return existing

    publisher, refused = publisher_check(
        bundle_key.environment_id, store.metadata(key, version_id=version_id), environments
    )
    local = workdir / "bundle.zip"
    # A refused publisher's bundle is never opened: the reason is the version's only problem.
    problems = (
        [refused]
        if refused
        else check_bundle(
            store.download(key, local, version_id=version_id), max_program_seconds=max_program_seconds
        )
    )
    record = EnvironmentRecord(
        environment_id=bundle_key.environment_id,
        version=bundle_key.version,
        status=EnvironmentStatus.REJECTED if problems else EnvironmentStatus.REGISTERED,
        bundle_key=key,
        bundle_version_id=version_id,
        problems=problems,
        published_by=publisher,
    )
    if not problems:
        try:
            env = open_environment(local, workdir / "bundle")
        except BenchGenError as error:
            # model_validate, not model_copy: the record's bounds apply to what is stored
            record = EnvironmentRecord.model_validate(
                record.model_dump() | {"status": EnvironmentStatus.REJECTED, "problems": [str(error)]}
            )
        else:
            record = EnvironmentRecord.model_validate(
                record.model_dump()
                | {
                    "title": env.spec.title,
                    "template": str(env.template) if env.template else None,
                    "has_finetune": env.spec.finetune is not None,
                    "columns": [column.model_dump() for column in env.spec.columns],
                    "phases": [_phase(phase, env.spec.tasks) for phase in env.spec.phases],
                    "criteria": [criterion.id for criterion in env.spec.criteria],
                    "docker_image": env.spec.docker_image,
                    "runtime": env.runtime.describe(),
                    "converted": env.spec.conversion.describe() if env.spec.conversion else None,
                    "warnings": list(env.runtime.warnings),
                    "case_shards": _case_shards(env, bundle_key, shard_cases, store, workdir / "shards"),
                    "judge_calibration": judge_calibration(
                        env, bundle_key, publisher, judges, store, workdir / "calibration"
                    ),
                }
            )
    if not environments.put_if_absent(record):
        # Another delivery of the same event won the race: its record stands, and it starts the rest.
        stored = environments.get(bundle_key.environment_id, bundle_key.version)
        return stored if stored is not None else record
    logger.info("environment recorded", extra={"status": record.status, "problems": len(record.problems)})
    _start_running_calibration(record, judges, store, workdir)
    return record


@dataclass(frozen=True)
class Judges:
    """How registration has an environment's judge calibrated: the connections it may name (the
    publisher's own), the CalibrationPipeline that judges the labelled answers, and how many a shard
    holds at most."""

    connections: ConnectionsReader
    starter: Starter
    shard_size: int


def judge_calibration(
    env: Environment,
    bundle_key: BundleKey,
    publisher: str,
    judges: Judges | None,
    store: ObjectStorage,
    workdir: Path,
) -> JudgeCalibration | None:
    """The calibration of ``env``'s judge as the version is recorded with it: running, its labelled answers
    planned for the CalibrationPipeline (the judge reached through the publisher's connection that its
    ``judge:`` section names); uncalibrated without labelled answers, failed when they or the judge cannot
    be read or reached; None when its template asks no judge."""
    found = calibration_set(env)
    if not isinstance(found, CalibrationSet):
        return found
    if judges is None:
        return found.failed("no connection can be reached where this bundle is registered")
    try:
        live = reach_judge(found.settings, publisher, judges.connections, found.model_id)
    except JudgeUnreachable as error:
        return found.failed(str(error))
    workdir.mkdir(parents=True, exist_ok=True)
    return plan_calibration(
        found,
        live,
        environment_id=bundle_key.environment_id,
        version=bundle_key.version,
        store=store,
        workdir=workdir,
        shard_size=judges.shard_size,
    )


def _start_running_calibration(
    record: EnvironmentRecord, judges: Judges | None, store: ObjectStorage, workdir: Path
) -> None:
    calibration = record.judge_calibration
    if judges is None or calibration is None or calibration.status is not CalibrationStatus.RUNNING:
        return
    started = start_calibration(
        record.environment_id, record.version, store=store, starter=judges.starter, workdir=workdir
    )
    logger.info("judge calibration started" if started else "judge calibration already started")


def _phase(phase: Phase, tasks: list[Task]) -> dict[str, object]:
    """A phase as the console lists it: its index, name and the tasks it runs, by index and name."""
    names = {task.index: task.name for task in tasks}
    return {
        "index": phase.index,
        "name": phase.name,
        "tasks": [{"index": index, "name": names.get(index, "")} for index in phase.tasks],
    }


def _case_shards(
    env: Environment, bundle_key: BundleKey, size: int | None, store: ObjectStorage, workdir: Path
) -> list[dict[str, int]]:
    if size is None:
        return []
    plans = (
        cut_cases(
            view,
            environment_id=bundle_key.environment_id,
            version=bundle_key.version,
            size=size,
            store=store,
            workdir=workdir,
        )
        for view in shardable_tasks(env).values()
    )
    return [plan.model_dump() for plan in plans]


def _reject_misplaced(
    key: str, version_id: str | None, error: ObjectKeyError, environments: EnvironmentsStore
) -> EnvironmentRecord:
    logger.warning("bundle uploaded to a key laid out wrongly", extra={"key": key})
    record, _ = reject_version(misplaced_bundle_slot(key), key, version_id, str(error), environments)
    return record


def reject_version(
    slot: BundleKey, key: str, version_id: str | None, problem: str, environments: EnvironmentsStore
) -> tuple[EnvironmentRecord, bool]:
    """Record the version at ``slot`` as rejected for ``problem``, unless a record is there already.

    Returns the record that stands, and whether it is the one written here.
    """
    record = EnvironmentRecord(
        environment_id=slot.environment_id,
        version=slot.version,
        status=EnvironmentStatus.REJECTED,
        bundle_key=key,
        bundle_version_id=version_id,
        problems=[problem],
    )
    if environments.put_if_absent(record):
        return record, True
    stored = environments.get(slot.environment_id, slot.version)
    return (stored if stored is not None else record), False
