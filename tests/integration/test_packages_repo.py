"""The packages table on moto: one record per package id, conditional transitions, a preparation's list."""

from __future__ import annotations

import pytest

from benchgen.aws.tables.packages import PackagesRepo
from benchgen.ports.pages import InvalidNextToken
from benchgen.records.bounds import MAX_TEXT_CHARS
from benchgen.records.packages import PackageRecord, PackageStatus
from benchgen.settings import Settings


@pytest.fixture
def packages(aws: Settings) -> PackagesRepo:
    return PackagesRepo(aws.packages_table)


def _package(
    package_id: str, minute: int, *, preparation_id: str = "prep-1", profile: str = "trl-sft"
) -> PackageRecord:
    return PackageRecord(
        package_id=package_id,
        preparation_id=preparation_id,
        owner="user-a",
        profile=profile,
        state_hash="a" * 64,
        package_key=f"packages/{package_id}.zip",
        created_at=f"2026-06-01T10:{minute:02d}:00.000000Z",
    )


def test_a_package_id_is_recorded_once_and_the_first_record_stands(packages: PackagesRepo) -> None:
    # given a package being built
    assert packages.put_if_absent(_package("pkg-1", 1))

    # when the same id is put again with another profile
    assert packages.put_if_absent(_package("pkg-1", 2, profile="openai-chat")) is False

    # then the first record is unchanged
    stored = packages.get("pkg-1")
    assert stored is not None
    assert (stored.profile, stored.status) == ("trl-sft", PackageStatus.BUILDING)


def test_a_transition_happens_once_and_keeps_a_bounded_reason(packages: PackagesRepo) -> None:
    # given a package being built
    packages.put_if_absent(_package("pkg-1", 1))

    # when it fails with a very long reason, and then a second transition from Building is tried
    assert packages.transition(
        "pkg-1", expected=PackageStatus.BUILDING, status=PackageStatus.FAILED, reason="x" * 10_000
    )
    assert not packages.transition("pkg-1", expected=PackageStatus.BUILDING, status=PackageStatus.READY)

    # then the package stays Failed with its reason cut to the record's bound
    stored = packages.get("pkg-1")
    assert stored is not None and stored.status is PackageStatus.FAILED
    assert stored.reason is not None and len(stored.reason) == MAX_TEXT_CHARS


def test_a_transition_of_an_unknown_package_changes_nothing(packages: PackagesRepo) -> None:
    assert not packages.transition("pkg-none", expected=PackageStatus.BUILDING, status=PackageStatus.FAILED)
    assert packages.get("pkg-none") is None


def test_a_preparations_packages_list_newest_first_a_page_at_a_time(packages: PackagesRepo) -> None:
    # given five packages of one preparation and one of another
    for minute in range(5):
        packages.put_if_absent(_package(f"pkg-{minute}", minute))
    packages.put_if_absent(_package("pkg-other", 9, preparation_id="prep-2"))

    # when they are listed two at a time
    first = packages.list("prep-1", limit=2)
    assert first.next_token is not None
    second = packages.list("prep-1", limit=2, next_token=first.next_token)
    assert second.next_token is not None
    third = packages.list("prep-1", limit=2, next_token=second.next_token)

    # then every package of that preparation comes once, newest first, and no other
    listed = [p.package_id for page in (first, second, third) for p in page.items]
    assert listed == ["pkg-4", "pkg-3", "pkg-2", "pkg-1", "pkg-0"]
    assert third.next_token is None


def test_a_token_of_another_listing_is_refused(packages: PackagesRepo) -> None:
    with pytest.raises(InvalidNextToken):
        packages.list("prep-1", next_token="bm90LWEtdG9rZW4")


def test_a_failed_package_is_retried_once_per_attempt(packages: PackagesRepo) -> None:
    # given a package whose first build failed
    packages.put_if_absent(_package("pkg-1", 1))
    packages.transition("pkg-1", expected=PackageStatus.BUILDING, status=PackageStatus.FAILED, reason="lost")

    # when two requests retry that attempt
    first = packages.retry("pkg-1", attempt=1)
    second = packages.retry("pkg-1", attempt=1)

    # then one moved it back to Building at attempt 2, without the old reason
    assert (first, second) == (True, False)
    stored = packages.get("pkg-1")
    assert stored is not None
    assert (stored.status, stored.attempt, stored.reason) == (PackageStatus.BUILDING, 2, None)


def test_only_a_failed_package_is_retried(packages: PackagesRepo) -> None:
    packages.put_if_absent(_package("pkg-1", 1))
    assert packages.retry("pkg-1", attempt=1) is False
    stored = packages.get("pkg-1")
    assert stored is not None and (stored.status, stored.attempt) == (PackageStatus.BUILDING, 1)
