"""Registration measures a judged environment's judge against its human-labelled answers and records the
figures on the version, for the judge they were measured for; it records the judge uncalibrated without
labelled answers, and failed, saying why, when the judge cannot be reached, and registers the version."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.inference.model import Answer, Model, ModelCallError
from benchgen.ownership import PUBLISHER_KEY
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.registry import provider
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.judge_calibration import CalibrationStatus
from benchgen.records.runs import LiveModel
from benchgen.steps.register import Judges, register_environment
from benchgen.vocabulary import Sampling
from examplegen.writing import write_bundle_zip
from tests.fakes import MemoryConnections, MemoryEnvironments, MemoryStore
from tests.judged_bundles import judged_bundle, judged_template, judgment, labelled
from tests.unit.test_judging_calibration import Crowded

KEY = "environments/judged/v1/bundle.zip"
LABELS = [labelled(1, 1, 5), labelled(2, 0, 4), labelled(3, 1, 1), labelled(4, 0, 2)]
JUDGE_CONNECTION = ConnectionRecord(
    connection_id="conn-judge",
    owner="alice",
    name="judge",
    provider="openai-compatible",
    base_url="https://judge.example.com/v1",
    profile=provider("openai-compatible").capabilities,
)


class AgreeingJudge:
    """A judge that scores every answer correct and polite, and the live models it was made for."""

    def __init__(self) -> None:
        self.made: list[LiveModel] = []

    def model_for(self, live: LiveModel, sampling: Sampling) -> Model:
        self.made.append(live)
        return self

    def complete(self, prompt: str) -> Answer:
        text = judgment({"correct": 1, "polite": 5})
        return Answer(text=text, raw=text)


@pytest.fixture
def judged(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    with judged_template(monkeypatch):
        yield


def _register(
    tmp_path: Path,
    calibration: list[dict[str, object]] | None,
    judges: Judges,
    connection: str = "conn-judge",
) -> EnvironmentRecord:
    bundle = judged_bundle(tmp_path / "env", calibration, connection)
    data = write_bundle_zip(bundle, tmp_path / "bundle.zip").read_bytes()
    store = MemoryStore({KEY: data}, metadata={KEY: {PUBLISHER_KEY: "alice"}})
    return register_environment(
        KEY, "ver-1", store=store, environments=MemoryEnvironments(), workdir=tmp_path / "w", judges=judges
    )


def test_the_judge_s_agreement_is_recorded_on_the_version_for_the_judge_it_was_measured_for(
    judged: None, tmp_path: Path
) -> None:
    # Given a judged bundle with four labelled answers, and its judge reached through alice's connection
    judge = AgreeingJudge()

    # When alice's upload is registered
    record = _register(tmp_path, LABELS, Judges(MemoryConnections(JUDGE_CONNECTION), judge.model_for))

    # Then the version is registered with the figures of the judge model asked at the connection's URL
    calibration = record.judge_calibration
    assert record.status is EnvironmentStatus.REGISTERED
    assert calibration is not None
    assert (calibration.connection, calibration.model_id, calibration.answers) == (
        "conn-judge",
        "judge-model",
        4,
    )
    assert [(live.base_url, live.model_id) for live in judge.made] == [
        ("https://judge.example.com/v1", "judge-model")
    ]
    # It passes every answer: people pass correct on 2 of 4, polite on 2 of 4 (3 and up of 1..5)
    assert [(c.criterion, c.n, c.accuracy, c.kappa) for c in calibration.criteria] == [
        ("correct", 4, 0.5, 0.0),
        ("polite", 4, 0.5, 0.0),
    ]


def test_a_judged_bundle_without_labelled_answers_is_recorded_uncalibrated(
    judged: None, tmp_path: Path
) -> None:
    record = _register(tmp_path, None, Judges(MemoryConnections(JUDGE_CONNECTION), AgreeingJudge().model_for))

    assert record.judge_calibration is not None
    assert record.judge_calibration.lines() == ["UNCALIBRATED judge: no human-labelled answers"]


def test_a_judge_that_cannot_be_reached_leaves_the_version_registered_and_its_calibration_failed(
    judged: None, tmp_path: Path
) -> None:
    # Given a judge whose connection's secret cannot be read
    def unreachable(live: LiveModel, sampling: Sampling) -> Model:
        raise ModelCallError("the connection's API key could not be read", retryable=False)

    # When the upload is registered
    record = _register(tmp_path, LABELS, Judges(MemoryConnections(JUDGE_CONNECTION), unreachable))

    # Then the version is registered, its judge uncalibrated for that reason
    assert record.status is EnvironmentStatus.REGISTERED
    assert record.judge_calibration is not None
    assert record.judge_calibration.lines() == [
        "UNCALIBRATED judge: calibration failed: the connection's API key could not be read"
    ]


def test_a_judge_connection_of_someone_else_s_is_not_used(judged: None, tmp_path: Path) -> None:
    bobs = ConnectionRecord.model_validate(JUDGE_CONNECTION.model_dump() | {"owner": "bob"})
    judge = AgreeingJudge()

    record = _register(tmp_path, LABELS, Judges(MemoryConnections(bobs), judge.model_for))

    assert judge.made == []
    assert record.judge_calibration is not None
    assert "names connection 'conn-judge', which is not a connection of the environment's owner" in (
        record.judge_calibration.reason or ""
    )


def test_a_judge_named_by_its_connection_s_name_is_reached_through_the_owner_s_connection(
    judged: None, tmp_path: Path
) -> None:
    # Given a bundle that names its judge's connection by name, as a published bundle must, and bob's
    # connection of the same name beside alice's
    bobs = ConnectionRecord.model_validate(
        JUDGE_CONNECTION.model_dump()
        | {"connection_id": "conn-bob", "owner": "bob", "base_url": "https://b/v1"}
    )
    judge = AgreeingJudge()

    # When alice's upload is registered
    record = _register(
        tmp_path,
        LABELS,
        Judges(MemoryConnections(bobs, JUDGE_CONNECTION), judge.model_for),
        connection="judge",
    )

    # Then the judge was asked through alice's connection of that name, and measured
    assert [(live.connection_id, live.base_url) for live in judge.made] == [
        ("conn-judge", "https://judge.example.com/v1")
    ]
    assert record.judge_calibration is not None
    assert record.judge_calibration.status is CalibrationStatus.MEASURED


def test_an_unknown_connection_name_says_which_names_the_owner_has(judged: None, tmp_path: Path) -> None:
    judge = AgreeingJudge()

    record = _register(
        tmp_path, LABELS, Judges(MemoryConnections(JUDGE_CONNECTION), judge.model_for), connection="grader"
    )

    assert judge.made == []
    assert record.judge_calibration is not None
    assert "the environment's owner has connections named: judge" in (record.judge_calibration.reason or "")


def test_an_owner_without_connections_is_told_how_to_create_one(judged: None, tmp_path: Path) -> None:
    record = _register(tmp_path, LABELS, Judges(MemoryConnections(), AgreeingJudge().model_for), "grader")

    assert record.judge_calibration is not None
    assert "has no connection: create one (POST /connections)" in (record.judge_calibration.reason or "")


def test_registration_asks_the_judge_about_as_many_answers_at_once_as_its_connection_allows(
    judged: None, tmp_path: Path
) -> None:
    # Given alice's judge connection, which allows two requests in flight
    bounded = ConnectionRecord.model_validate(
        JUDGE_CONNECTION.model_dump() | {"quotas": {"max_in_flight": 2}}
    )
    judge = Crowded(2)

    # When her upload with four labelled answers is registered
    record = _register(tmp_path, LABELS, Judges(MemoryConnections(bounded), lambda live, sampling: judge))

    # Then the judge was asked two at a time, never more, and measured on every answer
    assert judge.most == 2
    assert record.judge_calibration is not None
    assert [c.n for c in record.judge_calibration.criteria] == [4, 4]
