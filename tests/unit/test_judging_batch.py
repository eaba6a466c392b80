"""A judging pass whose judge was asked through its provider's batch inference: each case's batch answer
is its first judgment, only an unreadable one is asked again on demand, a record the provider failed
stays unjudged; the batch's tokens are priced at the connection's batch prices, the retries' on demand;
and the run's page shows the pass's batch jobs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchgen.bucket_layout import judging_key, judging_shard_key
from benchgen.cases import Case
from benchgen.inference.pacing import Budget, Pacer
from benchgen.judging import JUDGE_NAME, JudgeAttempt, JudgeRecord, write_judgments
from benchgen.records.prices import ModelPrices, TokenPrices
from benchgen.records.runs import BatchJob, BatchSummary, RunRecord, RunStatus
from benchgen.requests.runs import run_detail
from benchgen.steps.judging import NO_ANSWER, JudgingError, judge_cases, judge_shard, run_job, summarize
from benchgen.steps.judging_batch import judge_prompts
from benchgen.vocabulary import InferenceMode
from tests.api_services import memory_services
from tests.fakes import MemoryRuns, MemoryStore
from tests.judged import colour_judged_template
from tests.throwaway import NAME
from tests.unit.test_judging import QUICK, SETTINGS, ScriptedJudge, YesOrNo, _judge, _line

PRICES = ModelPrices(
    on_demand=TokenPrices(input_per_million=2.0, output_per_million=10.0),
    batch=TokenPrices(input_per_million=1.0, output_per_million=5.0),
)


def _after_batch(
    model: ScriptedJudge, lines: list[dict[str, object]], earlier: list[JudgeRecord]
) -> list[JudgeRecord]:
    return judge_cases(
        lines,
        kind=Case,
        asks=YesOrNo(),
        settings=SETTINGS,
        model=model,
        backoff=QUICK,
        pacer=Pacer(Budget(in_flight=1)),
        in_flight=1,
        earlier=earlier,
    )


def test_after_a_batch_only_an_unreadable_answer_is_asked_again_and_a_failed_record_never() -> None:
    # Given a batch that answered the first case readably, the second unreadably, failed the third's
    # record, and a fourth case the run did not answer
    readable = JudgeRecord(id="c1", attempts=[JudgeAttempt(text="YES", input_tokens=20, output_tokens=1)])
    unreadable = JudgeRecord(
        id="c2",
        attempts=[
            JudgeAttempt(text="Perhaps", problem="answer YES or NO alone", input_tokens=20, output_tokens=1)
        ],
    )
    failed = JudgeRecord(id="c3", error="the provider refused this record")
    earlier = [readable, unreadable, failed, JudgeRecord(id="c4", error=NO_ANSWER)]
    judge = ScriptedJudge("NO")

    # When the shard is judged after the batch
    records = _after_batch(judge, [_line("c1"), _line("c2"), _line("c3"), _line("c4", None)], earlier)

    # Then only the unreadable answer was asked about again, once, saying what was wrong with it
    assert len(judge.prompts) == 1
    assert judge.prompts[0].endswith("Your last answer could not be read: answer YES or NO alone")
    assert records[0] == readable
    assert [attempt.text for attempt in records[1].attempts] == ["Perhaps", "NO"]
    assert records[1].read is not None
    # and the failed record stays unjudged with the provider's reason, never a pass or a fail
    assert records[2] == failed and records[2].read is None
    assert records[3] == JudgeRecord(id="c4", error=NO_ANSWER)


def test_a_batch_pass_s_answers_are_priced_at_batch_prices_and_its_retries_on_demand() -> None:
    # Given a batch pass: one case read on its batch answer, one read when asked again on demand
    judge = _judge(PRICES).model_copy(update={"mode": InferenceMode.BATCH})
    records = [
        JudgeRecord(
            id="c1", attempts=[JudgeAttempt(text="YES", input_tokens=1_000_000, output_tokens=100_000)]
        ),
        JudgeRecord(
            id="c2",
            attempts=[
                JudgeAttempt(
                    text="Perhaps", problem="unreadable", input_tokens=1_000_000, output_tokens=100_000
                ),
                JudgeAttempt(text="NO", input_tokens=500_000, output_tokens=100_000),
            ],
        ),
    ]

    # When its records are summarized
    summary = summarize(records, judge, None)

    # Then two million batch input tokens cost 2 USD, the retry's half million on demand 1 USD; the
    # output's 200k in batch 1 USD, the retry's 100k on demand 1 USD
    assert summary.mode is InferenceMode.BATCH
    assert summary.cost is not None and summary.cost.mode is InferenceMode.BATCH
    assert summary.cost.input_cost == pytest.approx(3.0)
    assert summary.cost.output_cost == pytest.approx(2.0)
    assert summary.cost.total == pytest.approx(5.0)
    assert (summary.calls, summary.judged, summary.input_tokens) == (3, 2, 2_500_000)


def test_a_batch_pass_on_a_connection_without_batch_prices_says_why_it_has_no_cost() -> None:
    on_demand_only = ModelPrices(on_demand=TokenPrices(input_per_million=2.0, output_per_million=10.0))
    judge = _judge(on_demand_only).model_copy(update={"mode": InferenceMode.BATCH})
    record = JudgeRecord(id="c1", attempts=[JudgeAttempt(text="YES", input_tokens=10, output_tokens=1)])

    summary = summarize([record], judge, None)

    assert summary.cost is None
    assert summary.cost_note == "no batch prices on the connection (only on-demand ones)"


def test_the_run_s_page_shows_its_judging_pass_s_batch_jobs() -> None:
    # Given a run whose judging pass waits for its batch job
    jobs = BatchSummary(
        jobs=[BatchJob(name="benchgen-0-000", first_record=0, records=40, job_id="b1")], polls=3
    )
    run = RunRecord(
        run_id="run-1",
        environment_id="judged",
        environment_version="v1",
        model="m",
        owner="u",
        judging_batch=jobs,
    )
    services = memory_services(runs=MemoryRuns(run))

    # When the run is read
    detail = run_detail("run-1", services=services)

    # Then its page shows the job, its provider id and the looks taken
    assert detail.judging_batch == jobs


def test_a_shard_whose_batch_judgments_are_not_of_its_cases_fails_saying_so(tmp_path: Path) -> None:
    # Given a batch pass whose shard file of first judgments names other cases than the shard's
    run = RunRecord(
        run_id="run-1", environment_id="flags", environment_version="v1", model="m", owner="alice"
    )
    runs = MemoryRuns(run.model_copy(update={"status": RunStatus.RUNNING}))
    judge = _judge().model_copy(update={"template": NAME, "mode": InferenceMode.BATCH})
    store = MemoryStore({judging_key("run-1", JUDGE_NAME): judge.model_dump_json().encode()})
    case = {"id": "flag-1", "question": "Colours of the flag?", "answer": "red", "colours": ["red"]}
    store.objects[judging_shard_key("run-1", "cases", 0)] = json.dumps(
        {"case": case, "answer": "red"}
    ).encode()
    part = tmp_path / "batch.jsonl"
    write_judgments(part, [JudgeRecord(id="flag-2", attempts=[JudgeAttempt(text="yes")])])
    store.objects[judging_shard_key("run-1", "batch", 0)] = part.read_bytes()

    # When the shard is judged, then it fails rather than give one case's judgment to another
    with colour_judged_template(), pytest.raises(JudgingError, match="not of its cases"):
        judge_shard(
            run_job("run-1", runs=runs),
            0,
            store=store,
            workdir=tmp_path / "work",
            model_for=lambda model, sampling: ScriptedJudge("yes"),
            backoff=QUICK,
        )


def test_a_batch_asks_the_judge_about_a_reasoning_answer_alone_and_never_about_one_cut_off() -> None:
    # Given a shard with an answer after a reasoning block, one cut off inside it, and no answer
    judge = _judge().model_copy(update={"template": NAME, "mode": InferenceMode.BATCH})
    case = {"id": "flag-1", "question": "Colours of the flag?", "answer": "red", "colours": ["red"]}
    answers = ["<think>the flag is red</think>red", "<think>the flag is", None]
    store = MemoryStore()
    store.objects[judging_shard_key("run-1", "cases", 0)] = "".join(
        json.dumps({"case": {**case, "id": f"flag-{index}"}, "answer": answer}) + "\n"
        for index, answer in enumerate(answers)
    ).encode()

    # When the batch's records are made, then only the reasoning answer is asked about, without its
    # reasoning, as the on-demand pass asks
    with colour_judged_template():
        prompts = list(judge_prompts(store, judge, "run-1", 1))
    assert len(prompts) == 1
    assert "'red'" in prompts[0]
    assert "think" not in prompts[0]
