"""The judge a bundle's ``judge:`` section names, as a live run's model (:mod:`benchgen.providers.reach`):
how registration (calibration), the judging pass and the evaluation's pairwise judging each reach it."""

from __future__ import annotations

from benchgen.errors import BenchGenError
from benchgen.judging import JudgeSettings
from benchgen.providers.capabilities import Unsupported
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.reach import reached_model
from benchgen.records.runs import LiveModel


class JudgeUnreachable(BenchGenError):
    """The judge cannot be asked; the message says what to change in the ``judge:`` section or the
    connection."""


def judge_model(
    settings: JudgeSettings,
    owner: str | None,
    connection: ConnectionRecord | None,
    model_id: str | None = None,
) -> LiveModel:
    """``settings``' judge (``model_id`` in place of its own when given) through ``connection``, which must
    be ``owner``'s (another user's is answered like a missing one) and answer live runs, asked within the
    connection's own bounds; a JudgeUnreachable saying what to change otherwise."""
    if connection is None or owner is None or connection.owner != owner:
        raise JudgeUnreachable(
            f"the judge: section names connection {settings.connection!r}, which is not a connection of the "
            "environment's owner: name one of theirs (GET /connections lists them)"
        )
    model = model_id or settings.model_id
    if model is None:
        raise JudgeUnreachable("the judge: section names no model_id: name the model its connection serves")
    try:
        return reached_model(
            connection,
            model_id=model,
            sampling=settings.sampling,
            inference_mode=settings.inference_mode,
            batch_above_cases=settings.batch_above_cases,
        )
    except Unsupported as error:
        raise JudgeUnreachable(
            f"the judge cannot be asked through connection {connection.connection_id}: {error}"
        ) from None
