"""What every run step needs: the run's record and its environment, opened from the registered bundle."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from benchgen.aws.storage import ObjectStore
from benchgen.environment import Environment, open_environment
from benchgen.errors import BenchGenError
from benchgen.records import EnvironmentRecord, EnvironmentStatus, RunRecord, RunStatus


class EnvironmentsReader(Protocol):
    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None: ...


class RunsStore(Protocol):
    def create(self, record: RunRecord) -> bool: ...
    def get(self, run_id: str) -> RunRecord | None: ...
    def update(
        self,
        run_id: str,
        *,
        expected_status: RunStatus | Iterable[RunStatus] | None = None,
        if_unset: Iterable[str] = (),
        **fields: Any,
    ) -> bool: ...
    def add_files(self, run_id: str, files: Mapping[str, str]) -> bool: ...
    def claim(
        self, run_id: str, *, step: str, holder: str, expires_at: float, now: float, status: RunStatus
    ) -> int | None: ...
    def release_claim(self, run_id: str, *, holder: str) -> bool: ...


class RunEnvironmentError(BenchGenError):
    """The run names an environment version that cannot be used."""


def open_run_environment(
    run: RunRecord, *, environments: EnvironmentsReader, store: ObjectStore, workdir: Path
) -> Environment:
    """Open exactly the bundle object version that was validated when the environment was registered, for
    the run's phase (PhaseError when the bundle has no such phase)."""
    record = environments.get(run.environment_id, run.environment_version)
    if record is None:
        raise RunEnvironmentError(
            f"environment {run.environment_id} version {run.environment_version} is not registered: "
            "upload its bundle first"
        )
    if record.status is not EnvironmentStatus.REGISTERED:
        raise RunEnvironmentError(
            f"environment {run.environment_id} version {run.environment_version} was rejected: "
            + "; ".join(record.problems)
        )
    bundle = store.download(record.bundle_key, workdir / "bundle.zip", version_id=record.bundle_version_id)
    return open_environment(bundle, workdir / "bundle", phase=run.phase)
