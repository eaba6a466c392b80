"""Who may publish versions of an environment id, and how a bundle upload says who published it.

The first publisher of an environment id becomes its owner; the owner may name a Cognito group whose
members publish too. The API checks this before it hands out an upload URL, and binds the caller into
that URL as signed object metadata (``x-amz-meta-publisher``, and ``x-amz-meta-publisher-group`` when the
right comes from the group): S3 refuses the upload unless exactly those headers are sent. Registration
checks the stamp again against the owner as it stands then.

A bundle without a stamp was put in the bucket with AWS credentials, not through the API: only an
operator can do that, so it is trusted as an operator action. An environment first published that way
belongs to :data:`OPERATOR`, so no user can claim it afterwards.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # Only named: the API's start, which reads the caller, need not import the environments' records.
    from benchgen.records.environments import EnvironmentOwner

#: The owner of environments first published by a direct bucket upload (not a Cognito user id).
OPERATOR = "operator"
#: The grant of an environment's owner (a group grant is the group's name).
OWNER_GRANT = "owner"
# Object metadata keys of the stamp (S3 lower-cases metadata keys and sends them as x-amz-meta-<key>).
PUBLISHER_KEY = "publisher"
PUBLISHER_GROUP_KEY = "publisher-group"


@dataclass(frozen=True)
class Caller:
    """A signed-in user: the Cognito user id (``sub``) and the user's groups (``cognito:groups``)."""

    user: str
    groups: frozenset[str] = field(default_factory=frozenset)


def publishing_grant(owner: EnvironmentOwner, user: str, groups: Collection[str]) -> str | None:
    """Why ``user`` may publish: :data:`OWNER_GRANT`, or the owner's publisher group; ``None`` if not."""
    if user == owner.owner:
        return OWNER_GRANT
    if owner.publisher_group is not None and owner.publisher_group in groups:
        return owner.publisher_group
    return None


def refusal(owner: EnvironmentOwner, user: str) -> str:
    """The sentence a refused publisher reads."""
    whom = "an operator" if owner.owner == OPERATOR else "its owner"
    group = (
        f"members of the group {owner.publisher_group!r}"
        if owner.publisher_group
        else "no group (its owner has named none)"
    )
    return (
        f"user {user} may not publish versions of environment {owner.environment_id!r}: it belongs to "
        f"{whom}, and besides them only {group} may publish; ask the owner, or publish under a new "
        "environment id"
    )


def upload_stamp(user: str, grant: str) -> dict[str, str]:
    """The object metadata an upload URL binds: who publishes, and through which group if not as owner."""
    stamp = {PUBLISHER_KEY: user}
    if grant != OWNER_GRANT:
        stamp[PUBLISHER_GROUP_KEY] = grant
    return stamp


def stamp_refusal(owner: EnvironmentOwner, stamp: Mapping[str, str]) -> str | None:
    """Why a stamped upload may not become a version (``None`` when it may).

    The group named in the stamp must still be the owner's publisher group: an owner who changed it
    between the upload URL and the upload has withdrawn that right.
    """
    publisher = stamp[PUBLISHER_KEY]
    if publisher == owner.owner:
        return None
    group = stamp.get(PUBLISHER_GROUP_KEY)
    if group is not None and group == owner.publisher_group:
        return None
    return refusal(owner, publisher)
