"""The judge a bundle's ``judge:`` section names, as a live run's model (:mod:`benchgen.providers.reach`):
how registration (calibration), the judging pass and the evaluation's pairwise judging each reach it.

``judge: connection:`` names a connection of the environment owner's by its name (what a published bundle
can know: each owner creates their own connection and gives it that name) or by its id (one account's)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from benchgen.errors import BenchGenError, Unsupported
from benchgen.judging import JudgeSettings
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.reach import reached_model
from benchgen.records.runs import LiveModel


class JudgeUnreachable(BenchGenError):
    """The judge cannot be asked; the message says what to change in the ``judge:`` section or the
    connection."""


def judge_connection(
    named: str,
    owner: str | None,
    by_id: ConnectionRecord | None,
    owned: Callable[[], Iterable[ConnectionRecord]],
) -> ConnectionRecord:
    """The connection of ``owner``'s that ``named`` names: ``by_id``, the connection whose id it is, when it
    is theirs (another user's is answered like a missing one), else the one of ``owned()`` (all of theirs)
    that has that name; a JudgeUnreachable saying which names they have, or how to create one."""
    if owner is not None and by_id is not None and by_id.owner == owner:
        return by_id
    mine = list(owned()) if owner is not None else []
    same = [connection for connection in mine if connection.name == named]
    if len(same) == 1:
        return same[0]
    if same:
        ids = ", ".join(sorted(connection.connection_id for connection in same))
        raise JudgeUnreachable(
            f"the environment's owner has {len(same)} connections named {named!r} ({ids}): name the "
            "judge's by its id in the judge: section, or give the others other names"
        )
    names = sorted({connection.name for connection in mine})
    have = (
        f"the environment's owner has connections named: {', '.join(names)}"
        if names
        else "the environment's owner has no connection: create one (POST /connections) with that name"
    )
    raise JudgeUnreachable(
        f"the judge: section names connection {named!r}, which is not a connection of the environment's "
        f"owner, by name or id; {have}"
    )


def judge_model(
    settings: JudgeSettings, connection: ConnectionRecord, model_id: str | None = None
) -> LiveModel:
    """``settings``' judge (``model_id`` in place of its own when given) through ``connection`` (the owner's,
    as :func:`judge_connection` found it), which must answer live runs, asked within the connection's own
    bounds; a JudgeUnreachable saying what to change otherwise."""
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
