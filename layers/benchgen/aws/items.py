"""Records as DynamoDB items and back: the one pair of functions every item goes through.

Floats become ``Decimal`` on the way in (DynamoDB numbers) and come back as ``int`` when whole,
``float`` otherwise.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import BaseModel, TypeAdapter

if TYPE_CHECKING:
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

ModelT = TypeVar("ModelT", bound=BaseModel)


@functools.cache
def _serializer() -> TypeSerializer:
    # boto3 is imported by the first item rather than at the cold start (see benchgen.aws.clients).
    from boto3.dynamodb.types import TypeSerializer

    return TypeSerializer()


@functools.cache
def _deserializer() -> TypeDeserializer:
    from boto3.dynamodb.types import TypeDeserializer

    return TypeDeserializer()


def _to_dynamo_value(value: Any) -> Any:
    if isinstance(value, float):
        # str() keeps the shortest repr, so 0.1 is stored as 0.1, not 0.1000000000000000055...
        return Decimal(str(value))
    if isinstance(value, dict):
        return {key: _to_dynamo_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_to_dynamo_value(item) for item in value]
    return value


def _to_plain_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {key: _to_plain_value(item) for key, item in value.items()}
    if isinstance(value, list | set):
        return [_to_plain_value(item) for item in value]
    return value


def to_attribute(value: Any) -> dict[str, Any]:
    """One JSON-ready value as a DynamoDB attribute value (what :func:`to_item` does to each field)."""
    serialized: dict[str, Any] = _serializer().serialize(_to_dynamo_value(value))
    return serialized


@functools.cache
def field_adapter(model: type[BaseModel], name: str) -> TypeAdapter[Any]:
    """Validates and dumps one field of ``model`` the way the whole record would, with the field's metadata,
    so that the record's bounds (see :mod:`benchgen.records`) hold for an update of that field alone."""
    field = model.model_fields[name]
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[(field.annotation, *field.metadata)])


def field_attribute(model: type[BaseModel], name: str, value: Any) -> dict[str, Any]:
    """``value`` as the attribute ``model``'s field ``name`` is stored as, bounded as the record bounds it."""
    adapter = field_adapter(model, name)
    return to_attribute(adapter.dump_python(adapter.validate_python(value), mode="json"))


def to_item(record: BaseModel) -> dict[str, Any]:
    """A record as a DynamoDB item (attribute-value form); ``None`` fields are left out."""
    plain = record.model_dump(mode="json", exclude_none=True)
    return {name: to_attribute(value) for name, value in plain.items()}


def plain_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """A DynamoDB item (attribute-value form) as plain JSON-like values, before any validation."""
    return {name: _to_plain_value(_deserializer().deserialize(value)) for name, value in item.items()}


def from_item(model: type[ModelT], item: Mapping[str, Any]) -> ModelT:
    """The record a DynamoDB item (attribute-value form) holds."""
    return model.model_validate(plain_item(item))
