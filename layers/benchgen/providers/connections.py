"""A user's connection to a provider: where it reaches the provider, and the profile it accepts.

Which of the fields a connection holds is its kind's to say (``requires`` and ``accepts`` of its
definition); a connection that lacks one its kind needs, or holds one its kind does not take, is invalid,
and the message names the kinds that do take it. Keys are never part of a connection: only the ARN of
the Secrets Manager secret that holds one, which any kind may name.
"""

from __future__ import annotations

from collections.abc import Iterable
from ipaddress import ip_address
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, model_validator

from benchgen.lazy_model import LazyModel
from benchgen.providers.capabilities import ConnectionProfile
from benchgen.providers.registry import provider, providers
from benchgen.records.bounds import Text
from benchgen.records.prices import ModelPrices
from benchgen.records.runs import (
    MAX_MODEL_TIMEOUT_S,
    ConnectionQuotas,
)
from benchgen.records.timestamps import utc_now
from benchgen.stored_numbers import Storable
from benchgen.vocabulary import ProviderKind

REGION_PATTERN = r"^[a-z]{2}(?:-[a-z]+)+-\d{1,2}$"
ROLE_ARN_PATTERN = r"^arn:aws(?:-[a-z]+)*:iam::\d{12}:role/[A-Za-z0-9+=,.@_/-]{1,512}$"
# A pattern, not a secret: what a Secrets Manager secret's ARN looks like.
SECRET_ARN_PATTERN = (
    r"^arn:aws(?:-[a-z]+)*:secretsmanager:[a-z]{2}(?:-[a-z]+)+-\d{1,2}:\d{12}:secret:"  # noqa: S105
    r"[A-Za-z0-9/_+=.@-]{1,512}$"
)
ENDPOINT_NAME_PATTERN = r"^[A-Za-z0-9](?:-*[A-Za-z0-9]){0,62}$"

#: The fields whose use depends on the kind, in the order a connection is checked.
KIND_FIELDS = ("region", "role_arn", "base_url", "endpoint_name", "timeout_s")
# What a kind that needs a field asks for, where its name alone would not say enough; and how a field is
# refused where its kind does not take it, where that is not "<a kind> connection takes no <field>".
_NEEDS = {"region": "its region, e.g. us-east-1", "base_url": "base_url, e.g. https://api.together.xyz/v1"}
_REFUSALS = {"endpoint_name": "{field} belongs to {takers} connections only"}
_REFUSAL = "{a_kind} connection takes no {field} ({takers} only)"


def _and(words: Iterable[str]) -> str:
    *others, last = words
    return f"{', '.join(others)} and {last}" if others else last


def takers(field: str) -> list[str]:
    """The kinds whose connections take ``field``."""
    return [
        definition.kind for definition in providers() if field in definition.requires | definition.accepts
    ]


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _refusal(kind: str, field: str) -> str:
    return _REFUSALS.get(field, _REFUSAL).format(a_kind=_a(kind), field=field, takers=_and(takers(field)))


def is_loopback(host: str) -> bool:
    """Whether ``host`` (as a URL gives it, lowercased) is this machine's loopback: ``localhost``, or an IP
    address in 127.0.0.0/8 or ``::1``. Read as an address, never by its first letters: 127.evil.example is
    a name anyone's DNS can point anywhere."""
    if host == "localhost":
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def base_url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a provider's base URL, or None if it can."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return "base_url must be an absolute https URL, such as https://api.together.xyz/v1"
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        # A key in a URL would be stored and logged with it: keys go to Secrets Manager only.
        return (
            "base_url must hold no user name, password, query or fragment: put an API key in AWS Secrets "
            "Manager and pass its ARN as secret_arn"
        )
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        return (
            "base_url must use https (plain http is accepted only for a server on this machine's loopback: "
            "localhost, an address in 127.0.0.0/8, or [::1])"
        )
    return None


class ConnectionTarget(LazyModel):
    """Where a connection reaches its provider. Keys are never part of it: only a Secrets Manager ARN."""

    name: Text = Field(min_length=1, max_length=128)
    provider: ProviderKind
    region: str | None = Field(
        default=None, pattern=REGION_PATTERN, description=f"{_and(takers('region'))}: the AWS region"
    )
    role_arn: str | None = Field(
        default=None,
        pattern=ROLE_ARN_PATTERN,
        description=f"{_and(takers('role_arn'))}: the IAM role the provider assumes to train",
    )
    base_url: str | None = Field(
        default=None,
        max_length=512,
        description=f"{_and(takers('base_url'))}: the API's base URL (https; http only on loopback)",
    )
    secret_arn: str | None = Field(
        default=None,
        pattern=SECRET_ARN_PATTERN,
        description="the ARN of a Secrets Manager secret holding the provider's API key (never the key)",
    )
    endpoint_name: str | None = Field(
        default=None,
        pattern=ENDPOINT_NAME_PATTERN,
        description=f"{_and(takers('endpoint_name'))}: the endpoint live runs call",
    )
    # Storable last, after the bounds, so that they stay in the JSON schema.
    timeout_s: Annotated[float, Field(gt=0, le=MAX_MODEL_TIMEOUT_S), Storable] | None = Field(
        default=None,
        strict=True,
        allow_inf_nan=False,
        description=f"{_and(takers('timeout_s'))}: the seconds one call to the model may take before the "
        "case is unanswered for it (60 when absent): whole over HTTP; to connect, and for each read of the "
        "answer, through the AWS SDK",
    )
    prices: ModelPrices | None = Field(
        default=None,
        description="what the provider charges per token; a live run copies them and records its cost",
    )
    limits: ConnectionQuotas | None = Field(
        default=None,
        description="the provider's quotas for this connection: a live run's limits default to them and "
        "may not exceed them",
    )

    @model_validator(mode="after")
    def _fits_provider(self) -> ConnectionTarget:
        definition = provider(self.provider)
        taken = definition.requires | definition.accepts
        for field in KIND_FIELDS:
            if field in definition.requires and getattr(self, field) is None:
                raise ValueError(f"{_a(self.provider)} connection needs {_NEEDS.get(field, field)}")
        if "base_url" in taken and self.base_url is not None:
            problem = base_url_problem(self.base_url)
            if problem is not None:
                raise ValueError(problem)
        for field in KIND_FIELDS:
            if field not in taken and getattr(self, field) is not None:
                raise ValueError(_refusal(self.provider, field))
        return self


class ConnectionRecord(ConnectionTarget):
    """A user's connection to a training and inference provider, with the profile it accepts."""

    connection_id: str
    owner: str
    profile: ConnectionProfile
    created_at: str = Field(default_factory=utc_now)
