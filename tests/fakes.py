"""In-memory fakes of the steps' ports (:mod:`benchgen.ports`), for unit tests.

Each keeps the promise its adapter keeps on AWS, so a step's test means what it would against moto: a
conditional write whose condition fails changes nothing and answers ``False``, a record is validated as
the table would store it, a missing object raises what the bucket adapter raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from benchgen.outputs import RunOutput
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import MissingObject
from benchgen.records import (
    DatasetRecord,
    EnvironmentOwner,
    EnvironmentRecord,
    PackageRecord,
    PackageStatus,
    PreparationRecord,
    PreparationStatus,
    RunClaim,
    RunRecord,
    RunStatus,
)
from benchgen.training.preparation import GenerationReport


class FlakyUpload(ConnectionError):
    """The network dropped during an upload."""


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

    def download(self, key: str, path: Path, *, version_id: str | None = None) -> Path:
        if key not in self.objects:
            raise MissingObject(f"{key} is not in the bucket")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(self.objects[key])
        return path

    def upload(self, path: Path, key: str, *, content_type: str = "application/octet-stream") -> None:
        if self.failures:
            self.failures -= 1
            raise FlakyUpload(key)
        self.objects[key] = path.read_bytes()
        self.uploads.append(key)

    def lines(self, key: str, *, start: int = 0, chunk_size: int = 1 << 20) -> Iterator[bytes]:
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


class MemoryEnvironments:
    """Environment versions, each stored once, and each environment's first owner."""

    def __init__(self, *records: EnvironmentRecord) -> None:
        self.records = {(record.environment_id, record.version): record for record in records}
        self.owners: dict[str, EnvironmentOwner] = {}

    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None:
        return self.records.get((environment_id, version))

    def put_if_absent(self, record: EnvironmentRecord) -> bool:
        return self.records.setdefault((record.environment_id, record.version), record) is record

    def claim_owner(self, owner: EnvironmentOwner) -> EnvironmentOwner:
        return self.owners.setdefault(owner.environment_id, owner)


class MemoryDatasets:
    """Datasets by id, each stored once."""

    def __init__(self) -> None:
        self.records: dict[str, DatasetRecord] = {}

    def get(self, dataset_id: str) -> DatasetRecord | None:
        return self.records.get(dataset_id)

    def put_if_absent(self, record: DatasetRecord) -> bool:
        return self.records.setdefault(record.dataset_id, record) is record


class MemoryPackages:
    """Packages by id; each move out of a status only from that status, as the table's conditions say."""

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

    def ready(self, package_id: str, *, sha256: str, size: int, files: Mapping[str, Any]) -> bool:
        return self._move(
            package_id,
            PackageStatus.BUILDING,
            status=PackageStatus.READY,
            sha256=sha256,
            size=size,
            files=files,
        )


class MemoryPreparations:
    """Preparations by id; each leaves Generating once, as the table's conditions say."""

    def __init__(self, *records: PreparationRecord) -> None:
        self.records = {record.preparation_id: record for record in records}

    def get(self, preparation_id: str) -> PreparationRecord | None:
        return self.records.get(preparation_id)

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


class MemoryRuns(RunsStore):
    """Runs, with the table's named transitions over a dict."""

    def __init__(self, *runs: RunRecord) -> None:
        self.runs = {run.run_id: run for run in runs}

    def _update(self, run_id: str, expected: RunStatus | Iterable[RunStatus] | None, **fields: Any) -> bool:
        run = self.runs.get(run_id)
        if run is None:
            return False
        allowed = [expected] if isinstance(expected, RunStatus) else expected
        if allowed is not None and run.status not in list(allowed):
            return False
        # Validated as a whole, as the table's write is: the record's bounds hold for what is stored.
        self.runs[run_id] = RunRecord.model_validate(run.model_dump() | fields)
        return True

    def create(self, record: RunRecord) -> bool:
        return self.runs.setdefault(record.run_id, record) is record

    def get(self, run_id: str) -> RunRecord | None:
        return self.runs.get(run_id)

    def add_files(self, run_id: str, files: Mapping[RunOutput, str]) -> bool:
        run = self.runs.get(run_id)
        if run is None:
            return False
        self.runs[run_id] = run.model_copy(update={"files": {**run.files, **files}})
        return True

    def claim(
        self, run_id: str, *, step: str, holder: str, expires_at: float, now: float, status: RunStatus
    ) -> int | None:
        run = self.runs.get(run_id)
        if run is None or run.status is not status:
            return None
        previous = run.claim if run.claim is not None and run.claim.step == step else None
        if previous is not None and previous.expires_at > now:
            return None
        attempt = previous.attempt + 1 if previous is not None else 1
        claim = RunClaim(step=step, holder=holder, expires_at=expires_at, attempt=attempt)
        self.runs[run_id] = run.model_copy(update={"claim": claim})
        return attempt

    def release_claim(self, run_id: str, *, holder: str) -> bool:
        run = self.runs.get(run_id)
        if run is None or run.claim is None or run.claim.holder != holder:
            return False
        self.runs[run_id] = run.model_copy(update={"claim": run.claim.model_copy(update={"expires_at": 0})})
        return True


class MemoryStarter:
    """A state machine's executions by name: a name is started once, as Step Functions allows."""

    def __init__(self) -> None:
        self.started: dict[str, dict[str, Any]] = {}

    def start_once(self, name: str, payload: dict[str, Any]) -> bool:
        if name in self.started:
            return False
        self.started[name] = payload
        return True


class Published(list[tuple[str, dict[str, Any]]]):
    """The events put on the bus, in order."""

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        self.append((detail_type, detail))
