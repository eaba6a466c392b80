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
from benchgen.judging import JudgeSettings
from benchgen.ownership import OPERATOR, PUBLISHER_KEY, stamp_refusal
from benchgen.ports.connections import ConnectionsReader
from benchgen.ports.environments import EnvironmentsStore
from benchgen.ports.providers import ModelFactory
from benchgen.ports.storage import ObjectStorage
from benchgen.providers.judges import JudgeUnreachable
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord, EnvironmentStatus
from benchgen.records.judge_calibration import JudgeCalibration
from benchgen.scoring.calibration import CalibrationError, JudgeAtHand, calibrate_environment
from benchgen.steps.case_shards import cut_cases, shardable_tasks
from benchgen.steps.inference import shard_budget
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
    the judge's agreement with its human-labelled answers is measured through ``judges`` and recorded
    (:func:`judge_calibration`): a judge that cannot be reached leaves it failed, the version registered.
    """
    try:
        bundle_key = parse_bundle_key(key)
    except ObjectKeyError as error:
        return _reject_misplaced(key, version_id, error, environments)
    existing = environments.get(bundle_key.environment_id, bundle_key.version)
    if existing is not None:
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
                    "judge_calibration": judge_calibration(env, publisher, judges),
                }
            )
    if not environments.put_if_absent(record):
        # Another delivery of the same event won the race: its record stands.
        stored = environments.get(bundle_key.environment_id, bundle_key.version)
        return stored if stored is not None else record
    logger.info("environment recorded", extra={"status": record.status, "problems": len(record.problems)})
    return record


@dataclass(frozen=True)
class Judges:
    """How registration reaches an environment's judge: the connections it may name (the publisher's own),
    the factory that asks a connection's model, and when the step must stop asking."""

    connections: ConnectionsReader
    model_for: ModelFactory
    deadline: float | None = None


def judge_calibration(env: Environment, publisher: str, judges: Judges | None) -> JudgeCalibration | None:
    """The agreement with people of ``env``'s judge, reached through the publisher's connection that its
    ``judge:`` section names; None when its template asks no judge."""

    def connect(settings: JudgeSettings, model_id: str) -> JudgeAtHand:
        if judges is None:
            raise CalibrationError("no connection can be reached where this bundle is registered")
        try:
            live = reach_judge(settings, publisher, judges.connections, model_id)
        except JudgeUnreachable as error:
            raise CalibrationError(str(error)) from None
        # As a judging pass of one shard: every request the connection allows at once, and its quotas.
        budget = shard_budget(live, live.limits.max_in_flight, shards_at_once=1)
        return JudgeAtHand(judges.model_for(live, settings.sampling), budget)

    found = calibrate_environment(env, connect, deadline=judges.deadline if judges else None)
    if found is not None:
        logger.info("judge calibrated", extra={"status": found.status, "answers": found.answers})
    return found


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
