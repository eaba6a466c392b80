"""Registration records a judged environment's version with its judge's calibration running and starts its
CalibrationPipeline once, whose shards (run here in-process) judge the human-labelled answers within the
connection's bounds and whose last step records the figures on the version, for the judge they were
measured for; the judge is uncalibrated without labelled answers, and failed, saying why, when it cannot
be reached; the version is registered all the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchgen.bucket_layout import calibration_execution_name
from benchgen.inference.model import Answer, Model, ModelCallError
from benchgen.inference.retry import Backoff
from benchgen.ownership import PUBLISHER_KEY
from benchgen.ports.providers import ModelFactory
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.registry import provider
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.judge_calibration import CalibrationStatus
from benchgen.records.runs import LiveModel
from benchgen.steps import calibration
from benchgen.steps.judging import judge_shard
from benchgen.steps.register import Judges, register_environment
from benchgen.vocabulary import Sampling
from examplegen.writing import write_bundle_zip
from tests.fakes import MemoryConnections, MemoryEnvironments, MemoryStarter, MemoryStore
from tests.judged import judged_bundle, judgment, labelled, rubric_judged_template

KEY = "environments/judged/v1/bundle.zip"
QUICK = Backoff(attempts=1, base_s=0.0, cap_s=0.0, throttled_s=0.0)
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
def judged() -> Iterator[None]:
    with rubric_judged_template():
        yield


@dataclass
class Registered:
    """A registration of alice's judged bundle, and the CalibrationPipeline it started, run in-process."""

    record: EnvironmentRecord
    starter: MemoryStarter
    store: MemoryStore
    environments: MemoryEnvironments

    def calibrate(self, model_for: ModelFactory, tmp_path: Path) -> EnvironmentRecord:
        """Run the started calibration's shards and its Assemble step as the state machine does; the
        version as it then stands."""
        ((name, payload),) = self.starter.started.items()
        assert name.startswith("calibrate-")
        plan = payload["plan"]
        items = json.loads(self.store.objects[plan["items_key"]])
        for item in items:
            judge_shard(
                calibration.calibration_job(item["calibration"], environments=self.environments),
                item["shard"],
                store=self.store,
                workdir=tmp_path / f"shard-{item['shard']}",
                model_for=model_for,
                backoff=QUICK,
                in_flight=item["in_flight"],
                shards_at_once=item["shards_at_once"],
            )
        label = payload["calibration"]
        calibration.assemble(
            label,
            plan["shard_count"],
            environments=self.environments,
            store=self.store,
            workdir=tmp_path / "a",
        )
        found = self.environments.get("judged", "v1")
        assert found is not None
        return found


def _register(
    tmp_path: Path,
    calibration_set: list[dict[str, object]] | None,
    connections: MemoryConnections,
    connection: str = "conn-judge",
    shard_size: int = 100,
) -> Registered:
    bundle = judged_bundle(tmp_path / "env", calibration_set, connection)
    data = write_bundle_zip(bundle, tmp_path / "bundle.zip").read_bytes()
    store = MemoryStore({KEY: data}, metadata={KEY: {PUBLISHER_KEY: "alice"}})
    starter, environments = MemoryStarter(), MemoryEnvironments()
    record = register_environment(
        KEY,
        "ver-1",
        store=store,
        environments=environments,
        workdir=tmp_path / "w",
        judges=Judges(connections, starter, shard_size=shard_size),
    )
    return Registered(record, starter, store, environments)


def test_registration_records_the_calibration_running_and_starts_its_pipeline_once(
    judged: None, tmp_path: Path
) -> None:
    # Given a judged bundle with four labelled answers, and its judge reached through alice's connection
    registered = _register(tmp_path, LABELS, MemoryConnections(JUDGE_CONNECTION))

    # Then the version is registered with its calibration running, which a run shows as such
    record = registered.record
    assert record.status is EnvironmentStatus.REGISTERED
    assert record.judge_calibration is not None
    assert record.judge_calibration.status is CalibrationStatus.RUNNING
    assert record.judge_calibration.lines() == [
        "judge calibration still running: its agreement with people on 4 human-labelled answers is being "
        "measured"
    ]
    assert list(registered.starter.started) == [calibration_execution_name("judged", "v1")]

    # When the same upload's event is delivered again
    again = register_environment(
        KEY,
        "ver-1",
        store=registered.store,
        environments=registered.environments,
        workdir=tmp_path / "again",
        judges=Judges(MemoryConnections(JUDGE_CONNECTION), registered.starter, shard_size=100),
    )

    # Then nothing is started twice
    assert again == record
    assert len(registered.starter.started) == 1


def test_the_judge_s_agreement_is_recorded_on_the_version_for_the_judge_it_was_measured_for(
    judged: None, tmp_path: Path
) -> None:
    # Given a judged bundle with four labelled answers, and its judge reached through alice's connection
    judge = AgreeingJudge()

    # When alice's upload is registered and its calibration runs, two answers a shard
    registered = _register(tmp_path, LABELS, MemoryConnections(JUDGE_CONNECTION), shard_size=2)
    record = registered.calibrate(judge.model_for, tmp_path)

    # Then the version holds the figures of the judge model asked at the connection's URL
    calibration = record.judge_calibration
    assert calibration is not None
    assert (calibration.status, calibration.connection, calibration.model_id, calibration.answers) == (
        CalibrationStatus.MEASURED,
        "conn-judge",
        "judge-model",
        4,
    )
    assert {(live.base_url, live.model_id) for live in judge.made} == {
        ("https://judge.example.com/v1", "judge-model")
    }
    # It passes every answer: people pass correct on 2 of 4, polite on 2 of 4 (3 and up of 1..5)
    assert [(c.criterion, c.n, c.accuracy, c.kappa) for c in calibration.criteria] == [
        ("correct", 4, 0.5, 0.0),
        ("polite", 4, 0.5, 0.0),
    ]


def test_the_shards_of_a_calibration_share_its_connection_s_bound(judged: None, tmp_path: Path) -> None:
    # Given alice's judge connection, which allows two requests in flight
    bounded = ConnectionRecord.model_validate(
        JUDGE_CONNECTION.model_dump() | {"limits": {"max_in_flight": 2}}
    )

    # When her upload with four labelled answers is registered
    registered = _register(tmp_path, LABELS, MemoryConnections(bounded))

    # Then the shards at once, each with its requests in flight, ask at most two at a time
    plan = next(iter(registered.starter.started.values()))["plan"]
    items = json.loads(registered.store.objects[plan["items_key"]])
    assert all(item["in_flight"] * item["shards_at_once"] <= 2 for item in items)
    assert sum(1 for _ in items) == plan["shard_count"]


def test_a_judged_bundle_without_labelled_answers_is_recorded_uncalibrated(
    judged: None, tmp_path: Path
) -> None:
    registered = _register(tmp_path, None, MemoryConnections(JUDGE_CONNECTION))

    assert registered.record.judge_calibration is not None
    assert registered.record.judge_calibration.lines() == ["UNCALIBRATED judge: no human-labelled answers"]
    assert registered.starter.started == {}


def test_a_calibration_its_pipeline_fails_is_recorded_failed_with_the_reason(
    judged: None, tmp_path: Path
) -> None:
    # Given a registered calibration whose judge's connection secret cannot be read
    registered = _register(tmp_path, LABELS, MemoryConnections(JUDGE_CONNECTION))

    def unreachable(live: LiveModel, sampling: Sampling) -> Model:
        raise ModelCallError("the connection's API key could not be read", retryable=False)

    # When its pipeline's shard fails, and the pipeline records the failure
    with pytest.raises(ModelCallError) as failure:
        registered.calibrate(unreachable, tmp_path)
    calibration.record_calibration_failure(
        "judged/v1", str(failure.value), environments=registered.environments
    )

    # Then the version stays registered, its judge uncalibrated for that reason
    record = registered.environments.get("judged", "v1")
    assert record is not None and record.status is EnvironmentStatus.REGISTERED
    assert record.judge_calibration is not None
    assert record.judge_calibration.lines() == [
        "UNCALIBRATED judge: calibration failed: the connection's API key could not be read"
    ]


def test_a_judge_connection_of_someone_else_s_is_not_used(judged: None, tmp_path: Path) -> None:
    bobs = ConnectionRecord.model_validate(JUDGE_CONNECTION.model_dump() | {"owner": "bob"})

    registered = _register(tmp_path, LABELS, MemoryConnections(bobs))

    assert registered.starter.started == {}
    assert registered.record.judge_calibration is not None
    assert "names connection 'conn-judge', which is not a connection of the environment's owner" in (
        registered.record.judge_calibration.reason or ""
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

    # When alice's upload is registered and calibrated
    registered = _register(tmp_path, LABELS, MemoryConnections(bobs, JUDGE_CONNECTION), connection="judge")
    record = registered.calibrate(judge.model_for, tmp_path)

    # Then the judge was asked through alice's connection of that name, and measured
    assert {(live.connection_id, live.base_url) for live in judge.made} == {
        ("conn-judge", "https://judge.example.com/v1")
    }
    assert record.judge_calibration is not None
    assert record.judge_calibration.status is CalibrationStatus.MEASURED


def test_an_unknown_connection_name_says_which_names_the_owner_has(judged: None, tmp_path: Path) -> None:
    registered = _register(tmp_path, LABELS, MemoryConnections(JUDGE_CONNECTION), connection="grader")

    assert registered.starter.started == {}
    assert registered.record.judge_calibration is not None
    assert "the environment's owner has connections named: judge" in (
        registered.record.judge_calibration.reason or ""
    )


def test_an_owner_without_connections_is_told_how_to_create_one(judged: None, tmp_path: Path) -> None:
    registered = _register(tmp_path, LABELS, MemoryConnections(), "grader")

    assert registered.record.judge_calibration is not None
    assert "has no connection: create one (POST /connections)" in (
        registered.record.judge_calibration.reason or ""
    )
