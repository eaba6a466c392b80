"""The bodies of ``/environments``."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from benchgen.lazy_model import LazyModel
from benchgen.records.environments import EnvironmentRecord
from benchgen.requests.schemas.common import Listing, StrictRequest, matching

ENVIRONMENT_ID_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
VERSION_PATTERN = r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,30}[A-Za-z0-9])?$"
# Cognito group names, less the characters that would not survive the authorizer's claim string.
GROUP_PATTERN = r"^[A-Za-z0-9_.@+=-]{1,128}$"

# The pattern is shown in the OpenAPI document; the validator enforces it with a sentence people can act on.
EnvironmentId = Annotated[
    str,
    Field(json_schema_extra={"pattern": ENVIRONMENT_ID_PATTERN}, examples=["gsm8k"]),
    AfterValidator(
        matching(
            ENVIRONMENT_ID_PATTERN,
            "must be 1-64 lowercase letters, digits and '-', starting and ending with a letter or digit",
        )
    ),
]
Version = Annotated[
    str,
    Field(json_schema_extra={"pattern": VERSION_PATTERN}, examples=["1", "2026.06"]),
    AfterValidator(
        matching(
            VERSION_PATTERN,
            "must be 1-32 letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
        )
    ),
]
GroupName = Annotated[
    str,
    Field(json_schema_extra={"pattern": GROUP_PATTERN}, examples=["gsm8k-maintainers"]),
    AfterValidator(
        matching(
            GROUP_PATTERN, "must be 1-128 letters, digits and '_', '.', '@', '+', '=', '-' (a Cognito group)"
        )
    ),
]


class CreateEnvironmentRequest(StrictRequest):
    environment_id: EnvironmentId
    version: Version
    publisher_group: GroupName | None = Field(
        default=None,
        description=(
            "a Cognito group whose members may publish versions of this environment too; set by the "
            "first publisher (who becomes the owner) and changed only by the owner; absent leaves it as is"
        ),
    )


class EnvironmentUpload(LazyModel):
    """Where to PUT the bundle zip, with which headers; registration starts when the upload lands."""

    environment_id: str
    version: str
    bundle_key: str
    upload_url: str
    upload_method: str = "PUT"
    upload_headers: dict[str, str] = Field(
        description="send exactly these headers with the PUT: they are signed into the URL and name you "
        "as the publisher"
    )
    owner: str = Field(description="the user id of the environment's owner")
    publisher_group: str | None = Field(default=None, description="the group whose members publish too")
    expires_in: int = Field(description="seconds the upload URL stays valid")


class EnvironmentView(EnvironmentRecord):
    """A version as lists show it, with who may publish the environment's next versions."""

    owner: str | None = Field(
        default=None,
        description="the user id of the environment's owner (`operator` for one first published by a direct "
        "bucket upload); none for one published before environments had owners",
    )
    publisher_group: str | None = Field(
        default=None,
        description="the Cognito group whose members publish versions too, if the owner named one",
    )


class EnvironmentList(Listing):
    items: list[EnvironmentView]
