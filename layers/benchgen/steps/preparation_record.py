"""What the preparation state machine's Record state writes, as its functions hand it over.

Record is a DynamoDB UpdateItem built from the execution's JSON, so each value must already be in the
form its attribute takes: strings as they are, numbers as decimal strings, maps in DynamoDB's attribute-value
form. The values pass through the PreparationRecord field they fill first, so the record's bounds hold for
what the state machine writes too.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import TypeAdapter

from benchgen.aws.items import to_attribute
from benchgen.records import PreparationRecord

RECORD_STRING_FIELDS = ("state_hash",)
RECORD_NUMBER_FIELDS = ("example_count", "source_cases", "held_out_count")
RECORD_MAP_FIELDS = ("splits", "kinds", "dropped", "suggested_hyperparams")


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    field = PreparationRecord.model_fields[name]
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[(field.annotation, *field.metadata)])


def record_values(found: Mapping[str, Any]) -> dict[str, Any]:
    """``found`` (one value per RECORD_* field) bounded as the record bounds it, in Record's input form."""
    expected = {*RECORD_STRING_FIELDS, *RECORD_NUMBER_FIELDS, *RECORD_MAP_FIELDS}
    if set(found) != expected:
        raise ValueError(f"Record needs exactly {sorted(expected)}, got {sorted(found)}")
    values: dict[str, Any] = {}
    for name, value in found.items():
        adapter = _adapter(name)
        plain = adapter.dump_python(adapter.validate_python(value), mode="json")
        if name in RECORD_MAP_FIELDS:
            values[name] = to_attribute(plain)["M"]
        else:
            values[name] = str(plain)
    return values
