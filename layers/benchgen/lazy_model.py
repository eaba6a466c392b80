"""The base of models that many functions import and few validate at their start.

Pydantic builds a model's validator and serializer as its class is created, unless the model defers
that to its first use (`defer_build`). A function imports every model its modules define (a run record
brings a dozen) and validates a few: built at import, the rest cost every cold start for nothing.

An instance a module makes at import (a default, a provider's capabilities) would build its model there
and then: it is made with ``model_construct``, which builds nothing and checks nothing, and
tests/unit/test_model_constants.py holds each to what validating its values makes.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema


class LazyModel(BaseModel):
    """A pydantic model whose validator is built when it first validates or serializes."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        # A field's default is written into the schema by its model's serializer, which a default made
        # at import without building (above) does not have yet.
        for field in cls.model_fields.values():
            if isinstance(field.default, BaseModel):
                type(field.default).model_rebuild()
        schema: JsonSchemaValue = super().__get_pydantic_json_schema__(core_schema, handler)
        return schema
