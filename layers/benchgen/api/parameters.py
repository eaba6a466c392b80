"""The path, query and header parameters the routers declare: a malformed value is refused naming the
parameter, never looked up."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query

from benchgen.requests.schemas.common import ID_PATTERN, IDEMPOTENCY_KEY_PATTERN, NEXT_TOKEN_PATTERN

NextToken = Annotated[str | None, Query(pattern=NEXT_TOKEN_PATTERN, description="from the previous page")]
ResourceId = Annotated[str, Path(pattern=ID_PATTERN)]
# Any id, for the route that reads a run: an id no run can have is answered with why a submission uploaded
# under it was refused (benchgen.requests.runs.run_detail), since whoever uploaded there asks about it.
AnyRunId = Annotated[str, Path(min_length=1, max_length=1024)]


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
