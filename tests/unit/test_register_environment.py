"""Registering an environment version over the in-memory ports: what is recorded for a good bundle and
a broken one, who owns the environment, and that a second delivery changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

from benchgen.ownership import OPERATOR, PUBLISHER_KEY
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.steps.register import register_environment
from examplegen.writing import write_bundle_zip
from tests.fakes import MemoryEnvironments, MemoryStore

KEY = "environments/tiny/v1/bundle.zip"
COMPETITION = (
    "version: 2\ntitle: Tiny math\ntemplate: math\n"
    "criteria:\n  - {id: final-answer, description: The final answer equals the gold value.}\n"
    "tasks:\n  - index: 0\n    reference_data: reference\n"
    "phases:\n  - index: 0\n    name: Main\n    tasks: [0]\n"
    "leaderboards:\n  - columns:\n      - {title: Accuracy, key: accuracy, index: 0}\n"
)


def _bundle(root: Path, competition: str = COMPETITION) -> bytes:
    folder = root / "bundle"
    (folder / "reference").mkdir(parents=True)
    (folder / "reference" / "cases.jsonl").write_text(
        json.dumps({"id": "q1", "question": "1+1", "answer": "2"})
    )
    (folder / "competition.yaml").write_text(competition)
    return write_bundle_zip(folder, root / "bundle.zip").read_bytes()


def _register(
    store: MemoryStore,
    environments: MemoryEnvironments,
    workdir: Path,
    *,
    key: str = KEY,
    version_id: str = "ver-1",
) -> EnvironmentRecord:
    return register_environment(key, version_id, store=store, environments=environments, workdir=workdir)


def test_a_valid_bundle_is_registered_with_what_the_console_shows_of_it(tmp_path: Path) -> None:
    store, environments = MemoryStore({KEY: _bundle(tmp_path)}), MemoryEnvironments()

    record = _register(store, environments, tmp_path / "w")

    assert record.status is EnvironmentStatus.REGISTERED and record.problems == []
    assert (record.title, record.template, record.criteria) == ("Tiny math", "math", ["final-answer"])
    assert [column["key"] for column in record.columns] == ["accuracy"]
    assert record.phases == [{"index": 0, "name": "Main", "tasks": [{"index": 0, "name": ""}]}]
    assert (record.bundle_key, record.bundle_version_id, record.published_by) == (KEY, "ver-1", OPERATOR)
    assert environments.get("tiny", "v1") == record
    assert environments.owners["tiny"].owner == OPERATOR


def test_a_second_upload_to_the_same_version_keeps_the_first_registration(tmp_path: Path) -> None:
    # given a registered version
    store, environments = MemoryStore({KEY: _bundle(tmp_path)}), MemoryEnvironments()
    first = _register(store, environments, tmp_path / "a")

    # when another object version lands at the same key, and its event is delivered
    again = _register(store, environments, tmp_path / "b", version_id="ver-2")

    # then the version still points at the object version that was validated
    assert again == first
    assert environments.records == {("tiny", "v1"): first}
    assert first.bundle_version_id == "ver-1"


def test_a_bundle_with_a_broken_competition_file_is_recorded_rejected_with_the_reason(tmp_path: Path) -> None:
    broken = COMPETITION.replace(
        "leaderboards:\n  - columns:\n      - {title: Accuracy, key: accuracy, index: 0}\n", ""
    )
    store, environments = MemoryStore({KEY: _bundle(tmp_path, broken)}), MemoryEnvironments()

    record = _register(store, environments, tmp_path / "w")

    assert record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        "competition.yaml: leaderboards: missing; add `leaderboards:` with one leaderboard whose `columns` "
        "name the scores to show"
    ]
    assert environments.get("tiny", "v1") == record


def test_a_bundle_at_a_key_laid_out_wrongly_is_rejected_saying_how_to_lay_it_out(tmp_path: Path) -> None:
    key = "environments/tiny/bundle.zip"
    store, environments = MemoryStore({key: _bundle(tmp_path)}), MemoryEnvironments()

    record = _register(store, environments, tmp_path / "w", key=key)

    assert record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        "environments/tiny/bundle.zip: upload a bundle as environments/<environment_id>/<version>/bundle.zip "
        "(each name 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit)"
    ]
    assert list(environments.records.values()) == [record]


def test_an_upload_by_someone_who_does_not_publish_the_environment_is_refused_unopened(
    tmp_path: Path,
) -> None:
    # given an environment first published by alice
    environments = MemoryEnvironments()
    alice = MemoryStore({KEY: _bundle(tmp_path)}, metadata={KEY: {PUBLISHER_KEY: "alice"}})
    _register(alice, environments, tmp_path / "a")

    # when bob uploads version v2 of it
    key = "environments/tiny/v2/bundle.zip"
    bob = MemoryStore({key: b"not even a zip"}, metadata={key: {PUBLISHER_KEY: "bob"}})
    record = _register(bob, environments, tmp_path / "b", key=key)

    # then v2 is recorded rejected for that reason alone (the bundle was never opened), and alice owns it
    assert record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        "user bob may not publish versions of environment 'tiny': it belongs to its owner, and besides them "
        "only no group (its owner has named none) may publish; ask the owner, or publish under a new "
        "environment id"
    ]
    assert record.published_by == "bob"
    assert environments.owners["tiny"].owner == "alice"
