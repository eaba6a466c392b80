"""A provider kind and a scoring template that exist only in tests, each registered the way the docs add
one: a provider kind (docs/adding-a-provider-kind.md) by its three modules under the names the registries
look for and its name in ``PROVIDER_KINDS``; a template (docs/architecture.md#adding-a-scoring-template)
by its module and its example generator, and its name in ``TEMPLATES``."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import import_module

from benchgen import vocabulary
from benchgen.providers.definition import ProviderDefinition
from benchgen.scoring.templates import TemplateDefinition

NAME = "throwaway"
# Where each registry finds a kind's module, and this kind's stand-in for it.
MODULES = {
    f"benchgen.providers.{NAME}": "tests.throwaway.definition",
    f"benchgen.aws.providers.{NAME}": "tests.throwaway.adapter",
    f"localcloud.providers.{NAME}": "tests.throwaway.local_fake",
}


# The files a template is: where the registries find its module and its example generator (the third
# file is the list of templates, vocabulary.py).
TEMPLATE_MODULES = {
    f"benchgen.scoring.{NAME}": "tests.throwaway.template",
    f"examplegen.{NAME}_env": "tests.throwaway.template_env",
}


@contextmanager
def _listed(names: str, modules: Mapping[str, str]) -> Iterator[None]:
    """``NAME`` added to the list ``vocabulary.<names>`` and ``modules`` standing where the registries look
    for them, while the block runs; everything as it was afterwards."""
    listed = getattr(vocabulary, names)
    setattr(vocabulary, names, (*listed, NAME))
    try:
        for name, source in modules.items():
            sys.modules[name] = import_module(source)
        yield
    finally:
        for name in modules:
            sys.modules.pop(name, None)
        setattr(vocabulary, names, listed)


@contextmanager
def registered() -> Iterator[ProviderDefinition]:
    """The throwaway kind registered while the block runs; everything as it was afterwards."""
    with _listed("PROVIDER_KINDS", MODULES):
        from tests.throwaway.definition import PROVIDER

        yield PROVIDER


@contextmanager
def registered_template() -> Iterator[TemplateDefinition]:
    """The throwaway template registered while the block runs; everything as it was afterwards."""
    with _listed("TEMPLATES", TEMPLATE_MODULES):
        from tests.throwaway.template import TEMPLATE

        yield TEMPLATE
