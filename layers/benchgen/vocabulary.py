"""The words every layer shares: small enums and value types that records, the domain, the steps and the
API all name. They sit on the ground floor and import nothing of BenchGen, so a record can name a training
method or a run's sampling without importing the training or inference code that uses them.
"""

from __future__ import annotations

from enum import StrEnum
from importlib import import_module
from typing import Annotated, Any, ClassVar, Self, TypeVar

from pydantic import (
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from benchgen.lazy_model import LazyModel
from benchgen.stored_numbers import Storable


class Method(StrEnum):
    """What the learner is taught: the correct answer (SFT), or to prefer it over its own wrong one."""

    DEMONSTRATION = "demonstration"
    PREFERENCE = "preference"
    REINFORCEMENT = "reinforcement"


class InferenceMode(StrEnum):
    """How a live run asks its model: a call per case, the provider's batch inference, or by size."""

    ON_DEMAND = "on_demand"
    BATCH = "batch"
    AUTO = "auto"


# `auto` sends a run to the provider's batch inference above this many cases (unless the run says another).
DEFAULT_BATCH_ABOVE_CASES = 10_000


# A stop sequence: what the model's answer ends before; a few characters in practice, and sent with every
# request of a run, so bounded well below what a provider would take.
StopSequence = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class Sampling(LazyModel):
    """Sampling parameters, named once here and translated to each provider's own names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Strict: a number is a number, never a string or a boolean read as one.
    temperature: Annotated[float, Field(ge=0, le=2, strict=True), Storable] | None = None
    max_tokens: int | None = Field(default=None, ge=1, le=32768, strict=True)
    top_p: Annotated[float, Field(gt=0, le=1, strict=True), Storable] | None = None
    stop: list[StopSequence] | None = Field(default=None, max_length=4)


#: Every kind of training and inference provider, in the order lists show them. A kind is defined by
#: its own modules, found by its name (dashes read as underscores): ``benchgen/providers/<name>.py``,
#: its adapter ``benchgen/aws/providers/<name>.py`` and its local fake ``localcloud/providers/<name>.py``
#: (docs/adding-a-provider-kind.md). Naming it here is all the registering a kind takes.
PROVIDER_KINDS: tuple[str, ...] = ("bedrock", "sagemaker", "openai-compatible")

#: Every built-in scoring template, in the order lists show them. A template is defined by its own module,
#: ``benchgen/scoring/<name>.py`` (docs/architecture.md#adding-a-scoring-template); naming it here is all the
#: registering a template takes.
TEMPLATES: tuple[str, ...] = ("math", "qa", "routing", "code", "judge")


T = TypeVar("T")


class ListedName(str):
    """A name that must be one of a list read when a value is read (:meth:`names`).

    An open set of names rather than an enum, so that the names are the ones listed when a value is read:
    a record validates its name against that list, and JSON Schema describes it as an enum of it (as an
    enum's schema would be, under the same name).
    """

    __slots__ = ()
    what: ClassVar[str]  # what one name is, in a sentence: "a provider kind"
    plural: ClassVar[str]  # what the names are, in a sentence: "the kinds"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The names a value may be, read at each call; each kind of name returns its own list."""
        raise NotImplementedError(f"{cls.__name__} must say which names it takes")

    def __new__(cls, name: str) -> Self:
        names = cls.names()
        if name not in names:
            raise ValueError(f"{name!r} is not {cls.what}: {cls.plural} are {', '.join(names)}")
        return super().__new__(cls, name)

    @property
    def module(self) -> str:
        """The name of the modules that define it (``openai-compatible`` -> ``openai_compatible``)."""
        return self.replace("-", "_")

    def defined_in(self, package: str, attribute: str, kind: type[T], field: str, guide: str) -> T:
        """The ``attribute`` of the module of ``package`` named for this name: a ``kind`` whose ``field``
        is this name, or a TypeError pointing at ``guide``. Importing it is left until a name is looked up
        (Python then keeps the module), so that only the names a function asks about are loaded."""
        module = import_module(f"{package}.{self.module}")
        definition = getattr(module, attribute, None)
        if not isinstance(definition, kind) or getattr(definition, field) != self:
            raise TypeError(
                f"{module.__name__} must name its {kind.__name__} {attribute}, with {field} {str(self)!r}: "
                f"see {guide}"
            )
        return definition

    @classmethod
    def _validate(cls, value: Any) -> Self:
        names = cls.names()
        if isinstance(value, str) and value in names:
            return cls(value)
        # Worded as pydantic words an enum's refusal, so a name reads like any other choice.
        *others, last = (repr(name) for name in names)
        expected = f"{', '.join(others)} or {last}" if others else last
        raise PydanticCustomError("enum", "Input should be {expected}", {"expected": expected})

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            cls._validate,
            json_schema_input_schema=core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str),
            # A named definition, so every field of this type refers to one schema.
            ref=f"{cls.__module__}.{cls.__qualname__}:{id(cls)}",
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"enum": list(cls.names()), "title": cls.__name__, "type": "string"}


class ProviderKind(ListedName):
    """The name of a kind of provider: one of :data:`PROVIDER_KINDS`."""

    __slots__ = ()
    what = "a provider kind"
    plural = "the kinds"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return PROVIDER_KINDS


class TemplateName(ListedName):
    """The name of a built-in scoring template: one of :data:`TEMPLATES` (what ``template:`` accepts)."""

    __slots__ = ()
    what = "a scoring template"
    plural = "the templates"

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return TEMPLATES
