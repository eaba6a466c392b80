"""A model as one of its owner's connections reaches it: what a live run asks, and what a judging pass
asks as an environment's judge. The connection is checked to answer live runs, and the model keeps where
it is reached (references only, never a key) and the connection's bounds."""

from __future__ import annotations

from benchgen.errors import Unsupported
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.runs import (
    LIMIT_FIELDS,
    ConnectionQuotas,
    InferenceLimits,
    LiveModel,
)
from benchgen.vocabulary import DEFAULT_BATCH_ABOVE_CASES, InferenceMode, Sampling


def run_limits(requested: InferenceLimits, connection: ConnectionRecord) -> InferenceLimits:
    """The run's limits: those it states, the connection's where it states none, and never above them.

    A limit above the connection's bound is refused (:class:`Unsupported`) with a sentence naming the bound.
    """
    bounds = connection.limits or ConnectionQuotas()
    stated = requested.model_fields_set
    limits: dict[str, int | None] = {}
    for field in LIMIT_FIELDS:
        bound: int | None = getattr(bounds, field)
        asked: int | None = getattr(requested, field) if field in stated else None
        if bound is not None and asked is not None and asked > bound:
            raise Unsupported(
                f"limits.{field} is {asked}, above the bound of {bound} that connection "
                f"{connection.connection_id} sets: ask for at most {bound}, or leave it out to use {bound}"
            )
        if asked is None:
            asked = bound if bound is not None else getattr(requested, field)
        limits[field] = asked
    return InferenceLimits.model_validate(limits)


def reached_model(
    connection: ConnectionRecord,
    *,
    model_id: str,
    sampling: Sampling,
    limits: InferenceLimits | None = None,
    inference_mode: InferenceMode = InferenceMode.AUTO,
    batch_above_cases: int = DEFAULT_BATCH_ABOVE_CASES,
) -> LiveModel:
    """``model_id`` as ``connection`` reaches it, asked with ``sampling`` within ``limits`` (the
    connection's own bounds when None); :class:`Unsupported`, saying what would serve, when the
    connection cannot answer live runs or a limit is above its bound."""
    check_request(connection, inference=True)
    return LiveModel(
        connection_id=connection.connection_id,
        provider=connection.provider,
        model_id=model_id,
        sampling=sampling,
        limits=run_limits(limits or InferenceLimits(), connection),
        inference_mode=inference_mode,
        batch_above_cases=batch_above_cases,
        region=connection.region,
        endpoint_name=connection.endpoint_name,
        base_url=connection.base_url,
        secret_arn=connection.secret_arn,
        prices=connection.prices,
        **({"timeout_s": connection.timeout_s} if connection.timeout_s is not None else {}),
    )
