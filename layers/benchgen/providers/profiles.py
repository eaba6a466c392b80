"""What each provider kind can do at most, what one connection accepts, and the check every request passes.

A connection's profile names the training methods, model families, export profiles and limits it accepts.
It starts from its provider's capabilities (:data:`PROVIDER_CAPABILITIES`, from the providers' documented
offers) and may narrow them, never widen them. A request outside the profile is refused with
:class:`Unsupported`, whose message names what is unsupported and what would be accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, model_validator

from benchgen.errors import BenchGenError
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import Method

if TYPE_CHECKING:
    from benchgen.records.connections import ConnectionRecord


class Unsupported(BenchGenError):
    """A request a connection (or its provider) cannot serve; says what would be accepted instead."""


class ProviderKind(StrEnum):
    BEDROCK = "bedrock"
    SAGEMAKER = "sagemaker"
    # Any service that speaks OpenAI's API (a base URL): Together-like hosts, self-hosted vLLM-like servers.
    OPENAI_COMPATIBLE = "openai-compatible"


#: A model family entry meaning "any model": providers that train whatever base model they are given.
ANY_FAMILY = "*"
FAMILY_PATTERN = r"^(?:\*|[a-z0-9][a-z0-9.-]{0,63})$"

# How a family is recognised in a base model id, where its name alone is not in the id (Bedrock writes
# Llama 3.1 as "meta.llama3-1-8b-instruct-v1:0"); other families match by name, case-insensitively.
_FAMILY_MARKERS: dict[str, tuple[str, ...]] = {
    "nova": ("amazon.nova-",),
    "llama3.1": ("llama3-1", "llama-3.1", "llama3.1"),
    "claude-3-haiku": ("claude-3-haiku",),
}


def family_matches(family: str, base_model: str) -> bool:
    """Whether ``base_model`` (a provider's model id) belongs to ``family``."""
    if family == ANY_FAMILY:
        return True
    model = base_model.lower()
    return any(marker in model for marker in _FAMILY_MARKERS.get(family, (family,)))


class ConnectionLimits(BaseModel):
    """The most a connection takes in one training request; ``None`` where it sets no limit."""

    model_config = ConfigDict(extra="forbid")

    max_rows: int | None = Field(default=None, ge=1, le=10_000_000, description="training rows per job")
    max_row_tokens: int | None = Field(
        default=None, ge=1, le=10_000_000, description="approximate tokens of one row"
    )


class ConnectionProfile(BaseModel):
    """What a connection accepts: training methods, model families, export profiles, and its limits."""

    model_config = ConfigDict(extra="forbid")

    methods: list[Method] = Field(min_length=1, max_length=len(Method))
    model_families: list[str] = Field(
        min_length=1,
        max_length=20,
        description=f"model families, e.g. nova, llama3.1; {ANY_FAMILY!r} accepts any base model",
        json_schema_extra={"items": {"type": "string", "pattern": FAMILY_PATTERN}},
    )
    export_profiles: list[str] = Field(
        min_length=1,
        max_length=len(PROFILES),
        description="ids of the export profiles whose files it takes (see the package export profiles)",
        json_schema_extra={"items": {"type": "string", "enum": list(PROFILES)}},
    )
    limits: ConnectionLimits = Field(default_factory=ConnectionLimits)

    @model_validator(mode="after")
    def _consistent(self) -> ConnectionProfile:
        for family in self.model_families:
            if not re.fullmatch(FAMILY_PATTERN, family):
                raise ValueError(
                    f"model family {family!r} must be {ANY_FAMILY!r} or 1-64 lowercase letters, digits, "
                    "'.' and '-' (e.g. nova, llama3.1)"
                )
        for profile_id in self.export_profiles:
            profile = PROFILES.get(profile_id)
            if profile is None:
                raise ValueError(
                    f"no export profile {profile_id!r}: the export profiles are {_list(PROFILES)}"
                )
            if not profile.methods & set(self.methods):
                raise ValueError(
                    f"export profile {profile_id} holds {_list(profile.methods)} rows, which the profile's "
                    f"methods ({_list(self.methods)}) leave out: add the method or drop the export profile"
                )
        return self


# Who each provider is in a sentence, and why it cannot do what it does not offer (providers' docs).
_TITLES: dict[ProviderKind, str] = {
    ProviderKind.BEDROCK: "Bedrock model customization",
    ProviderKind.SAGEMAKER: "SageMaker training",
    ProviderKind.OPENAI_COMPATIBLE: "an OpenAI-compatible service",
}
_METHOD_GAPS: dict[tuple[ProviderKind, Method], str] = {
    (ProviderKind.BEDROCK, Method.PREFERENCE): "Bedrock model customization has no preference type",
}
_FAMILY_GAPS: dict[ProviderKind, str] = {
    ProviderKind.BEDROCK: (
        "Bedrock model customization fine-tunes only Nova, Llama 3.1 and Claude 3 Haiku models"
    ),
}
# How each kind answers a live run: Bedrock through Converse, SageMaker through a deployed endpoint, an
# OpenAI-compatible service through chat completions.
INFERENCE_PATHS: dict[ProviderKind, str] = {
    ProviderKind.BEDROCK: "Bedrock Converse",
    ProviderKind.SAGEMAKER: "a SageMaker endpoint (InvokeEndpoint)",
    ProviderKind.OPENAI_COMPATIBLE: "chat completions ({base_url}/chat/completions)",
}

#: The most each provider kind can do (a connection's profile may only narrow it).
PROVIDER_CAPABILITIES: dict[ProviderKind, ConnectionProfile] = {
    # Demonstration only (no preference type); Nova, Llama 3.1 and Claude 3 Haiku; Nova takes up to 20,000
    # training rows, the most of the three (Llama 3.1 takes 10,000, which its export profile enforces).
    ProviderKind.BEDROCK: ConnectionProfile(
        methods=[Method.DEMONSTRATION],
        model_families=["nova", "llama3.1", "claude-3-haiku"],
        export_profiles=["bedrock-conversation", "bedrock-prompt-completion"],
        limits=ConnectionLimits(max_rows=20_000),
    ),
    # SFT and DPO (serverless customization or script mode with TRL), on whatever base model it is given.
    ProviderKind.SAGEMAKER: ConnectionProfile(
        methods=[Method.DEMONSTRATION, Method.PREFERENCE],
        model_families=[ANY_FAMILY],
        export_profiles=["sagemaker-sft", "sagemaker-dpo", "trl-sft", "trl-dpo"],
    ),
    # OpenAI-style fine-tuning APIs (Together, Fireworks...) take OpenAI's SFT and DPO rows.
    ProviderKind.OPENAI_COMPATIBLE: ConnectionProfile(
        methods=[Method.DEMONSTRATION, Method.PREFERENCE],
        model_families=[ANY_FAMILY],
        export_profiles=["openai-chat", "openai-preference", "together-sft", "together-dpo"],
    ),
}


def _list(values: Iterable[str]) -> str:
    return ", ".join(str(value) for value in values) or "nothing"


def _needs(*, method: Method | None = None, export_profile: str | None = None) -> str:
    """Which provider kinds offer ``method`` and ``export_profile``, as "needs a ... connection"."""
    kinds = [
        kind.value
        for kind, capability in PROVIDER_CAPABILITIES.items()
        if (method is None or method in capability.methods)
        and (export_profile is None or export_profile in capability.export_profiles)
    ]
    if not kinds:
        return "is offered by no provider kind"
    return f"needs {_a(' or '.join(kinds))} connection"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _widening(provider: ProviderKind, requested: ConnectionProfile) -> list[str]:
    """What ``requested`` asks for beyond its provider's capabilities, each with the reason."""
    capability = PROVIDER_CAPABILITIES[provider]
    title = _TITLES[provider]
    problems = [
        f"{method} training ({_METHOD_GAPS.get((provider, method), f'{title} does not offer it')})"
        for method in requested.methods
        if method not in capability.methods
    ]
    problems += [
        f"export profile {profile_id} ({title} does not read its files)"
        for profile_id in requested.export_profiles
        if profile_id not in capability.export_profiles
    ]
    if ANY_FAMILY not in capability.model_families:
        gap = _FAMILY_GAPS.get(provider, f"{title} trains {_list(capability.model_families)} only")
        problems += [
            f"model family {family} ({gap})"
            for family in requested.model_families
            if family not in capability.model_families
        ]
    for name in ("max_rows", "max_row_tokens"):
        most = getattr(capability.limits, name)
        asked = getattr(requested.limits, name)
        if most is not None and asked is not None and asked > most:
            problems.append(f"{name} {asked} ({title} takes at most {most})")
    return problems


def narrow(provider: ProviderKind, requested: ConnectionProfile | None) -> ConnectionProfile:
    """The profile a new connection keeps: its provider's whole capabilities, or ``requested`` if it
    only narrows them (a limit it leaves unset stays the provider's). Widening raises :class:`Unsupported`.
    """
    capability = PROVIDER_CAPABILITIES[provider]
    if requested is None:
        return capability.model_copy(deep=True)
    problems = _widening(provider, requested)
    if problems:
        raise Unsupported(
            f"{_a(provider)} connection's profile may only narrow what its provider can do, and this one "
            f"asks for {'; '.join(problems)}. {_a(provider).capitalize()} connection accepts methods "
            f"{_list(capability.methods)}, model families {_list(capability.model_families)}, export "
            f"profiles {_list(capability.export_profiles)}: narrow the profile to those, or leave it out "
            "to take them all"
        )
    limits = ConnectionLimits(
        max_rows=requested.limits.max_rows or capability.limits.max_rows,
        max_row_tokens=requested.limits.max_row_tokens or capability.limits.max_row_tokens,
    )
    return requested.model_copy(update={"limits": limits}, deep=True)


def _check_method(connection: ConnectionRecord, method: Method) -> None:
    accepted = connection.profile.methods
    if method in accepted:
        return
    provider = connection.provider
    if method not in PROVIDER_CAPABILITIES[provider].methods:
        gap = _METHOD_GAPS.get((provider, method), f"{_TITLES[provider]} does not offer {method} training")
        raise Unsupported(
            f"{_sentence(gap)}: {method} training {_needs(method=method)}; "
            f"this connection accepts {_list(accepted)}"
        )
    raise Unsupported(
        f"this connection's profile leaves out {method} training (its provider offers it): this connection "
        f"accepts {_list(accepted)}; use {_a(provider)} connection whose profile includes {method}"
    )


def _check_export_profile(connection: ConnectionRecord, export_profile: str, method: Method | None) -> None:
    accepted = connection.profile.export_profiles
    profile = PROFILES.get(export_profile)
    if profile is None:
        raise Unsupported(f"no export profile {export_profile!r}: this connection accepts {_list(accepted)}")
    provider = connection.provider
    if export_profile not in PROVIDER_CAPABILITIES[provider].export_profiles:
        raise Unsupported(
            f"{_sentence(_TITLES[provider])} does not read {export_profile} files: {export_profile} "
            f"{_needs(export_profile=export_profile)}; "
            f"this connection accepts {_list(accepted)}"
        )
    if export_profile not in accepted:
        raise Unsupported(
            f"this connection's profile leaves out export profile {export_profile} (its provider reads it): "
            f"this connection accepts {_list(accepted)}"
        )
    if method is not None and not profile.accepts(method):
        fitting = [profile_id for profile_id in accepted if PROFILES[profile_id].accepts(method)]
        raise Unsupported(
            f"export profile {export_profile} holds {_list(profile.methods)} rows, not {method}: "
            f"for {method} this connection accepts {_list(fitting)}"
        )


def _check_base_model(connection: ConnectionRecord, base_model: str) -> None:
    accepted = connection.profile.model_families
    if any(family_matches(family, base_model) for family in accepted):
        return
    provider = connection.provider
    offered = PROVIDER_CAPABILITIES[provider].model_families
    if any(family_matches(family, base_model) for family in offered):
        raise Unsupported(
            f"base model {base_model} is of a family this connection's profile leaves out: it accepts "
            f"{_list(accepted)}"
        )
    gap = _FAMILY_GAPS.get(provider, f"{_TITLES[provider]} trains {_list(offered)} only")
    raise Unsupported(
        f"{_sentence(gap)}, and base model {base_model} is none of them: "
        f"this connection accepts {_list(accepted)}"
    )


def _check_inference(connection: ConnectionRecord) -> None:
    if connection.provider is ProviderKind.SAGEMAKER and not connection.endpoint_name:
        raise Unsupported(
            "this sagemaker connection names no endpoint, and live runs on SageMaker call "
            f"{INFERENCE_PATHS[ProviderKind.SAGEMAKER]}: create a sagemaker connection with endpoint_name, "
            "or use a bedrock or openai-compatible connection"
        )


def _check_limits(connection: ConnectionRecord, rows: int | None, row_tokens: int | None) -> None:
    limits = connection.profile.limits
    if rows is not None and limits.max_rows is not None and rows > limits.max_rows:
        raise Unsupported(
            f"{rows} training rows are more than this connection accepts (at most {limits.max_rows}): "
            "build the package with fewer rows, or use a connection with a higher limit"
        )
    if row_tokens is not None and limits.max_row_tokens is not None and row_tokens > limits.max_row_tokens:
        raise Unsupported(
            f"rows of about {row_tokens} tokens are longer than this connection accepts (at most "
            f"{limits.max_row_tokens}): leave the longest examples out, or use another connection"
        )


def check_request(
    connection: ConnectionRecord,
    *,
    method: Method | None = None,
    export_profile: str | None = None,
    base_model: str | None = None,
    inference: bool = False,
    rows: int | None = None,
    row_tokens: int | None = None,
) -> None:
    """Refuse, with :class:`Unsupported`, a request ``connection`` cannot serve.

    Each argument given is one thing asked of it: training with ``method`` on files of ``export_profile``
    for ``base_model`` with ``rows`` rows of at most ``row_tokens`` tokens, and (``inference``) answering
    live runs. Arguments left out are not checked.
    """
    if method is not None:
        _check_method(connection, method)
    if export_profile is not None:
        _check_export_profile(connection, export_profile, method)
    if base_model is not None:
        _check_base_model(connection, base_model)
    if inference:
        _check_inference(connection)
    _check_limits(connection, rows, row_tokens)
