"""What every run step needs: the environment version its run names, read once, and the environment
opened from the bundle registered for it."""

from __future__ import annotations

from pathlib import Path

from benchgen.environment import Environment, open_environment
from benchgen.errors import BenchGenError, BundleError
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.storage import ObjectStorage
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunRecord
from benchgen.steps.case_scope import (
    CaseScopeError,
    read_case_scope,
    restrict_cases,
    unknown_cases_message,
)


class RunEnvironmentError(BenchGenError):
    """The run names an environment version that cannot be used."""


def registered_version(run: RunRecord, environments: EnvironmentsReader) -> EnvironmentRecord:
    """The environment version the run names, read once for the step: registered, or a sentence why not."""
    return checked_version(run, environments.get(run.environment_id, run.environment_version))


def checked_version(run: RunRecord, record: EnvironmentRecord | None) -> EnvironmentRecord:
    """``record``, the environment version the run names as the step read it: registered, or a sentence
    why not."""
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
    return record


def open_run_environment(
    run: RunRecord, version: EnvironmentRecord, *, store: ObjectStorage, workdir: Path
) -> Environment:
    """Open exactly the bundle object version that was validated when ``version`` was registered, for the
    run's phase (PhaseError when the bundle has no such phase), narrowed to the run's case scope."""
    bundle = store.download(version.bundle_key, workdir / "bundle.zip", version_id=version.bundle_version_id)
    environment = open_environment(bundle, workdir / "bundle", phase=run.phase)
    environment.judge_calibration = version.judge_calibration
    if run.case_scope is not None:
        _narrow(environment, run, store=store, workdir=workdir)
    return environment


def _narrow(environment: Environment, run: RunRecord, *, store: ObjectStorage, workdir: Path) -> None:
    """Keep only the scope's cases in each task's reference cases; every scoped id must be among them."""
    assert run.case_scope is not None
    wanted = read_case_scope(run.case_scope, store=store, workdir=workdir / "scope")
    found: set[str] = set()
    for task in environment.phase_tasks():
        try:
            cases_path = task.cases_path
        except BundleError:
            continue
        found |= restrict_cases(cases_path, wanted)
    if found != wanted:
        raise CaseScopeError(
            unknown_cases_message(
                run.case_scope,
                wanted - found,
                environment=f"{run.environment_id} version {run.environment_version}",
            )
        )
