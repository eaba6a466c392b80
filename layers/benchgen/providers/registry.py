"""The provider kinds' definitions, each found by its name in ``benchgen.vocabulary.PROVIDER_KINDS``.

A kind's definition is the ``PROVIDER`` of ``benchgen/providers/<kind>.py`` (dashes read as
underscores). Looking a kind up imports its module once (Python keeps it in ``sys.modules``): only the
kinds a function asks about are loaded, and listing them loads each.
"""

from __future__ import annotations

from benchgen import vocabulary
from benchgen.providers.definition import ProviderDefinition
from benchgen.vocabulary import ProviderKind

PACKAGE = "benchgen.providers"


def provider(kind: str) -> ProviderDefinition:
    """The definition of ``kind`` (a :class:`ProviderKind` or its name)."""
    # A kind's definition subclasses the abstract ProviderDefinition, which mypy will not take as a type[T].
    return ProviderKind(kind).defined_in(
        PACKAGE,
        "PROVIDER",
        ProviderDefinition,  # type: ignore[type-abstract]
        "kind",
        "docs/adding-a-provider-kind.md",
    )


def providers() -> list[ProviderDefinition]:
    """Every kind's definition, in the order of ``PROVIDER_KINDS``."""
    return [provider(kind) for kind in vocabulary.PROVIDER_KINDS]
