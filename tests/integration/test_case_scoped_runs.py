"""Live runs restricted to a list of case ids, on the local cloud: the InferencePipeline from the
synthesized template asks only the scoped cases of the loopback model server, and ingest and scoring
judge only those; a case outside the scope is neither missing nor scored."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.storage import ObjectStore
from benchgen.aws.tables.runs import RunsRepo
from benchgen.bucket_layout import CASE_SCOPE, run_key
from benchgen.outputs import RunOutput
from benchgen.records.runs import LiveModel, RunRecord, RunStatus
from benchgen.steps.case_scope import write_case_scope
from benchgen.vocabulary import Sampling
from cli.api_client import Api
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, ExampleModelServer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Of gsm8k-en's 40 cases, example-base answers these wrong (as the example submission does) ...
BASE_WRONG = ["en-000000", "en-000001", "en-000006", "en-000010"]
# ... and these right.
BASE_RIGHT = ["en-000002", "en-000003", "en-000004", "en-000005", "en-000007", "en-000008"]


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> Iterator[ExampleModelServer]:
    monkeypatch.setenv("MODEL_RETRY_BASE_SECONDS", "0.01")
    with ExampleModelServer() as server:
        yield server


def _runs(cloud: LocalCloud) -> RunsRepo:
    return RunsRepo(next(name for lid, name in cloud.table_names.items() if lid.startswith("Runs")))


def _register(cloud: LocalCloud, tmp_path: Path) -> None:
    archive = write_bundle_zip(EXAMPLES / "gsm8k-en" / "bundle", tmp_path / "gsm8k-en.zip")
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key="environments/gsm8k-en/v1/bundle.zip", Body=archive.read_bytes()
    )
    cloud.settle()


def _scoped_run(
    cloud: LocalCloud, run_id: str, base_url: str, case_ids: list[str], tmp_path: Path
) -> dict[str, Any]:
    scope = write_case_scope(
        case_ids, run_key(run_id, CASE_SCOPE), store=ObjectStore(cloud.bucket), workdir=tmp_path
    )
    run = RunRecord(
        run_id=run_id,
        environment_id="gsm8k-en",
        environment_version="v1",
        model=BASE_MODEL,
        owner="alice",
        live_model=LiveModel(
            connection_id="conn-local",
            provider="openai-compatible",
            model_id=BASE_MODEL,
            sampling=Sampling(temperature=0, max_tokens=256),
            base_url=base_url,
        ),
        case_scope=scope,
    )
    assert _runs(cloud).create(run)
    machine = cloud.state_machine_arns["InferencePipeline"]
    cloud.client("stepfunctions").start_execution(
        stateMachineArn=machine, name=f"live-{run_id}", input=json.dumps({"run_id": run_id})
    )
    execution = cloud.wait_for_execution(f"live-{run_id}", timeout=120, state_machine_arn=machine)
    cloud.settle()
    return execution


def _verdicts(cloud: LocalCloud, key: str) -> dict[str, bool]:
    body = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        lines = archive.read("verdicts.jsonl").decode().splitlines()
    return {verdict["case_id"]: verdict["passed"] for verdict in map(json.loads, lines)}


def test_a_scoped_live_run_asks_counts_and_judges_only_its_cases(
    cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given gsm8k-en (40 cases) and a scope of 10 of them, 4 that example-base gets wrong
    _register(cloud, tmp_path)
    scope = BASE_WRONG + BASE_RIGHT

    # When a live run restricted to the scope goes through the InferencePipeline
    execution = _scoped_run(cloud, "live-scoped", models.base_url, scope, tmp_path)

    # Then only the scoped cases were asked (plus the reachability call)
    assert execution["status"] == "SUCCEEDED"
    assert len(models.faults.requests) == 11
    assert set(models.faults.requests) - {None} == set(scope)
    run = _runs(cloud).get("live-scoped")
    assert run is not None and run.status is RunStatus.COMPLETED, run and run.failure_reason
    assert run.inference is not None and run.inference.cases == 10
    # and ingest counts the scope as the run's questions: the other 30 cases are not missing
    assert run.counts["total_questions"] == 10
    assert run.counts["missing_ids"] == 0
    # and scoring judged exactly the scoped cases, with the outcomes the example model gives them
    assert (run.counts["total"], run.counts["passed"]) == (10, 6)
    assert run.overall_score == pytest.approx(0.6)
    verdicts = _verdicts(cloud, run.files[RunOutput.SCORING_OUTPUT])
    assert verdicts == {case_id: case_id in BASE_RIGHT for case_id in scope}
    # and the run's page says how many cases it is restricted to
    with cloud.serve_api(access_log=False) as server:
        api = Api(server.url, cloud.create_user("reader@example.com", "Reader-Passw0rd!x"))
        detail = api.expect("GET", "/runs/live-scoped", 200)
    assert detail["case_scope"] == 10
    assert detail["counts"]["total"] == 10


def test_a_scope_naming_cases_the_environment_lacks_fails_the_run_in_plan_asking_nothing(
    cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a scope with two ids gsm8k-en does not have
    _register(cloud, tmp_path)

    # When a live run restricted to it starts
    execution = _scoped_run(
        cloud, "live-bad-scope", models.base_url, ["en-000002", "tr-000001", "nope"], tmp_path
    )

    # Then it fails before any case is asked, naming the unknown ids and what to do
    assert execution["status"] == "FAILED"
    run = _runs(cloud).get("live-bad-scope")
    assert run is not None and run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "the run's case scope names 2 of its 3 cases that environment gsm8k-en version v1 does not have "
        "(nope, tr-000001): scope the run to cases of its own environment version"
    )
    assert models.faults.requests == [None]
