"""A provider kind that exists only in tests, registered the way docs/adding-a-provider-kind.md adds one:
its three modules under the names the registries look for, and its name in ``PROVIDER_KINDS``."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import import_module

from benchgen import vocabulary
from benchgen.providers.definition import ProviderDefinition

NAME = "throwaway"
# Where each registry finds a kind's module, and this kind's stand-in for it.
MODULES = {
    f"benchgen.providers.{NAME}": "tests.throwaway.definition",
    f"benchgen.aws.providers.{NAME}": "tests.throwaway.adapter",
    f"localcloud.providers.{NAME}": "tests.throwaway.local_fake",
}


@contextmanager
def registered() -> Iterator[ProviderDefinition]:
    """The throwaway kind registered while the block runs; everything as it was afterwards."""
    kinds = vocabulary.PROVIDER_KINDS
    vocabulary.PROVIDER_KINDS = (*kinds, NAME)
    try:
        for name, source in MODULES.items():
            sys.modules[name] = import_module(source)
        from tests.throwaway.definition import PROVIDER

        yield PROVIDER
    finally:
        for name in MODULES:
            sys.modules.pop(name, None)
        vocabulary.PROVIDER_KINDS = kinds
