"""Provider connections: where a user's connection reaches its provider, and the profile it accepts."""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import BaseModel, Field, model_validator

from benchgen.providers.profiles import ConnectionProfile, ProviderKind
from benchgen.records.bounds import Text
from benchgen.records.timestamps import utc_now

REGION_PATTERN = r"^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$"
ROLE_ARN_PATTERN = r"^arn:aws(?:-[a-z]+)*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"
# A pattern, not a secret: what a Secrets Manager secret's ARN looks like.
SECRET_ARN_PATTERN = (
    r"^arn:aws(?:-[a-z]+)*:secretsmanager:[a-z]{2}(?:-[a-z]+)+-\d{1,2}:\d{12}:secret:"  # noqa: S105
    r"[A-Za-z0-9/_+=.@-]{1,512}$"
)
ENDPOINT_NAME_PATTERN = r"^[A-Za-z0-9](?:-*[A-Za-z0-9]){0,62}$"
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def _base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be an OpenAI-compatible base URL, or None if it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "base_url must be an absolute https URL, such as https://api.together.xyz/v1"
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        # A key in a URL would be stored and logged with it: keys go to Secrets Manager only.
        return (
            "base_url must hold no user name, password, query or fragment: put an API key in AWS Secrets "
            "Manager and pass its ARN as secret_arn"
        )
    host = parts.hostname
    loopback = host in _LOOPBACK_HOSTS or host.startswith("127.")
    if parts.scheme == "http" and not loopback:
        return "base_url must use https (plain http is accepted only for a server on this machine's loopback)"
    return None


class ConnectionTarget(BaseModel):
    """Where a connection reaches its provider. Keys are never part of it: only a Secrets Manager ARN."""

    name: Text = Field(min_length=1, max_length=128)
    provider: ProviderKind
    region: str | None = Field(
        default=None, pattern=REGION_PATTERN, description="bedrock and sagemaker: the AWS region"
    )
    role_arn: str | None = Field(
        default=None,
        pattern=ROLE_ARN_PATTERN,
        description="bedrock and sagemaker: the IAM role the provider assumes to train",
    )
    base_url: str | None = Field(
        default=None,
        max_length=512,
        description="openai-compatible: the API's base URL (https; http only on loopback)",
    )
    secret_arn: str | None = Field(
        default=None,
        pattern=SECRET_ARN_PATTERN,
        description="the ARN of a Secrets Manager secret holding the provider's API key (never the key)",
    )
    endpoint_name: str | None = Field(
        default=None,
        pattern=ENDPOINT_NAME_PATTERN,
        description="sagemaker: the endpoint live runs call",
    )

    @model_validator(mode="after")
    def _fits_provider(self) -> ConnectionTarget:
        aws = self.provider in (ProviderKind.BEDROCK, ProviderKind.SAGEMAKER)
        if aws:
            if self.region is None:
                raise ValueError(f"a {self.provider} connection needs its region, e.g. us-east-1")
            if self.base_url is not None:
                raise ValueError(f"a {self.provider} connection takes no base_url (openai-compatible only)")
        else:
            if self.base_url is None:
                raise ValueError(
                    "an openai-compatible connection needs base_url, e.g. https://api.together.xyz/v1"
                )
            problem = _base_url_problem(self.base_url)
            if problem is not None:
                raise ValueError(problem)
            for name in ("region", "role_arn"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"an openai-compatible connection takes no {name} (bedrock and sagemaker only)"
                    )
        if self.endpoint_name is not None and self.provider is not ProviderKind.SAGEMAKER:
            raise ValueError("endpoint_name belongs to sagemaker connections only")
        return self


class ConnectionRecord(ConnectionTarget):
    """A user's connection to a training and inference provider, with the profile it accepts."""

    connection_id: str
    owner: str
    profile: ConnectionProfile
    created_at: str = Field(default_factory=utc_now)
