"""The base of models that many functions import and few validate at their start.

Pydantic builds a model's validator and serializer as its class is created, unless the model defers
that to its first use (`defer_build`). A function imports every model its modules define (a run record
brings a dozen) and validates a few: built at import, the rest cost every cold start for nothing.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class LazyModel(BaseModel):
    """A pydantic model whose validator is built when it first validates or serializes."""

    model_config = ConfigDict(defer_build=True)
