"""A run of an environment whose template asks a judge, on the local cloud: the uploaded submission is
ingested, the JudgingPipeline asks the example model server (as the judge, through the environment
owner's connection) about every answer, and only then is the run scored, with the judgments it left."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from benchgen.aws.tables.connections import ConnectionsRepo
from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.ownership import OPERATOR
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.judge_calibration import CalibrationStatus
from benchgen.records.prices import ModelPrices, TokenPrices
from benchgen.records.runs import RunStatus
from benchgen.steps.judging import judgments_key
from benchgen.vocabulary import ProviderKind
from examplegen import generate_environment
from examplegen.generate import GeneratedEnvironment
from infra.sizing import SHARD_CASES
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, JUDGE_MODEL, UNKNOWN_ANSWER, ExampleModelServer, Fault
from tests.integration.test_live_runs import _object_lines
from tests.integration.test_pipeline import all_datasets, get_run, table, upload_bundle, upload_submission
from tests.judged import colour_judged_template

ENVIRONMENT = "judged-flags"
CONNECTION = "judge-local"
CONNECTION_NAME = "the judge"
OPENAI = ProviderKind("openai-compatible")
CASES = 12
# A million input tokens at 1 USD, output ones at 2 USD.
PRICES = ModelPrices(on_demand=TokenPrices(input_per_million=1.0, output_per_million=2.0))


@pytest.fixture
def judged() -> Iterator[None]:
    with colour_judged_template():
        yield


def _judge_connection(cloud: LocalCloud, base_url: str, prices: ModelPrices = PRICES) -> None:
    table = next(name for lid, name in cloud.table_names.items() if lid.startswith("Connections"))
    connection = ConnectionRecord(
        connection_id=CONNECTION,
        owner=OPERATOR,
        name=CONNECTION_NAME,
        provider=OPENAI,
        base_url=base_url,
        prices=prices,
        profile=registry.provider(OPENAI).capabilities,
    )
    assert ConnectionsRepo(table).put(connection)


def _judged_run(
    cloud: LocalCloud,
    tmp_path: Path,
    run_id: str,
    environment: str = ENVIRONMENT,
    cases: int = CASES,
    connection: str = CONNECTION,
    **judge: Any,
) -> None:
    """A submission uploaded for a judged environment of ``cases`` cases, its ``judge:`` section naming
    the judge's ``connection`` (by id or name) and model, and ``judge``'s settings besides."""
    made = generate_environment("throwaway", tmp_path / environment, cases=cases, seed=3)
    competition = made.bundle_dir / "competition.yaml"
    spec = yaml.safe_load(competition.read_text(encoding="utf-8"))
    spec["judge"] = {"connection": connection, "model_id": BASE_MODEL, **judge}
    competition.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    upload_bundle(cloud, made.bundle_dir, tmp_path, environment)
    upload_submission(cloud, run_id, made.submission_path, environment)


def test_a_judged_run_is_scored_with_the_judgments_its_judge_gave(
    judged: None, fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given an environment whose template asks a judge, its judge the example model server reached
    # through the owner's connection, which answers it does not know to any judging prompt
    _judge_connection(cloud, models.base_url)

    # When a submission is uploaded for it
    _judged_run(cloud, tmp_path, "judged-happy")

    # Then the run completes, every case passing on the judgment it got (none on the answer itself)
    run = get_run(cloud, "judged-happy")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.metrics["all_words_rate"] == 1.0
    # and the run's judgments hold one record a case, in case order
    judgments = _object_lines(cloud, judgments_key("judged-happy"))
    assert [record["id"] for record in judgments] == [f"flag-{index:04d}" for index in range(CASES)]
    assert {record["attempts"][0]["text"] for record in judgments} == {UNKNOWN_ANSWER}
    # and the judge's calls, tokens and cost are on the run, apart from any model's
    judging = run.judging
    assert judging is not None
    assert (judging.model_id, judging.connection_id) == (BASE_MODEL, CONNECTION)
    assert (judging.cases, judging.calls, judging.judged, judging.unreadable, judging.errors) == (
        12,
        12,
        12,
        0,
        0,
    )
    input_tokens = sum(record["attempts"][0]["input_tokens"] for record in judgments)
    assert judging.input_tokens == input_tokens > 0
    assert judging.cost is not None and judging.cost.input_cost == pytest.approx(input_tokens / 1e6)
    assert run.inference is None


def test_a_judge_named_by_its_connection_s_name_judges_the_run_through_the_owner_s_connection(
    judged: None, fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given an environment whose judge: section names the owner's connection by its name, not its id
    _judge_connection(cloud, models.base_url)

    # When a submission is uploaded for it
    _judged_run(cloud, tmp_path, "judged-by-name", connection=CONNECTION_NAME)

    # Then the run is judged through the connection of that name, and completes
    run = get_run(cloud, "judged-by-name")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.judging is not None
    assert (run.judging.connection_id, run.judging.judged) == (CONNECTION, CASES)


def test_a_judged_run_scored_in_shards_reads_the_judgments_of_the_whole_run(
    judged: None, fast_retries: None, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the stack deployed to score runs in shards of 5 cases, and a judged environment of 12 cases
    from infra.synth import synth_stacks

    stacks: dict[str, dict[str, Any]] = synth_stacks({SHARD_CASES: "5"})
    with LocalCloud(stacks) as sharded:
        _judge_connection(sharded, models.base_url)

        # When a submission is uploaded for it
        _judged_run(sharded, tmp_path, "judged-sharded")

        # Then its 3 shards are scored with the run's judgments: it completes as a whole judged run does
        run = get_run(sharded, "judged-sharded")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.metrics["all_words_rate"] == 1.0
    assert run.judging is not None and run.judging.judged == CASES


def test_a_throttled_judge_slows_the_pass_and_every_case_is_still_judged(
    judged: None, fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a judge that refuses three calls for the rate (after the pass's first call)
    _judge_connection(cloud, models.base_url)
    models.faults.add(Fault(status=429, times=3, retry_after_s=0))

    # When a submission is uploaded
    _judged_run(cloud, tmp_path, "judged-throttled")

    # Then the judge was throttled, and the run completes with every case judged
    assert models.faults.pending == []
    run = get_run(cloud, "judged-throttled")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.judging is not None and run.judging.judged == CASES


def test_a_judge_that_cannot_be_reached_fails_the_run_naming_its_connection(
    judged: None, fast_retries: None, cloud: LocalCloud, tmp_path: Path
) -> None:
    # Given a judge connection that points where nothing listens
    _judge_connection(cloud, "http://127.0.0.1:9/v1")

    # When a submission is uploaded
    _judged_run(cloud, tmp_path, "judged-unreachable")

    # Then the run fails saying which connection to fix, and no judgments are left for scoring
    run = get_run(cloud, "judged-unreachable")
    assert run.status is RunStatus.FAILED
    assert f"connection {CONNECTION} of the environment's owner" in (run.failure_reason or "")
    assert run.overall_score is None


def _judged_example(
    cloud: LocalCloud, tmp_path: Path, environment_id: str, connection: str
) -> GeneratedEnvironment:
    """The judged example registered as ``environment_id``, its judge the example model server's judge
    model through the owner's ``connection`` (by id or name)."""
    made = generate_environment("judge", tmp_path / "env", cases=6, seed=2)
    competition = made.bundle_dir / "competition.yaml"
    spec = yaml.safe_load(competition.read_text(encoding="utf-8"))
    spec["judge"] |= {"connection": connection, "model_id": JUDGE_MODEL}
    competition.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    upload_bundle(cloud, made.bundle_dir, tmp_path, environment_id)
    return made


def test_registration_measures_a_judge_named_by_its_connection_s_name(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the judged example, its judge: section naming the owner's connection by name, with its
    # human-labelled answers
    _judge_connection(cloud, models.base_url)

    # When the bundle is uploaded
    _judged_example(cloud, tmp_path, "judged-calibrated", CONNECTION_NAME)

    # Then the judge was reached through that connection and measured on the labelled answers
    version = EnvironmentsRepo(table(cloud, "Environments")).get("judged-calibrated", "v1")
    assert version is not None and version.judge_calibration is not None
    calibration = version.judge_calibration
    assert calibration.status is CalibrationStatus.MEASURED, calibration.reason
    assert calibration.answers > 0 and all(c.n > 0 for c in calibration.criteria)
    # by its CalibrationPipeline, whose shards judged the labelled answers
    listed = cloud.client("s3").list_objects_v2(
        Bucket=cloud.bucket, Prefix="calibrations/judged-calibrated/v1/"
    )
    assert "calibrations/judged-calibrated/v1/judgments-00000.jsonl" in {
        item["Key"] for item in listed.get("Contents", [])
    }


def test_a_run_of_which_nothing_was_judged_has_no_score_and_says_why(
    fast_retries: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given the judged example environment, whose judge answers every prompt with text it cannot read
    _judge_connection(cloud, models.base_url)
    models.faults.add(Fault(text="It reads well.", times=None))
    made = _judged_example(cloud, tmp_path, "judged-nothing", CONNECTION)

    # When a submission is uploaded for it
    upload_submission(cloud, "judged-nothing", made.submission_path, "judged-nothing")

    # Then the run completes with no score rather than 0.0, saying why, and no dataset carries a score
    run = get_run(cloud, "judged-nothing")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert (run.overall_score, run.no_score) == (None, "no score: nothing was judged")
    assert "accuracy" not in run.metrics and run.metrics["unjudged"] == 6.0
    assert all("0.0%" not in dataset["name"]["S"] for dataset in all_datasets(cloud))
