"""Idempotency-Key: a create request that is retried gets what its first attempt created.

Every creating request (a run, a preparation, a training run, an evaluation) goes through
:func:`create_once`, so the four keep their keys alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from benchgen.requests.errors import Conflict, Unprocessable

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
    from aws_lambda_powertools.utilities.typing import LambdaContext

#: How long an Idempotency-Key keeps answering with what its first request created.
IDEMPOTENCY_WINDOW_S = 24 * 3600

Created = TypeVar("Created")


def create_once(
    create: Callable[[], Created],
    *,
    id_of: Callable[[Created], str],
    read: Callable[[str], Created],
    noun: str,
    caller: str,
    key: str | None,
    body: dict[str, Any],
    persistence: BasePersistenceLayer,
    context: LambdaContext | None = None,
) -> Created:
    """``create()``; with an Idempotency-Key, once per (caller, key): a retry gets what the first request
    created, read again with ``read`` from the id ``id_of`` gave.

    The key is the caller's with the header's value, so two users' keys never meet, and each ``noun``
    keeps its own records, so one key sent to create a run and a preparation creates both. The same key
    with another body is refused, and so is a retry while the first request is still being answered.
    Only the id is kept with the key, never the body; a failed request keeps nothing.
    """
    if key is None:
        return create()
    # Imported by a request that carries a key: powertools' idempotency package imports boto3, which the
    # API's start would otherwise pay for before its first request.
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    config = IdempotencyConfig(
        event_key_jmespath="[caller, key]",
        payload_validation_jmespath="body",
        expires_after_seconds=IDEMPOTENCY_WINDOW_S,
    )
    function = "api"
    if context is not None:
        # A request cut short by the function's timeout holds the key only until that deadline.
        config.register_lambda_context(context)
        function = context.function_name

    def created_id(*, attempt: dict[str, Any]) -> dict[str, str]:
        return {"id": id_of(create())}

    once = idempotent_function(
        created_id,
        data_keyword_argument="attempt",
        persistence_store=persistence,
        config=config,
        key_prefix=f"{function}.create {noun}",
    )
    try:
        created: dict[str, str] = once(attempt={"caller": caller, "key": key, "body": body})
    except IdempotencyValidationError:
        raise Unprocessable(
            f"Idempotency-Key {key!r} was already used with a different body: resend the same body to get "
            f"that {noun}, or use a new key for a new {noun}"
        ) from None
    except IdempotencyAlreadyInProgressError:
        raise Conflict(
            f"a request with Idempotency-Key {key!r} is still being answered: retry in a moment"
        ) from None
    return read(created["id"])
