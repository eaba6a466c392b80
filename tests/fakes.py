"""In-memory fakes of the steps' ports (:mod:`benchgen.ports`), for unit tests.

Each keeps the promise its adapter keeps on AWS, so a step's test means what it would against moto: a
conditional write whose condition fails changes nothing and answers ``False``, a record is validated as
the table would store it, a missing object raises what the bucket adapter raises.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from pydantic import BaseModel

from benchgen.inference.model import Answer, ModelCallError
from benchgen.outputs import RunOutput
from benchgen.ports.pages import Page
from benchgen.ports.runs import Holder, RunLister, RunsStore, ShardReport
from benchgen.ports.storage import MissingObject
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.providers.registry import provider
from benchgen.records.datasets import DatasetRecord
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord
from benchgen.records.evaluations import EvaluationGrant, EvaluationRecord, EvaluationStatus
from benchgen.records.judge_calibration import CalibrationStatus, JudgeCalibration
from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.records.runs import LiveModel, RunClaim, RunRecord, RunStatus, ShardCounts
from benchgen.records.timestamps import utc_now
from benchgen.records.training_runs import TRAINING_TERMINAL, StatusChange, TrainingRunRecord, TrainingStatus
from benchgen.training.preparation import GenerationReport
from benchgen.vocabulary import Sampling


class FlakyUpload(ConnectionError):
    """The network dropped during an upload."""


Listed = TypeVar("Listed", bound=BaseModel)


def _page(found: Iterable[Listed], *, limit: int, next_token: str | None) -> Page[Listed]:
    """A page of ``found`` (in listing order); the token is the position after the page, as opaque to the
    caller as a table's."""
    items = list(found)
    start = int(next_token) if next_token is not None else 0
    after = start + limit
    return Page(items=items[start:after], next_token=str(after) if after < len(items) else None)


def _newest_page(
    found: Iterable[Listed], *, limit: int, next_token: str | None, by: str = "created_at"
) -> Page[Listed]:
    """A page of ``found``, newest first by its ``by`` timestamp, as a table's index sorts it."""
    ordered = sorted(found, key=lambda record: str(getattr(record, by)), reverse=True)
    return _page(ordered, limit=limit, next_token=next_token)


class MemoryStore:
    """The bucket as a dict of key -> bytes (and metadata); the first ``failures`` uploads fail."""

    def __init__(
        self,
        objects: Mapping[str, bytes] | None = None,
        *,
        metadata: Mapping[str, Mapping[str, str]] | None = None,
        failures: int = 0,
    ) -> None:
        self.objects = dict(objects or {})
        self.object_metadata = {key: dict(value) for key, value in (metadata or {}).items()}
        self.failures = failures
        self.uploads: list[str] = []
        self.downloads: list[str] = []

    def download(self, key: str, path: Path, *, version_id: str | None = None) -> Path:
        if key not in self.objects:
            raise MissingObject(f"{key} is not in the bucket")
        self.downloads.append(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.objects[key])
        return path

    def upload(self, path: Path, key: str, *, content_type: str = "application/octet-stream") -> None:
        if self.failures:
            self.failures -= 1
            raise FlakyUpload(key)
        self.objects[key] = path.read_bytes()
        self.uploads.append(key)

    def lines(self, key: str, *, start: int = 0, chunk_size: int = 1 << 20) -> Generator[bytes, None, None]:
        if key not in self.objects:
            raise MissingObject(f"{key} is not in the bucket")
        yield from self.objects[key][start:].splitlines(keepends=True)

    def metadata(self, key: str, *, version_id: str | None = None) -> dict[str, str]:
        if key not in self.objects:
            # What S3's 404 is to the adapter: an unexpected error, not one a user can act on.
            raise LookupError(f"{key} is not in the bucket")
        return dict(self.object_metadata.get(key, {}))

    def size(self, key: str) -> int | None:
        return len(self.objects[key]) if key in self.objects else None

    def chunks(self, key: str, *, chunk_size: int = 1 << 20) -> Generator[bytes, None, None] | None:
        if key not in self.objects:
            return None
        data = self.objects[key]
        return (data[start : start + chunk_size] for start in range(0, len(data), chunk_size))

    def presigned_get_url(self, key: str, *, expires_in: int, download_name: str | None = None) -> str:
        """A URL that says what the bucket's would let its holder do: get ``key``, for ``expires_in``
        seconds, saved as ``download_name``."""
        saved = f"&download={download_name}" if download_name else ""
        return f"https://bucket.test/{key}?get&expires={expires_in}{saved}"

    def presigned_put_url(
        self, key: str, *, expires_in: int, metadata: Mapping[str, str] | None = None
    ) -> str:
        """A URL that says what the bucket's would let its holder do: put ``key``, for ``expires_in``
        seconds, with these headers."""
        headers = "".join(f"&{name}={value}" for name, value in sorted((metadata or {}).items()))
        return f"https://bucket.test/{key}?put&expires={expires_in}{headers}"


class MemoryEnvironments:
    """Environment versions, each stored once, and each environment's first owner."""

    def __init__(self, *records: EnvironmentRecord) -> None:
        self.records = {(record.environment_id, record.version): record for record in records}
        self.owners: dict[str, EnvironmentOwner] = {}

    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None:
        return self.records.get((environment_id, version))

    def put_if_absent(self, record: EnvironmentRecord) -> bool:
        return self.records.setdefault((record.environment_id, record.version), record) is record

    def record_calibration(self, environment_id: str, version: str, calibration: JudgeCalibration) -> bool:
        record = self.records.get((environment_id, version))
        standing = record.judge_calibration if record is not None else None
        if record is None or standing is None or standing.status is not CalibrationStatus.RUNNING:
            return False
        self.records[(environment_id, version)] = record.model_copy(update={"judge_calibration": calibration})
        return True

    def claim_owner(self, owner: EnvironmentOwner) -> EnvironmentOwner:
        return self.owners.setdefault(owner.environment_id, owner)

    def owner_of(self, environment_id: str) -> EnvironmentOwner | None:
        return self.owners.get(environment_id)

    def set_publisher_group(self, environment_id: str, group: str, *, owner: str) -> bool:
        standing = self.owners.get(environment_id)
        if standing is None or standing.owner != owner:
            return False
        self.owners[environment_id] = standing.model_copy(update={"publisher_group": group})
        return True

    def versions(self, environment_id: str) -> builtins.list[EnvironmentRecord]:
        found = [record for record in self.records.values() if record.environment_id == environment_id]
        return sorted(found, key=lambda record: record.created_at)

    def list(self, *, limit: int = 20, next_token: str | None = None) -> Page[EnvironmentRecord]:
        ordered = [self.records[position] for position in sorted(self.records)]
        return _page(ordered, limit=limit, next_token=next_token)


class MemoryRuns(RunsStore):
    """Runs, with the table's named transitions over a dict, listed newest first as the table lists them."""

    def __init__(self, *runs: RunRecord) -> None:
        self.runs = {run.run_id: run for run in runs}

    def _update(
        self,
        run_id: str,
        expected: RunStatus | Iterable[RunStatus] | None,
        *,
        holder: str | Holder | None = Holder.ANY,
        **fields: Any,
    ) -> RunRecord | None:
        run = self.runs.get(run_id)
        if run is None:
            return None
        allowed = [expected] if isinstance(expected, RunStatus) else expected
        if allowed is not None and run.status not in list(allowed):
            return None
        if holder is not Holder.ANY and (run.claim.holder if run.claim is not None else None) != holder:
            return None
        # Validated as a whole, as the table's write is: the record's bounds hold for what is stored.
        self.runs[run_id] = RunRecord.model_validate(run.model_dump() | fields)
        return self.runs[run_id]

    def create(self, record: RunRecord) -> bool:
        return self.runs.setdefault(record.run_id, record) is record

    def add_progress(self, run_id: str, report: ShardReport) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.status is not RunStatus.RUNNING or run.progress is None:
            return False
        if run.shard_progress.get(str(report.shard)) != report.was:
            return False
        was = run.progress
        progress = was.model_copy(
            update={name: getattr(was, name) + report.added(name) for name in ShardCounts.model_fields}
            | {"call_deadline": report.call_deadline or was.call_deadline, "updated_at": utc_now()}
        )
        shards = {**run.shard_progress, str(report.shard): report.now}
        self.runs[run_id] = run.model_copy(update={"progress": progress, "shard_progress": shards})
        return True

    def get(self, run_id: str) -> RunRecord | None:
        return self.runs.get(run_id)

    def add_files(self, run_id: str, files: Mapping[RunOutput, str]) -> RunRecord | None:
        run = self.runs.get(run_id)
        if run is None:
            return None
        self.runs[run_id] = run.model_copy(update={"files": {**run.files, **files}})
        return self.runs[run_id]

    def claim(
        self,
        run: RunRecord,
        *,
        step: str,
        holder: str,
        expires_at: float,
        now: float,
        status: RunStatus,
        request_id: str | None = None,
    ) -> int | None:
        stored = self.runs.get(run.run_id)
        if stored is None or stored.status is not status or run.status is not status:
            return None
        # Conditioned on the claim the caller's copy holds, as the table's write is.
        if (stored.claim and stored.claim.holder) != (run.claim and run.claim.holder):
            return None
        previous = stored.claim if stored.claim is not None and stored.claim.step == step else None
        if previous is not None and previous.expires_at > now:
            return None
        attempt = previous.attempt + 1 if previous is not None else 1
        claim = RunClaim(
            step=step, holder=holder, expires_at=expires_at, attempt=attempt, request_id=request_id
        )
        self.runs[run.run_id] = stored.model_copy(update={"claim": claim})
        return attempt

    def release_claim(self, run_id: str, *, holder: str) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.claim is None or run.claim.holder != holder:
            return False
        self.runs[run_id] = run.model_copy(update={"claim": run.claim.model_copy(update={"expires_at": 0})})
        return True

    def list(
        self,
        *,
        environment_id: str | None = None,
        status: RunStatus | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> Page[RunRecord]:
        found = sorted(
            (
                run
                for run in self.runs.values()
                if environment_id in (None, run.environment_id) and status in (None, run.status)
            ),
            key=lambda run: (run.created_at, run.run_id),
            reverse=True,
        )
        return _page(found, limit=limit, next_token=next_token)


class MemoryStarter:
    """A state machine's executions by name: a name is started once, as Step Functions allows; ``down``
    is raised by every start instead, as by a state machine that cannot be reached."""

    def __init__(self, *, down: Exception | None = None) -> None:
        self.started: dict[str, dict[str, Any]] = {}
        self.down = down

    def start_once(self, name: str, payload: dict[str, Any]) -> bool:
        if self.down is not None:
            raise self.down
        if name in self.started:
            return False
        self.started[name] = payload
        return True


class Published(list[tuple[str, dict[str, Any]]]):
    """The events put on the bus, in order."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        self.append((detail_type, detail))


class MemoryEvaluations:
    """Evaluations by id, each stored once, and their grants, the first one of a user kept; their runs are
    named only while they are Running, as the table's update is."""

    def __init__(self, *records: EvaluationRecord) -> None:
        self.records = {record.evaluation_id: record for record in records}
        self.grants: dict[tuple[str, str], EvaluationGrant] = {}

    def get(self, evaluation_id: str) -> EvaluationRecord | None:
        return self.records.get(evaluation_id)

    def create(self, record: EvaluationRecord) -> bool:
        return self.records.setdefault(record.evaluation_id, record) is record

    def list_for_training_run(
        self, training_run_id: str, *, limit: int = 20, next_token: str | None = None
    ) -> Page[EvaluationRecord]:
        found = (record for record in self.records.values() if record.training_run_id == training_run_id)
        return _newest_page(found, limit=limit, next_token=next_token, by="authorized_at")

    def put_grant(self, grant: EvaluationGrant) -> bool:
        return self.grants.setdefault((grant.training_run_id, grant.user), grant) is grant

    def grant_for(self, training_run_id: str, user: str) -> EvaluationGrant | None:
        return self.grants.get((training_run_id, user))

    def set_runs(
        self, evaluation_id: str, *, tuned_run_id: str, base_run_id: str, held_out_count: int
    ) -> bool:
        record = self.records.get(evaluation_id)
        if record is None or record.status is not EvaluationStatus.RUNNING:
            return False
        self.records[evaluation_id] = record.model_copy(
            update={
                "tuned": record.tuned.model_copy(update={"run_id": tuned_run_id}),
                "base": record.base.model_copy(update={"run_id": base_run_id}),
                "held_out_count": held_out_count,
            }
        )
        return True

    def _finish(self, evaluation_id: str, **fields: Any) -> bool:
        record = self.records.get(evaluation_id)
        if record is None or record.status is not EvaluationStatus.RUNNING:
            return False
        self.records[evaluation_id] = EvaluationRecord.model_validate(record.model_dump() | fields)
        return True

    def complete(self, evaluation_id: str, *, found: Mapping[str, Any], finished_at: str) -> bool:
        return self._finish(
            evaluation_id, status=EvaluationStatus.COMPLETED, finished_at=finished_at, **dict(found)
        )

    def fail(self, evaluation_id: str, *, reason: str, finished_at: str) -> bool:
        return self._finish(
            evaluation_id, status=EvaluationStatus.FAILED, failure_reason=reason, finished_at=finished_at
        )


class MemoryTrainingRuns:
    """Training runs, each stored once, each status reached once and a terminal one never left, its
    timeline appended to; a cancel is asked only by the owner of a run that has not ended."""

    def __init__(self, *records: TrainingRunRecord) -> None:
        self.records = {record.training_run_id: record for record in records}

    def get(self, training_run_id: str) -> TrainingRunRecord | None:
        return self.records.get(training_run_id)

    def transition(
        self,
        training_run_id: str,
        status: TrainingStatus,
        *,
        provider_status: str | None = None,
        message: str | None = None,
        result_model: str | None = None,
        failure_reason: str | None = None,
    ) -> bool:
        record = self.records.get(training_run_id)
        if record is None or record.status is status or record.status in TRAINING_TERMINAL:
            return False
        change = StatusChange(status=status, provider_status=provider_status, message=message)
        fields: dict[str, Any] = {"status": status, "timeline": [*record.timeline, change]}
        fields |= {
            name: value
            for name, value in (("result_model", result_model), ("failure_reason", failure_reason))
            if value is not None
        }
        if status in TRAINING_TERMINAL:
            fields["finished_at"] = change.at
        # Validated as a whole, as the table's write is: the record's bounds hold for what is stored.
        self.records[training_run_id] = TrainingRunRecord.model_validate(record.model_dump() | fields)
        return True

    def record_job(self, training_run_id: str, *, job_id: str) -> bool:
        record = self.records.get(training_run_id)
        if record is None or record.job_id not in (None, job_id):
            return False
        self.records[training_run_id] = record.model_copy(update={"job_id": job_id})
        return True

    def record_cost(self, training_run_id: str, cost: Mapping[str, float | str]) -> bool:
        record = self.records.get(training_run_id)
        if record is None:
            return False
        self.records[training_run_id] = record.model_copy(update={"cost": dict(cost)})
        return True

    def put_if_absent(self, record: TrainingRunRecord) -> bool:
        return self.records.setdefault(record.training_run_id, record) is record

    def request_cancel(self, training_run_id: str, *, owner: str) -> bool:
        record = self.records.get(training_run_id)
        if record is None or record.owner != owner or record.status in TRAINING_TERMINAL:
            return False
        self.records[training_run_id] = record.model_copy(update={"cancel_requested": True})
        return True

    def list(
        self,
        *,
        owner: str,
        preparation_id: str | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> Page[TrainingRunRecord]:
        found = (
            record
            for record in self.records.values()
            if record.owner == owner and preparation_id in (None, record.preparation_id)
        )
        return _newest_page(found, limit=limit, next_token=next_token)


class MemoryConnections:
    """Provider connections by id, each stored once, deleted only by their owner."""

    def __init__(self, *records: ConnectionRecord) -> None:
        self.records = {record.connection_id: record for record in records}

    def get(self, connection_id: str) -> ConnectionRecord | None:
        return self.records.get(connection_id)

    def put(self, record: ConnectionRecord) -> bool:
        return self.records.setdefault(record.connection_id, record) is record

    def list(
        self,
        *,
        owner: str,
        limit: int = 20,
        next_token: str | None = None,
        keep: Callable[[ConnectionRecord], bool] | None = None,
    ) -> Page[ConnectionRecord]:
        found = (
            record
            for record in self.records.values()
            if record.owner == owner and (keep is None or keep(record))
        )
        return _newest_page(found, limit=limit, next_token=next_token)

    def delete(self, connection_id: str, *, owner: str) -> bool:
        record = self.records.get(connection_id)
        if record is None or record.owner != owner:
            return False
        del self.records[connection_id]
        return True


class MemoryPackages:
    """Packages by id, each stored once; each move out of a status only from that status (a retry only
    from the failed attempt it names), as the table's conditions say."""

    def __init__(self, *records: PackageRecord) -> None:
        self.records = {record.package_id: record for record in records}

    def get(self, package_id: str) -> PackageRecord | None:
        return self.records.get(package_id)

    def _move(self, package_id: str, expected: PackageStatus, **fields: Any) -> bool:
        record = self.records.get(package_id)
        if record is None or record.status is not expected:
            return False
        self.records[package_id] = PackageRecord.model_validate(record.model_dump() | fields)
        return True

    def transition(
        self, package_id: str, *, expected: PackageStatus, status: PackageStatus, reason: str | None = None
    ) -> bool:
        changes: dict[str, Any] = {"status": status}
        if reason is not None:
            changes["reason"] = reason
        return self._move(package_id, expected, **changes)

    def ready(self, package_id: str, *, sha256: str, size: int, files: Mapping[str, PackageFile]) -> bool:
        return self._move(
            package_id,
            PackageStatus.BUILDING,
            status=PackageStatus.READY,
            sha256=sha256,
            size=size,
            files=files,
        )

    def put_if_absent(self, record: PackageRecord) -> bool:
        return self.records.setdefault(record.package_id, record) is record

    def retry(self, package_id: str, *, attempt: int) -> bool:
        record = self.records.get(package_id)
        if record is None or record.attempt != attempt:
            return False
        return self._move(
            package_id, PackageStatus.FAILED, status=PackageStatus.BUILDING, attempt=attempt + 1, reason=None
        )

    def list(
        self, preparation_id: str, *, limit: int = 20, next_token: str | None = None
    ) -> Page[PackageRecord]:
        found = (record for record in self.records.values() if record.preparation_id == preparation_id)
        return _newest_page(found, limit=limit, next_token=next_token)


class MemoryPreparations:
    """Preparations by id, each stored once; each leaves Generating once, as the table's conditions say."""

    def __init__(self, *records: PreparationRecord) -> None:
        self.records = {record.preparation_id: record for record in records}

    def get(self, preparation_id: str) -> PreparationRecord | None:
        return self.records.get(preparation_id)

    def create(self, record: PreparationRecord) -> bool:
        return self.records.setdefault(record.preparation_id, record) is record

    def list(self, *, owner: str, limit: int = 20, next_token: str | None = None) -> Page[PreparationRecord]:
        found = (record for record in self.records.values() if record.owner == owner)
        return _newest_page(found, limit=limit, next_token=next_token)

    def _finish(self, preparation_id: str, **fields: Any) -> bool:
        record = self.records.get(preparation_id)
        if record is None or record.status is not PreparationStatus.GENERATING:
            return False
        self.records[preparation_id] = PreparationRecord.model_validate(record.model_dump() | fields)
        return True

    def ready(
        self, preparation_id: str, *, report: GenerationReport, gap_count: int, finished_at: str
    ) -> bool:
        found = report.model_dump(exclude={"base_model"})
        return self._finish(
            preparation_id,
            status=PreparationStatus.READY,
            gap_count=gap_count,
            finished_at=finished_at,
            **found,
        )

    def fail(self, preparation_id: str, *, reason: str, finished_at: str) -> bool:
        return self._finish(
            preparation_id, status=PreparationStatus.FAILED, failure_reason=reason, finished_at=finished_at
        )


class MemoryDatasets:
    """Datasets by id, each stored once."""

    def __init__(self) -> None:
        self.records: dict[str, DatasetRecord] = {}

    def get(self, dataset_id: str) -> DatasetRecord | None:
        return self.records.get(dataset_id)

    def put_if_absent(self, record: DatasetRecord) -> bool:
        return self.records.setdefault(record.dataset_id, record) is record

    def list(
        self, *, kind: str | None = None, limit: int = 20, next_token: str | None = None
    ) -> Page[DatasetRecord]:
        found = (record for record in self.records.values() if kind in (None, record.kind))
        return _newest_page(found, limit=limit, next_token=next_token)


class MemoryJobs:
    """One provider's training jobs, by job name: a second start of a name finds the first job.

    The provider speaks its own words (``started``, then each of ``described`` in turn, the last repeated;
    ``stopped`` once asked to stop), which become ours through the kind's definition, as each adapter reads
    them. A :class:`ProviderFault` among the described words is raised instead, as is ``stop_fault`` from
    a stop. A kind that takes its files through its own upload keeps them by file id.
    """

    def __init__(
        self,
        kind: str,
        *,
        started: str = "pending",
        described: Sequence[str | ProviderFault] = ("running",),
        stopped: str = "cancelled",
        stop_fault: ProviderFault | None = None,
        result_model: str = "tuned-model",
        failure_reason: str | None = None,
        cost: Mapping[str, float | str] | None = None,
    ) -> None:
        self.definition = provider(kind)
        self.started_as, self.described_as, self.stopped_as = started, list(described), stopped
        self.stop_fault = stop_fault
        self.result_model, self.failure_reason = result_model, failure_reason
        self.cost = dict(cost or {})
        self.jobs: dict[str, JobSpec] = {}  # job id -> the spec it was started with
        self.files: dict[str, tuple[str, bytes]] = {}  # file id -> (name, data)
        self.connections: list[str] = []
        self.described = 0
        self.stops: list[str | None] = []

    def for_connection(self, connection: ConnectionRecord) -> MemoryJobs:
        """The ``jobs_for`` of the steps: every connection reaches this one provider."""
        self.connections.append(connection.connection_id)
        return self

    def upload(self, name: str, data: bytes) -> str | None:
        if not self.definition.uploads_files:
            return None
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = (name, data)
        return file_id

    def start(self, spec: JobSpec) -> JobState:
        job_id = f"job-{spec.job_name}"
        self.jobs.setdefault(job_id, spec)
        return self._state(self.started_as, job_id)

    def describe(self, spec: JobSpec, job_id: str | None) -> JobState:
        said = self.described_as[min(self.described, len(self.described_as) - 1)]
        self.described += 1
        if isinstance(said, ProviderFault):
            raise said
        return self._state(said, f"job-{spec.job_name}")

    def stop(self, spec: JobSpec, job_id: str | None) -> JobState:
        self.stops.append(job_id)
        if self.stop_fault is not None:
            raise self.stop_fault
        return self._state(self.stopped_as, f"job-{spec.job_name}")

    def _state(self, provider_status: str, job_id: str) -> JobState:
        status = self.definition.status(provider_status)
        return JobState(
            provider_status=provider_status,
            status=status,
            job_id=job_id,
            result_model=self.result_model if status is TrainingStatus.SUCCEEDED else None,
            failure_reason=self.failure_reason if status is TrainingStatus.FAILED else None,
            cost=self.cost,
            message=self.definition.status_note(provider_status),
        )


class MemoryModel:
    """A live model answering each prompt from ``answers`` (``default`` otherwise, so that a model that
    was never told a question still answers); the errors in ``faults`` for a prompt are raised first, one
    per call, and ``down`` on every call."""

    def __init__(
        self,
        answers: Mapping[str, str] | None = None,
        *,
        default: str = "OK",
        faults: Mapping[str, Sequence[ModelCallError]] | None = None,
        down: ModelCallError | None = None,
    ) -> None:
        self.answers = dict(answers or {})
        self.default = default
        self.faults = {prompt: list(errors) for prompt, errors in (faults or {}).items()}
        self.down = down
        self.prompts: list[str] = []
        self.configured: list[tuple[str, Sampling]] = []

    def for_run(self, live: LiveModel, sampling: Sampling) -> MemoryModel:
        """The ``model_for`` of the steps: every live run reaches this one model."""
        self.configured.append((live.model_id, sampling))
        return self

    def complete(self, prompt: str) -> Answer:
        self.prompts.append(prompt)
        if self.down is not None:
            raise self.down
        queued = self.faults.get(prompt)
        if queued:
            raise queued.pop(0)
        text = self.answers.get(prompt, self.default)
        return Answer(text=text, raw=json.dumps({"text": text}))


class MemoryIdempotency(BasePersistenceLayer):
    """powertools' idempotency records in a dict: a record is put only where none stands, or where the one
    standing has expired (or was left in progress past its deadline), as the table's conditional put is;
    a put refused for another payload says so, as the table's adapter does."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # powertools leaves it unannotated
        self.records: dict[str, DataRecord] = {}

    def _get_record(self, idempotency_key: str) -> DataRecord:
        try:
            return self.records[idempotency_key]
        except KeyError:
            raise IdempotencyItemNotFoundError() from None

    def _put_record(self, data_record: DataRecord) -> None:
        standing = self.records.get(data_record.idempotency_key)
        if standing is not None and not standing.is_expired and not _abandoned(standing):
            # As the table's adapter does with the record its refused put returns: another body is refused.
            self._validate_payload(data_payload=data_record, stored_data_record=standing)
            raise IdempotencyItemAlreadyExistsError(old_data_record=standing)
        self.records[data_record.idempotency_key] = data_record

    def _update_record(self, data_record: DataRecord) -> None:
        self.records[data_record.idempotency_key] = data_record

    def _delete_record(self, data_record: DataRecord) -> None:
        self.records.pop(data_record.idempotency_key, None)


def _abandoned(record: DataRecord) -> bool:
    deadline = record.in_progress_expiry_timestamp
    return record.status == "INPROGRESS" and deadline is not None and deadline < time.time() * 1000


if TYPE_CHECKING:
    # mypy holds each fake to its port: a fake that no longer takes its port's calls fails the type check.
    from benchgen.inference.model import Model
    from benchgen.ports.connections import ConnectionsReader, ConnectionsStore
    from benchgen.ports.datasets import DatasetsCatalog, DatasetsStore
    from benchgen.ports.environments import EnvironmentsCatalog, EnvironmentsStore
    from benchgen.ports.evaluations import EvaluationsCatalog, EvaluationsStore
    from benchgen.ports.events import Publisher
    from benchgen.ports.executions import Starter
    from benchgen.ports.packages import PackagesCatalog, PackagesReader, PackagesStore
    from benchgen.ports.preparations import PreparationsCatalog, PreparationsStore
    from benchgen.ports.providers import JobsFor, ModelFactory, TrainingJobs
    from benchgen.ports.storage import ObjectStorage, SharedStorage
    from benchgen.ports.training_runs import TrainingRunsCatalog, TrainingRunsStore

    _store: ObjectStorage = MemoryStore()
    _environments: EnvironmentsStore = MemoryEnvironments()
    _runs: RunLister = MemoryRuns()
    _evaluations: EvaluationsStore = MemoryEvaluations()
    _training_runs: TrainingRunsStore = MemoryTrainingRuns()
    _connections: ConnectionsReader = MemoryConnections()
    _packages: PackagesReader = MemoryPackages()
    _built_packages: PackagesStore = MemoryPackages()
    _preparations: PreparationsStore = MemoryPreparations()
    _datasets: DatasetsStore = MemoryDatasets()
    _starter: Starter = MemoryStarter()
    _publisher: Publisher = Published()
    _jobs: TrainingJobs = MemoryJobs("bedrock")
    _jobs_for: JobsFor = MemoryJobs("bedrock").for_connection
    _model: Model = MemoryModel()
    _model_for: ModelFactory = MemoryModel().for_run
    _shared_store: SharedStorage = MemoryStore()
    _environments_catalog: EnvironmentsCatalog = MemoryEnvironments()
    _evaluations_catalog: EvaluationsCatalog = MemoryEvaluations()
    _training_runs_catalog: TrainingRunsCatalog = MemoryTrainingRuns()
    _connections_store: ConnectionsStore = MemoryConnections()
    _packages_catalog: PackagesCatalog = MemoryPackages()
    _preparations_catalog: PreparationsCatalog = MemoryPreparations()
    _datasets_catalog: DatasetsCatalog = MemoryDatasets()
