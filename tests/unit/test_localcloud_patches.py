"""What the local cloud changes in moto is put back exactly, in reverse order, whether it starts or not."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest

from localcloud.cloud import LocalCloud
from localcloud.patches import Patch, Patches

EMPTY_STACKS: dict[str, dict[str, Any]] = {"Empty": {"Resources": {}}}
ABSENT = object()


class Base:
    inherited = "from the base"


class Owner(Base):
    @staticmethod
    def tool() -> str:
        return "moto's"


class Refused(Exception):
    pass


class TwoThenRefusal(Patches):
    def declare(self) -> Iterator[Patch]:
        yield Patch(Owner, "tool", staticmethod(lambda: "ours"))
        yield Patch(Owner, "inherited", "ours")
        raise Refused


class Recording(AbstractContextManager[Any]):
    """Notes its entry and exit in ``log``, around the change it stands for."""

    def __init__(self, change: AbstractContextManager[Any], log: list[tuple[str, int]], index: int) -> None:
        self.change = change
        self.log = log
        self.index = index

    def __enter__(self) -> Recording:
        self.change.__enter__()
        self.log.append(("enter", self.index))
        return self

    def __exit__(self, *exc: object) -> None:
        self.log.append(("exit", self.index))
        self.change.__exit__(None, None, None)


class Refusing(AbstractContextManager[Any]):
    def __enter__(self) -> Refusing:
        raise Refused

    def __exit__(self, *exc: object) -> None:
        raise AssertionError("a change that was never entered is not left")


@pytest.fixture
def replaced(monkeypatch: pytest.MonkeyPatch) -> dict[tuple[Any, str], Any]:
    """Each attribute a patch replaced, with what its owner held before the first replacement."""
    before: dict[tuple[Any, str], Any] = {}
    enter = Patch.__enter__

    def noting(patch: Patch) -> Patch:
        before.setdefault((patch.owner, patch.name), vars(patch.owner).get(patch.name, ABSENT))
        return enter(patch)

    monkeypatch.setattr(Patch, "__enter__", noting)
    return before


def _as_they_were(replaced: dict[tuple[Any, str], Any]) -> list[str]:
    return [
        f"{getattr(owner, '__name__', owner)}.{name}"
        for (owner, name), original in replaced.items()
        if vars(owner).get(name, ABSENT) is not original
    ]


def test_leaving_restores_each_attribute_as_the_owner_held_it() -> None:
    tool = vars(Owner)["tool"]
    with Patch(Owner, "tool", staticmethod(lambda: "ours")), Patch(Owner, "inherited", "ours"):
        assert (Owner.tool(), Owner.inherited) == ("ours", "ours")
    # the staticmethod itself is back, and the inherited attribute is the base's again, not a copy
    assert vars(Owner)["tool"] is tool
    assert "inherited" not in vars(Owner)
    assert Owner.inherited == "from the base"


def test_a_failure_while_installing_restores_what_was_installed() -> None:
    tool = vars(Owner)["tool"]
    patches = TwoThenRefusal()
    with pytest.raises(Refused):
        patches.__enter__()
    assert vars(Owner)["tool"] is tool
    assert "inherited" not in vars(Owner)
    assert not patches.active


def test_moto_is_as_it_was_after_the_local_cloud_stops(replaced: dict[tuple[Any, str], Any]) -> None:
    from moto.awslambda.models import LambdaFunction

    with LocalCloud(EMPTY_STACKS, name_prefix="patches"):
        assert vars(LambdaFunction)["_invoke_lambda"] is not replaced[(LambdaFunction, "_invoke_lambda")]
    assert len(replaced) > 20
    assert _as_they_were(replaced) == []


def test_moto_is_as_it_was_after_a_start_that_fails_part_way(replaced: dict[tuple[Any, str], Any]) -> None:
    cloud = LocalCloud(EMPTY_STACKS, name_prefix="patches")
    cloud.changes = (*cloud.changes, Refusing())
    with pytest.raises(Refused):
        cloud.start()
    assert len(replaced) > 20
    assert _as_they_were(replaced) == []
    # and a stop after it has nothing left to undo
    assert cloud.stop() == []


@pytest.mark.parametrize("starts", [True, False], ids=["stopped", "failed to start"])
def test_the_changes_are_left_in_the_reverse_of_the_order_they_were_entered(starts: bool) -> None:
    log: list[tuple[str, int]] = []
    cloud = LocalCloud(EMPTY_STACKS, name_prefix="patches")
    cloud.changes = tuple(Recording(change, log, index) for index, change in enumerate(cloud.changes))
    if starts:
        cloud.start()
        cloud.stop()
    else:
        cloud.changes = (*cloud.changes, Refusing())
        with pytest.raises(Refused):
            cloud.start()
    entered = [index for event, index in log if event == "enter"]
    left = [index for event, index in log if event == "exit"]
    assert entered == list(range(len(entered))) and len(entered) > 5
    assert left == entered[::-1]
    assert log.index(("exit", 0)) > log.index(("enter", len(entered) - 1))
