"""Idempotency-Key: a create request that is retried gets what its first attempt created."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    BasePersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.api.errors import Conflict, Unprocessable

#: How long an Idempotency-Key keeps answering with what its first request created.
IDEMPOTENCY_WINDOW_S = 24 * 3600


def once_per_key(
    create: Callable[..., dict[str, str]],
    *,
    caller: str,
    key: str,
    body: dict[str, Any],
    persistence: BasePersistenceLayer,
    noun: str,
    context: LambdaContext | None = None,
) -> dict[str, str]:
    """``create(attempt=...)`` once per (caller, Idempotency-Key): a retry gets the first answer.

    The key is the caller's with the header's value, so two users' keys never meet; each call site keeps
    its own records (powertools prefixes them with ``create``'s module and name). The same key with
    another body is refused, and so is a retry while the first request is still being answered. Only
    ``create``'s answer (ids) is kept with the key, never the body; a failed request keeps nothing.
    """
    config = IdempotencyConfig(
        event_key_jmespath="[caller, key]",
        payload_validation_jmespath="body",
        expires_after_seconds=IDEMPOTENCY_WINDOW_S,
    )
    if context is not None:
        # A request cut short by the function's timeout holds the key only until that deadline.
        config.register_lambda_context(context)
    once = idempotent_function(
        create, data_keyword_argument="attempt", persistence_store=persistence, config=config
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
    return created
