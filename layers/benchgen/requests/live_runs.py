"""Live runs as ``POST /runs`` creates them: a model configuration instead of an uploaded submission.

The configuration names one of the caller's provider connections and a model id; the run keeps where the
connection reached its model (references only, never a key) and starts the InferencePipeline, whose
execution name derives from the run id so that a second start collides.
"""

from __future__ import annotations

from benchgen.providers.capabilities import Unsupported
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.registry import provider
from benchgen.records.runs import LIMIT_FIELDS, ConnectionQuotas, InferenceLimits, LiveModel
from benchgen.requests.errors import ApiError, NotFound
from benchgen.requests.schemas.runs import ModelConfigRequest
from benchgen.vocabulary import InferenceMode


def run_limits(requested: InferenceLimits, connection: ConnectionRecord) -> InferenceLimits:
    """The run's limits: those it states, the connection's where it states none, and never above them.

    A limit above the connection's bound is refused (400) with a sentence naming the bound.
    """
    bounds = connection.limits or ConnectionQuotas()
    stated = requested.model_fields_set
    limits: dict[str, int | None] = {}
    for field in LIMIT_FIELDS:
        bound: int | None = getattr(bounds, field)
        asked: int | None = getattr(requested, field) if field in stated else None
        if bound is not None and asked is not None and asked > bound:
            raise ApiError(
                f"limits.{field} is {asked}, above the bound of {bound} that connection "
                f"{connection.connection_id} sets: ask for at most {bound}, or leave it out to use {bound}"
            )
        if asked is None:
            asked = bound if bound is not None else getattr(requested, field)
        limits[field] = asked
    return InferenceLimits.model_validate(limits)


def live_model_for(
    config: ModelConfigRequest, *, owner: str, connection: ConnectionRecord | None
) -> LiveModel:
    """The caller's connection, checked to answer live runs, as the run keeps it.

    Another user's connection is answered like a missing one, so ids reveal nothing; a connection that
    cannot answer live runs is refused (400) with the check's sentence, which says what would serve.
    """
    if connection is None or connection.owner != owner:
        raise NotFound(
            f"no connection {config.connection_id!r} of yours: create one with POST /connections "
            "(GET /connections lists yours)"
        )
    try:
        check_request(connection, inference=True)
    except Unsupported as error:
        raise ApiError(str(error)) from None
    definition = provider(connection.provider)
    if config.inference_mode is InferenceMode.BATCH and definition.batch() is None:
        raise ApiError(f"inference_mode batch: {definition.batch_gap}")
    return connection.live_model(
        config.model_id,
        config.sampling,
        run_limits(config.limits, connection),
        inference_mode=config.inference_mode,
        batch_above_cases=config.batch_above_cases,
    )
