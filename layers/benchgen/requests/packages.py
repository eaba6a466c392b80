"""What ``/preparations/{id}/packages`` and ``/packages/{id}`` do: request an exact package, list them,
download one.

A package is one export profile over one preparation state, so its id derives from the state hash and the
profile: the same request finds the package the first one made (200) instead of building another.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger

from benchgen.bucket_layout import package_execution_name, package_key
from benchgen.records.environments import EnvironmentRecord
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.records.preparations import PreparationRecord
from benchgen.requests.errors import ApiError, Conflict, Forbidden, NotFound
from benchgen.requests.preparations import preparation_of_owner, ready_preparation
from benchgen.requests.schemas.packages import PackageList, PackageView
from benchgen.requests.services import ApiServices
from benchgen.steps.package import PackageInput
from benchgen.steps.prepare import BundleRef
from benchgen.training.export_profiles import PROFILES
from benchgen.training.package import PreparationInfo
from benchgen.training.package import package_id as package_id_for
from benchgen.training.preparation import PreparationSpec

logger = Logger(child=True)

NOT_STARTED = "the package build could not be started"


def preparation_info(record: PreparationRecord) -> PreparationInfo:
    """What a package records of the preparation: its state, and the request it was generated from."""
    if record.state_hash is None:
        raise Conflict(
            f"preparation {record.preparation_id} has no state hash yet: read it again in a moment"
        )
    spec = PreparationSpec.model_validate(
        record.model_dump(mode="json", include=set(PreparationSpec.model_fields))
    )
    return PreparationInfo(
        state_hash=record.state_hash,
        method=record.method,
        environment_id=record.environment_id,
        environment_version=record.environment_version,
        benchmark=record.benchmark,
        base_model=record.base_model,
        suggested_hyperparams=record.suggested_hyperparams,
        spec=spec.model_dump(mode="json"),
    )


def _registered(preparation: PreparationRecord, services: ApiServices) -> EnvironmentRecord:
    """The preparation's environment version as registered: its bundle, whose cases the package reads, and
    what registration measured of its judge."""
    environment = services.environments.get(preparation.environment_id, preparation.environment_version)
    if environment is None:
        raise Conflict(
            f"environment {preparation.environment_id} version {preparation.environment_version} of "
            f"preparation {preparation.preparation_id} is no longer registered: register it again to package"
        )
    return environment


def _start_build(
    package: PackageRecord, info: PreparationInfo, environment: EnvironmentRecord, services: ApiServices
) -> None:
    """Start the execution of the package's current attempt, named by its id (and the attempt after one).

    Whether this call started it is not read from the answer: Step Functions answers a repeated name with
    the same input as success while that execution runs (AWS and moto alike), and refuses it once it has
    ended. Which request creates the package is decided by the conditional put before this.
    """
    starter = services.package_starter
    if starter is None:
        raise RuntimeError(
            "PACKAGE_STATE_MACHINE_ARN is not set: only the API function starts package builds"
        )
    try:
        # The same package gives the same input, so a repeated start while the execution runs is answered
        # with that execution.
        task = PackageInput(
            package_id=package.package_id,
            preparation_id=package.preparation_id,
            profile=package.profile,
            preparation=info,
            bundle=BundleRef(key=environment.bundle_key, version_id=environment.bundle_version_id),
            judge_calibration=environment.judge_calibration,
        )
        starter.start_once(
            package_execution_name(package.package_id, package.attempt), task.model_dump(mode="json")
        )
    except Exception:
        logger.exception("could not start the package build", extra={"package_id": package.package_id})
        services.packages.transition(
            package.package_id,
            expected=PackageStatus.BUILDING,
            status=PackageStatus.FAILED,
            reason=f"{NOT_STARTED}; request it again later",
        )
        raise


def request_package(
    preparation_id: str, profile: str, *, owner: str, services: ApiServices
) -> tuple[PackageRecord, bool]:
    """The package of the preparation's state in ``profile``, and whether this request created it.

    Only a Ready preparation of the caller's is packaged. A new package is recorded Building and its build
    started; so is the next attempt of a package whose build failed. Any other package is answered as it
    stands (a build that is still running is started again with the same name and input, which starts
    nothing new but covers a request that died before it started).
    """
    if profile not in PROFILES:
        raise ApiError(f"there is no export profile {profile!r}: choose one of {', '.join(PROFILES)}")
    preparation = ready_preparation(preparation_id, owner=owner, services=services)
    info = preparation_info(preparation)
    environment = _registered(preparation, services)
    pid = package_id_for(info.state_hash, profile)
    package = PackageRecord(
        package_id=pid,
        preparation_id=preparation.preparation_id,
        owner=owner,
        profile=profile,
        state_hash=info.state_hash,
        package_key=package_key(pid),
    )
    if services.packages.put_if_absent(package):
        _start_build(package, info, environment, services)
        services.record_event("PackageRequested")
        return package, True
    existing = services.packages.get(pid)
    if existing is None:
        raise Conflict(f"package {pid} is being recorded by another request: send the request again")
    if existing.owner != owner:
        raise Forbidden(f"package {pid} of this state and profile belongs to another user")
    if existing.status is PackageStatus.FAILED:
        if services.packages.retry(pid, attempt=existing.attempt):
            retried = existing.model_copy(
                update={"status": PackageStatus.BUILDING, "attempt": existing.attempt + 1, "reason": None}
            )
            _start_build(retried, info, environment, services)
            services.record_event("PackageRequested")
            return retried, True
        # Another request retried it first: answer the package as that request left it.
        existing = services.packages.get(pid) or existing
    if existing.status is PackageStatus.BUILDING:
        _start_build(existing, info, environment, services)
    return existing, False


def package_view(package_id: str, *, owner: str, services: ApiServices) -> PackageView:
    """The owner's package, with a download URL when it is Ready."""
    package = services.packages.get(package_id)
    if package is None:
        raise NotFound(
            f"no package {package_id!r}: check the id (GET /preparations/{{id}}/packages lists them)"
        )
    if package.owner != owner:
        raise Forbidden("only the package's owner can read it")
    view = PackageView(**package.model_dump())
    if package.status is PackageStatus.READY:
        view.download_url = services.store.presigned_get_url(
            package.package_key, expires_in=services.ttl, download_name=f"{package.package_id}.zip"
        )
        view.expires_in = services.ttl
    return view


def list_packages(
    preparation_id: str, *, owner: str, services: ApiServices, limit: int, next_token: str | None
) -> PackageList:
    """The packages of the caller's preparation, newest first."""
    preparation = preparation_of_owner(preparation_id, owner=owner, services=services)
    page = services.packages.list(preparation.preparation_id, limit=limit, next_token=next_token)
    return PackageList(items=page.items, next_token=page.next_token)
