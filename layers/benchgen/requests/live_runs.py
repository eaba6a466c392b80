"""Live runs as ``POST /runs`` creates them: a model configuration instead of an uploaded submission.

The configuration names one of the caller's provider connections and a model id; the run keeps where the
connection reached its model (references only, never a key) and starts the InferencePipeline, whose
execution name derives from the run id so that a second start collides.
"""

from __future__ import annotations

from benchgen.errors import Unsupported
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.reach import reached_model
from benchgen.providers.registry import provider
from benchgen.records.runs import LiveModel
from benchgen.requests.errors import ApiError, NotFound
from benchgen.requests.schemas.runs import ModelConfigRequest
from benchgen.vocabulary import InferenceMode


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
    definition = provider(connection.provider)
    try:
        live = reached_model(
            connection,
            model_id=config.model_id,
            sampling=config.sampling,
            limits=config.limits,
            inference_mode=config.inference_mode,
            batch_above_cases=config.batch_above_cases,
        )
    except Unsupported as error:
        raise ApiError(str(error)) from None
    if config.inference_mode is InferenceMode.BATCH and definition.batch() is None:
        raise ApiError(f"inference_mode batch: {definition.batch_gap}")
    return live
