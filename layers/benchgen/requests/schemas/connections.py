"""The bodies of ``/connections``."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import ConfigDict, Field, model_validator

from benchgen.lazy_model import LazyModel
from benchgen.providers.capabilities import ConnectionProfile
from benchgen.providers.connections import ConnectionRecord, ConnectionTarget
from benchgen.requests.errors import ApiError
from benchgen.requests.schemas.common import Text

# Field names that say "a key is here": api_key, apiKey, key, secret, client_secret, password, token...
_KEY_FIELD = re.compile(r"(?:key|secret|password|token)$")
# Provider model ids: Bedrock's "amazon.nova-lite-v1:0", Hugging Face's "Qwen/Qwen2.5-7B-Instruct".
BASE_MODEL_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,255}$"


class KeyInRequest(ApiError):
    """A key was sent in the body; it is not kept, logged or echoed."""


def _names_a_key(field: str) -> bool:
    return bool(_KEY_FIELD.search(field.lower().replace("_", "").replace("-", "")))


class CreateConnectionRequest(ConnectionTarget):
    """A new connection. Its key, if the provider needs one, stays in Secrets Manager: pass ``secret_arn``."""

    model_config = ConfigDict(extra="forbid")

    name: Annotated[Text, Field(min_length=1, max_length=128, examples=["together"])]
    profile: ConnectionProfile | None = Field(
        default=None,
        description="what the connection accepts, within its provider's capabilities; absent takes them all",
    )

    @model_validator(mode="before")
    @classmethod
    def _refuse_keys(cls, data: Any) -> Any:
        # Raised as an API error rather than a validation error, so that it is a 400 naming only the
        # field, and so nothing (not even pydantic's error list) ever holds the value.
        if isinstance(data, dict):
            named = sorted(
                str(field)
                for field in data
                if str(field) not in cls.model_fields and _names_a_key(str(field))
            )
            if named:
                raise KeyInRequest(
                    f"{', '.join(named)}: a connection never takes a key itself. Put the key in AWS Secrets "
                    "Manager (in this deployment's account and region) and pass the secret's ARN as "
                    "secret_arn; the key sent was not kept"
                )
        return data


class ConnectionList(LazyModel):
    items: list[ConnectionRecord]
    next_token: str | None = Field(default=None, description="absent on the last page")
