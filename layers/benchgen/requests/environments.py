"""What ``/environments`` does: ask for a bundle upload URL, and list registered environment versions."""

from __future__ import annotations

from benchgen.bucket_layout import bundle_key
from benchgen.ownership import OWNER_GRANT, Caller, publishing_grant, refusal, upload_stamp
from benchgen.records.environments import EnvironmentOwner
from benchgen.requests.errors import Conflict, Forbidden
from benchgen.requests.schemas.environments import (
    CreateEnvironmentRequest,
    EnvironmentList,
    EnvironmentUpload,
    EnvironmentView,
)
from benchgen.requests.services import ApiServices


def request_bundle_upload(
    request: CreateEnvironmentRequest, *, caller: Caller, services: ApiServices
) -> EnvironmentUpload:
    """A URL to upload a new environment version's bundle to, for the environment's publishers only.

    The first caller for an environment id becomes its owner. A version is never uploaded twice. The URL
    binds the caller as the publisher (signed metadata), which registration checks again.
    """
    environment_id = request.environment_id
    if services.environments.owner_of(environment_id) is None and services.environments.versions(
        environment_id
    ):
        # Published before environments had owners: the first caller must not inherit it.
        raise Forbidden(
            f"environment {environment_id!r} was published before environments had owners, so no user "
            "can claim it: an operator publishes its next version (a direct bucket upload), or publish "
            "under a new environment id"
        )
    owner = services.environments.claim_owner(
        EnvironmentOwner(
            environment_id=environment_id, owner=caller.user, publisher_group=request.publisher_group
        )
    )
    grant = publishing_grant(owner, caller.user, caller.groups)
    if grant is None:
        raise Forbidden(refusal(owner, caller.user))
    if request.publisher_group is not None and request.publisher_group != owner.publisher_group:
        if grant != OWNER_GRANT or not services.environments.set_publisher_group(
            environment_id, request.publisher_group, owner=caller.user
        ):
            raise Forbidden(
                f"only the owner of environment {environment_id!r} names its publisher group: "
                "leave publisher_group out"
            )
        owner = owner.model_copy(update={"publisher_group": request.publisher_group})
    existing = services.environments.get(environment_id, request.version)
    if existing is not None:
        raise Conflict(
            f"environment {environment_id!r} version {request.version!r} already exists "
            f"({existing.status.value}): upload the bundle as a new version"
        )
    key = bundle_key(environment_id, request.version)
    # An upload that landed but is not registered yet is the same version in flight.
    if services.store.size(key) is not None:
        raise Conflict(
            f"a bundle for environment {environment_id!r} version {request.version!r} was already "
            "uploaded and is being registered: wait for it, or upload as a new version"
        )
    stamp = upload_stamp(caller.user, grant)
    url = services.store.presigned_put_url(key, expires_in=services.ttl, metadata=stamp)
    services.record_event("EnvironmentUploadRequested")
    return EnvironmentUpload(
        environment_id=environment_id,
        version=request.version,
        bundle_key=key,
        upload_url=url,
        upload_headers={f"x-amz-meta-{name}": value for name, value in stamp.items()},
        owner=owner.owner,
        publisher_group=owner.publisher_group,
        expires_in=services.ttl,
    )


def list_environments(*, services: ApiServices, limit: int, next_token: str | None) -> EnvironmentList:
    """A page of environment versions, each with its environment's owner and publisher group."""
    page = services.environments.list(limit=limit, next_token=next_token)
    # One read per environment on the page, not per version: its versions share one owner item.
    owners = {
        environment_id: services.environments.owner_of(environment_id)
        for environment_id in {record.environment_id for record in page.items}
    }
    items = []
    for record in page.items:
        owner = owners[record.environment_id]
        items.append(
            EnvironmentView(
                **record.model_dump(),
                owner=owner.owner if owner is not None else None,
                publisher_group=owner.publisher_group if owner is not None else None,
            )
        )
    return EnvironmentList(items=items, next_token=page.next_token)
