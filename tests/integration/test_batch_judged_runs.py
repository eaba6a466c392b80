"""A big run's judging pass on its judge provider's batch inference, on the local cloud: the
JudgingPipeline's batch branch submits the judge's prompts to the example model server's Batch API (the
live runs' submit and poll functions), reads its answers back into each shard's first judgments, asks
again on demand only about the answers that could not be read, then assembles and scores as on demand."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from benchgen.aws.tables.connections import ConnectionsRepo
from benchgen.outputs import RunOutput
from benchgen.ownership import OPERATOR
from benchgen.providers import registry
from benchgen.providers.connections import ConnectionRecord
from benchgen.records.prices import ModelPrices, TokenPrices
from benchgen.records.runs import RunStatus
from benchgen.steps.judging import judgments_key
from benchgen.vocabulary import InferenceMode, ProviderKind
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, UNKNOWN_ANSWER, ExampleModelServer, Fault
from localcloud.providers.bedrock_batch import jobs_of
from tests.integration.test_batch_runs import NOVA
from tests.integration.test_judged_runs import CASES, CONNECTION, _judge_connection, _judged_run
from tests.integration.test_live_runs import _object_lines
from tests.integration.test_pipeline import deliver, get_run, s3_notification
from tests.judged import colour_judged_template

# A million input tokens at 1 USD on demand and 0.5 in batch, output ones at 2 USD and 1.
PRICES = ModelPrices(
    on_demand=TokenPrices(input_per_million=1.0, output_per_million=2.0),
    batch=TokenPrices(input_per_million=0.5, output_per_million=1.0),
)
# The judge's first call is Plan's reachability check, asked on demand: this fault takes it unchanged,
# so that the next fault falls on the batch's first record.
PROBE = Fault()


@pytest.fixture
def judged() -> Iterator[None]:
    with colour_judged_template():
        yield


@pytest.fixture
def fast_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    # The local cloud's Wait really sleeps: one second between looks. Set before the first function starts.
    monkeypatch.setenv("MODEL_RETRY_BASE_SECONDS", "0.01")
    monkeypatch.setenv("BATCH_POLL_SECONDS", "1")
    monkeypatch.setenv("BATCH_MAX_POLLS", "12")


def _batch_judged_run(cloud: LocalCloud, tmp_path: Path, run_id: str, environment: str) -> None:
    _judged_run(cloud, tmp_path, run_id, environment, inference_mode=InferenceMode.BATCH.value)


def test_a_batch_judged_run_leaves_the_judgments_the_on_demand_pass_leaves(
    judged: None, fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a deterministic judge through a connection with batch prices, and two judged environments
    # alike but for their judge's inference_mode
    _judge_connection(cloud, models.base_url, PRICES)

    # When a submission is judged on demand, and the same one through the judge's batch inference
    _judged_run(cloud, tmp_path, "judged-on-demand", "judged-on-demand")
    _batch_judged_run(cloud, tmp_path, "judged-batch", "judged-batch")

    # Then both runs complete, and the batch pass's judgments are byte for byte the on-demand pass's
    on_demand, batch = get_run(cloud, "judged-on-demand"), get_run(cloud, "judged-batch")
    assert on_demand.status is batch.status is RunStatus.COMPLETED, batch.failure_reason
    s3 = cloud.client("s3")
    judgments = [
        s3.get_object(Bucket=cloud.bucket, Key=judgments_key(run.run_id))["Body"].read()
        for run in (on_demand, batch)
    ]
    assert judgments[0] == judgments[1]
    assert batch.metrics == on_demand.metrics
    # and the batch pass's judge went through one batch of its 12 prompts, none asked again on demand
    (body,) = models.batches.bodies
    assert body["endpoint"] == "/v1/chat/completions"
    assert batch.judging_batch is not None
    (job,) = batch.judging_batch.jobs
    assert (job.records, job.status) == (CASES, "completed")
    assert on_demand.judging_batch is None
    # and its tokens are priced at the connection's batch prices: half the on-demand pass's cost
    assert batch.judging is not None and on_demand.judging is not None
    assert (batch.judging.mode, on_demand.judging.mode) == (InferenceMode.BATCH, InferenceMode.ON_DEMAND)
    assert batch.judging.calls == on_demand.judging.calls == CASES
    assert batch.judging.input_tokens == on_demand.judging.input_tokens > 0
    assert batch.judging.cost is not None and on_demand.judging.cost is not None
    assert batch.judging.cost.total == pytest.approx(on_demand.judging.cost.total / 2)
    assert batch.judging.cost.mode is InferenceMode.BATCH


def test_an_unreadable_batch_answer_is_asked_again_on_demand_once(
    judged: None, fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a judge whose batch answer about the first case is blank, which cannot be read
    _judge_connection(cloud, models.base_url, PRICES)
    models.faults.add(PROBE)
    models.faults.add(Fault(text=" "))

    # When a run is judged through the judge's batch inference
    _batch_judged_run(cloud, tmp_path, "judged-batch-retry", "judged-batch-retry")

    # Then that case was asked again on demand, with what was wrong, and its second answer read: every
    # case is judged
    run = get_run(cloud, "judged-batch-retry")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    judgments = _object_lines(cloud, judgments_key("judged-batch-retry"))
    first = judgments[0]
    assert [attempt["text"] for attempt in first["attempts"]] == [" ", UNKNOWN_ANSWER]
    assert "the reply is blank" in first["attempts"][0]["problem"]
    assert all(len(record["attempts"]) == 1 for record in judgments[1:])
    assert run.judging is not None
    assert (run.judging.calls, run.judging.judged, run.judging.unreadable) == (CASES + 1, CASES, 0)
    # and the retry's tokens are priced on demand, the batch's answers at the batch prices
    retry = first["attempts"][1]
    batched = [record["attempts"][0] for record in judgments]
    expected = sum(a["input_tokens"] for a in batched) * 0.5 + retry["input_tokens"] * 1.0
    assert run.judging.cost is not None
    assert run.judging.cost.input_cost == pytest.approx(expected / 1e6)


def test_a_record_the_provider_failed_is_an_unjudged_case_with_its_reason(
    judged: None, fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a judge provider that refuses the batch's first record
    _judge_connection(cloud, models.base_url, PRICES)
    models.faults.add(PROBE)
    models.faults.add(Fault(status=400))

    # When a run is judged through the judge's batch inference
    _batch_judged_run(cloud, tmp_path, "judged-batch-failed", "judged-batch-failed")

    # Then the run completes with that case unjudged, the provider's reason on its record and the run,
    # never asked again, never a pass
    run = get_run(cloud, "judged-batch-failed")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    judgments = _object_lines(cloud, judgments_key("judged-batch-failed"))
    first = judgments[0]
    assert first.get("attempts") is None
    assert "injected fault 400" in first["error"]
    assert run.judging is not None
    assert (run.judging.judged, run.judging.errors, run.judging.calls) == (CASES - 1, 1, CASES - 1)
    assert run.judging.unjudged_reasons[0].startswith(f"{first['id']}: ")
    assert run.metrics["all_words_rate"] == pytest.approx((CASES - 1) / CASES)


def test_a_duplicate_event_after_a_batch_judged_run_starts_nothing_again(
    judged: None, fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a run judged through the judge's batch inference
    _judge_connection(cloud, models.base_url, PRICES)
    _batch_judged_run(cloud, tmp_path, "judged-batch-dup", "judged-batch-dup")
    before = get_run(cloud, "judged-batch-dup")
    assert before.status is RunStatus.COMPLETED, before.failure_reason

    # When the event that scores its predictions is delivered again, and its batch submit step runs again
    deliver(cloud, "Score", s3_notification(cloud, before.files[RunOutput.PREDICTION_OUTPUT]))
    deliver(
        cloud,
        "SubmitBatch",
        {"run_id": "judged-batch-dup", "shard_count": 1, "cases": CASES, "judging": True},
    )

    # Then the run is as it was: no second judging pass, no second batch
    after = get_run(cloud, "judged-batch-dup")
    assert after.model_dump(exclude={"claim"}) == before.model_dump(exclude={"claim"})
    assert len(models.batches.bodies) == 1
    machine = cloud.state_machine_arns["JudgingPipeline"]
    executions = cloud.client("stepfunctions").list_executions(stateMachineArn=machine)["executions"]
    assert len(executions) == 1


def test_a_bedrock_judge_s_batch_reads_and_writes_only_the_judging_pass_s_keys(
    judged: None, fast_batches: None, cloud: LocalCloud, models: ExampleModelServer, tmp_path: Path
) -> None:
    # Given a judge on Bedrock (Nova Micro, simulated by the example base model), whose batch jobs take
    # 100 records at least, and a judged environment of 120 cases
    jobs_of(cloud.provider_clock).serve(models.completion, {NOVA: BASE_MODEL})
    table = next(name for lid, name in cloud.table_names.items() if lid.startswith("Connections"))
    bedrock = ProviderKind("bedrock")
    connection = ConnectionRecord(
        connection_id=CONNECTION,
        owner=OPERATOR,
        name="the judge on Bedrock",
        provider=bedrock,
        region=cloud.region,
        prices=PRICES,
        profile=registry.provider(bedrock).capabilities,
    )
    assert ConnectionsRepo(table).put(connection)

    # When a run is judged, its judge's inference_mode auto and the run above batch_above_cases
    _judged_run(
        cloud, tmp_path, "judged-bedrock", "judged-bedrock", cases=120, model_id=NOVA, batch_above_cases=100
    )

    # Then the run completes on the job's judgments, every case judged
    run = get_run(cloud, "judged-bedrock")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.judging is not None and run.judging.judged == 120
    assert run.judging.mode is InferenceMode.BATCH
    assert run.judging_batch is not None
    (job,) = run.judging_batch.jobs
    # and its job read its records from, and wrote its output under, the judging pass's keys, as the
    # stack's Bedrock batch role
    (request,) = jobs_of(cloud.provider_clock).requests
    assert request["inputDataConfig"]["s3InputDataConfig"]["s3Uri"].endswith(
        f"runs/judged-bedrock/judging/batch/{job.name}/records.jsonl"
    )
    assert request["outputDataConfig"]["s3OutputDataConfig"]["s3Uri"].endswith(
        f"runs/judged-bedrock/judging/batch-output/{job.name}/"
    )
    assert "BedrockBatchRole" in request["roleArn"]
