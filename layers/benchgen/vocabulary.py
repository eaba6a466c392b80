"""The words every layer shares: small enums and value types that records, the domain, the steps and the
API all name. They sit on the ground floor and import nothing of BenchGen, so a record can name a training
method or a run's sampling without importing the training or inference code that uses them.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StringConstraints,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

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


# A stop sequence: what the model's answer ends before; a few characters in practice, and sent with every
# request of a run, so bounded well below what a provider would take.
StopSequence = Annotated[str, StringConstraints(min_length=1, max_length=64)]


class Sampling(BaseModel):
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


class ProviderKind(str):
    """The name of a kind of provider: one of :data:`PROVIDER_KINDS`.

    An open set of names rather than an enum, so that the kinds are the ones listed when a value is read:
    a record validates its kind against that list, and JSON Schema describes the kind as an enum of it
    (as an enum's schema would be, under the same name).
    """

    __slots__ = ()

    def __new__(cls, name: str) -> ProviderKind:
        if name not in PROVIDER_KINDS:
            raise ValueError(f"{name!r} is not a provider kind: the kinds are {', '.join(PROVIDER_KINDS)}")
        return super().__new__(cls, name)

    @property
    def module(self) -> str:
        """The name of the modules that define this kind (``openai-compatible`` -> ``openai_compatible``)."""
        return self.replace("-", "_")

    @classmethod
    def _validate(cls, value: Any) -> ProviderKind:
        if isinstance(value, str) and value in PROVIDER_KINDS:
            return cls(value)
        # Worded as pydantic words an enum's refusal, so a kind reads like any other choice.
        *others, last = (repr(kind) for kind in PROVIDER_KINDS)
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
            # A named definition, so every field of this type refers to one ProviderKind schema.
            ref=f"{cls.__module__}.{cls.__qualname__}:{id(cls)}",
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"enum": list(PROVIDER_KINDS), "title": cls.__name__, "type": "string"}
