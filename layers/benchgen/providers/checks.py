"""The check every request to a connection passes, and the narrowing of a new connection's profile.

Both read what each kind can do from its definition (``benchgen.providers.registry``): a request outside a
connection's profile is refused with :class:`~benchgen.errors.Unsupported`, whose message
says whether the provider or only this connection's profile lacks it, and which kinds offer it.
"""

from __future__ import annotations

from benchgen.errors import Unsupported
from benchgen.providers.capabilities import (
    ANY_FAMILY,
    ConnectionLimits,
    ConnectionProfile,
    either,
    family_matches,
    listed,
)
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.registry import provider, providers
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import Method, ProviderKind


def _needs(*, method: Method | None = None, export_profile: str | None = None) -> str:
    """Which provider kinds offer ``method`` and ``export_profile``, as "needs a ... connection"."""
    kinds = [
        definition.kind
        for definition in providers()
        if (method is None or method in definition.capabilities.methods)
        and (export_profile is None or export_profile in definition.capabilities.export_profiles)
    ]
    if not kinds:
        return "is offered by no provider kind"
    return f"needs {_a(either(kinds))} connection"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _a(word: str) -> str:
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def _widening(kind: ProviderKind, requested: ConnectionProfile) -> list[str]:
    """What ``requested`` asks for beyond its provider's capabilities, each with the reason."""
    definition = provider(kind)
    capability = definition.capabilities
    title = definition.title
    problems = [
        f"{method} training ({definition.method_gaps.get(method, f'{title} does not offer it')})"
        for method in requested.methods
        if method not in capability.methods
    ]
    problems += [
        f"export profile {profile_id} ({title} does not read its files)"
        for profile_id in requested.export_profiles
        if profile_id not in capability.export_profiles
    ]
    if ANY_FAMILY not in capability.model_families:
        gap = definition.family_gap or f"{title} trains {listed(capability.model_families)} only"
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


def narrow(kind: ProviderKind, requested: ConnectionProfile | None) -> ConnectionProfile:
    """The profile a new connection keeps: its provider's whole capabilities, or ``requested`` if it
    only narrows them (a limit it leaves unset stays the provider's). Widening raises :class:`Unsupported`.
    """
    capability = provider(kind).capabilities
    if requested is None:
        return capability.model_copy(deep=True)
    problems = _widening(kind, requested)
    if problems:
        raise Unsupported(
            f"{_a(kind)} connection's profile may only narrow what its provider can do, and this one "
            f"asks for {'; '.join(problems)}. {_a(kind).capitalize()} connection accepts methods "
            f"{listed(capability.methods)}, model families {listed(capability.model_families)}, export "
            f"profiles {listed(capability.export_profiles)}: narrow the profile to those, or leave it out "
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
    definition = provider(connection.provider)
    if method not in definition.capabilities.methods:
        gap = definition.method_gaps.get(method, f"{definition.title} does not offer {method} training")
        raise Unsupported(
            f"{_sentence(gap)}: {method} training {_needs(method=method)}; "
            f"this connection accepts {listed(accepted)}"
        )
    raise Unsupported(
        f"this connection's profile leaves out {method} training (its provider offers it): this connection "
        f"accepts {listed(accepted)}; use {_a(connection.provider)} connection whose profile includes "
        f"{method}"
    )


def _check_export_profile(connection: ConnectionRecord, export_profile: str, method: Method | None) -> None:
    accepted = connection.profile.export_profiles
    profile = PROFILES.get(export_profile)
    if profile is None:
        raise Unsupported(f"no export profile {export_profile!r}: this connection accepts {listed(accepted)}")
    definition = provider(connection.provider)
    if export_profile not in definition.capabilities.export_profiles:
        raise Unsupported(
            f"{_sentence(definition.title)} does not read {export_profile} files: {export_profile} "
            f"{_needs(export_profile=export_profile)}; "
            f"this connection accepts {listed(accepted)}"
        )
    if export_profile not in accepted:
        raise Unsupported(
            f"this connection's profile leaves out export profile {export_profile} (its provider reads it): "
            f"this connection accepts {listed(accepted)}"
        )
    if method is not None and not profile.accepts(method):
        fitting = [profile_id for profile_id in accepted if PROFILES[profile_id].accepts(method)]
        raise Unsupported(
            f"export profile {export_profile} holds {listed(profile.methods)} rows, not {method}: "
            f"for {method} this connection accepts {listed(fitting)}"
        )


def _check_base_model(connection: ConnectionRecord, base_model: str) -> None:
    accepted = connection.profile.model_families
    if any(family_matches(family, base_model) for family in accepted):
        return
    definition = provider(connection.provider)
    offered = definition.capabilities.model_families
    if any(family_matches(family, base_model) for family in offered):
        raise Unsupported(
            f"base model {base_model} is of a family this connection's profile leaves out: it accepts "
            f"{listed(accepted)}"
        )
    gap = definition.family_gap or f"{definition.title} trains {listed(offered)} only"
    raise Unsupported(
        f"{_sentence(gap)}, and base model {base_model} is none of them: "
        f"this connection accepts {listed(accepted)}"
    )


def _check_inference(connection: ConnectionRecord) -> None:
    definition = provider(connection.provider)
    field = definition.inference_field
    if field is None or getattr(connection, field) is not None:
        return
    others = [other.kind for other in providers() if other.kind != connection.provider]
    raise Unsupported(
        f"this {connection.provider} connection {definition.inference_gap}: create {_a(connection.provider)} "
        f"connection with {field}" + (f", or use {_a(either(others))} connection" if others else "")
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
