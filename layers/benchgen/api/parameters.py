"""The path, query and header parameters the routers declare: a malformed value is refused naming the
parameter, never looked up."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query

from benchgen.bucket_layout import RUN_ID_PATTERN
from benchgen.requests.schemas.common import ID_PATTERN, IDEMPOTENCY_KEY_PATTERN, NEXT_TOKEN_PATTERN

NextToken = Annotated[str | None, Query(pattern=NEXT_TOKEN_PATTERN, description="from the previous page")]
# An id of another shape is answered 404, saying why (benchgen.api.errors.validation_answer).
ResourceId = Annotated[str, Path(pattern=ID_PATTERN)]
RunId = Annotated[str, Path(pattern=RUN_ID_PATTERN)]


def _idempotency_key(noun: str) -> Header:
    """The optional Idempotency-Key header of a route that creates a ``noun``."""
    return Header(
        alias="Idempotency-Key",
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description=(
            f"any unique value (a UUID, say): a retry with the same key and body gets the same {noun} "
            "for 24 hours; the same key with another body is refused (422)"
        ),
    )


RunIdempotencyKey = Annotated[str | None, _idempotency_key("run")]
PreparationIdempotencyKey = Annotated[str | None, _idempotency_key("preparation")]
TrainingRunIdempotencyKey = Annotated[str | None, _idempotency_key("training run")]
EvaluationIdempotencyKey = Annotated[str | None, _idempotency_key("evaluation")]
