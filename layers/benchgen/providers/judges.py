"""The judge a bundle's ``judge:`` section names, as a live run's model: how registration (calibration), the
judging pass and the evaluation's pairwise judging each reach it."""

from __future__ import annotations

from benchgen.errors import BenchGenError
from benchgen.judging import JudgeSettings
from benchgen.providers.capabilities import Unsupported
from benchgen.providers.checks import check_request
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.runs import LIMIT_FIELDS, ConnectionQuotas, InferenceLimits, LiveModel


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
    connection's own bounds."""
    if connection is None or owner is None or connection.owner != owner:
        raise JudgeUnreachable(
            f"the judge: section names connection {settings.connection!r}, which is not one of the "
            "environment owner's: name one of theirs (GET /connections lists them)"
        )
    model = model_id or settings.model_id
    if model is None:
        raise JudgeUnreachable("the judge: section names no model_id: name the model its connection serves")
    try:
        check_request(connection, inference=True)
    except Unsupported as error:
        raise JudgeUnreachable(f"the judge cannot be asked: {error}") from None
    bounds = connection.limits or ConnectionQuotas()
    stated = {field: getattr(bounds, field) for field in LIMIT_FIELDS if getattr(bounds, field) is not None}
    return connection.live_model(model, settings.sampling, InferenceLimits.model_validate(stated))
