"""The one Idempotency-Key of the creating requests: a retry gets what the first attempt created, each kind
of resource keeps its own keys, and a retry while the first is being answered is told to wait."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from benchgen.requests.errors import Conflict
from benchgen.requests.idempotency import create_once
from tests.fakes import MemoryIdempotency

# Answered outside Lambda, a create request has no deadline to hold its Idempotency-Key until, as powertools
# warns: the key is held for the whole window instead.
pytestmark = pytest.mark.filterwarnings("ignore:Couldn't determine the remaining time left:UserWarning")


class Creator:
    """Creates numbered things, and reads them back by id."""

    def __init__(self) -> None:
        self.made: list[str] = []
        self._ids = itertools.count(1)

    def create(self) -> str:
        self.made.append(f"thing-{next(self._ids)}")
        return self.made[-1]

    def read(self, thing_id: str) -> str:
        return f"read {thing_id}"


def _once(
    creator: Creator,
    persistence: MemoryIdempotency,
    *,
    noun: str = "run",
    key: str | None = "k1",
    create: Callable[[], str] | None = None,
) -> str:
    return create_once(
        create or creator.create,
        id_of=lambda thing: thing.removeprefix("read "),
        read=creator.read,
        noun=noun,
        caller="alice",
        key=key,
        body={"model": "m"},
        persistence=persistence,
    )


def test_a_retry_gets_what_the_first_attempt_created_read_again() -> None:
    creator, persistence = Creator(), MemoryIdempotency()

    first = _once(creator, persistence)
    again = _once(creator, persistence)

    assert (first, again) == ("read thing-1", "read thing-1")
    assert creator.made == ["thing-1"]


def test_without_a_key_every_request_creates() -> None:
    creator, persistence = Creator(), MemoryIdempotency()

    _once(creator, persistence, key=None)
    _once(creator, persistence, key=None)

    assert creator.made == ["thing-1", "thing-2"]
    assert persistence.records == {}


def test_one_key_sent_to_create_two_kinds_of_resource_creates_both() -> None:
    creator, persistence = Creator(), MemoryIdempotency()

    _once(creator, persistence, noun="run")
    _once(creator, persistence, noun="preparation")

    assert creator.made == ["thing-1", "thing-2"]


def test_a_retry_while_the_first_request_is_being_answered_is_told_to_retry_in_a_moment() -> None:
    creator, persistence = Creator(), MemoryIdempotency()

    with pytest.raises(Conflict) as refused:
        _once(creator, persistence, create=lambda: _once(creator, persistence))

    assert (
        str(refused.value) == "a request with Idempotency-Key 'k1' is still being answered: retry in a moment"
    )
    assert persistence.records == {}
