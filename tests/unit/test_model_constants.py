"""The model instances a module holds from import (a default, a provider's capabilities) are valid.

They are made with ``model_construct``, which builds no validator at import and so checks nothing: each is
held here to what its model's validation makes of the same values.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from types import ModuleType

import pytest
from pydantic import BaseModel

import benchgen

# Runs as a sandboxed program's interpreter starts: importing it here would change this one's.
NOT_IMPORTED = ("benchgen.sandbox.startup",)


def _modules() -> Iterator[ModuleType]:
    for found in pkgutil.walk_packages(benchgen.__path__, prefix="benchgen."):
        if not found.name.startswith(NOT_IMPORTED):
            yield importlib.import_module(found.name)


def _held(module: ModuleType) -> Iterator[tuple[str, BaseModel]]:
    """The model instances `module` names, its classes name, or its models take as a field's default."""
    for name, value in vars(module).items():
        if isinstance(value, BaseModel):
            yield f"{module.__name__}.{name}", value
        if isinstance(value, type) and value.__module__ == module.__name__:
            for attribute, held in vars(value).items():
                if isinstance(held, BaseModel):
                    yield f"{module.__name__}.{name}.{attribute}", held
            if issubclass(value, BaseModel):
                for field_name, field in value.model_fields.items():
                    if isinstance(field.default, BaseModel):
                        yield f"{module.__name__}.{name}.{field_name} (default)", field.default


CONSTANTS = dict(held for module in _modules() for held in _held(module))


def test_the_library_holds_the_constants_it_makes_at_import() -> None:
    # Given every module of the library / Then the defaults and capabilities made at import are among them
    assert {
        "benchgen.finetune.split.DEFAULT_SHARES",
        "benchgen.judging.JUDGE_SAMPLING",
        "benchgen.providers.bedrock.Bedrock.capabilities",
        "benchgen.training.preparation.PreparationSpec.settings (default)",
    } <= set(CONSTANTS)


@pytest.mark.parametrize("name", sorted(CONSTANTS))
def test_a_constant_is_what_validating_its_values_makes(name: str) -> None:
    # Given a model instance a module makes at import
    constant = CONSTANTS[name]

    # When its values are validated by its model
    validated = type(constant).model_validate(constant.model_dump())

    # Then validation accepts them and keeps them as they are, to each value's type (a float stays a float)
    assert repr(validated) == repr(constant)
    assert validated.model_dump_json() == constant.model_dump_json()
