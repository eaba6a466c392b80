"""The InferencePipeline's steps over the in-memory ports: Deploy waits for the model's answer to a probe,
Plan cuts the environment's cases into shards and the run is Running, InferShard asks each case with
retries and writes its answers, Assemble writes the inference log and the predictions submission."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from benchgen.bucket_layout import inference_shard_key
from benchgen.inference.model import ModelCallError
from benchgen.inference.retry import Backoff
from benchgen.outputs import RunOutput
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import (
    DEFAULT_MODEL_TIMEOUT_S,
    InferenceLimits,
    InferenceSummary,
    LiveModel,
    RunRecord,
    RunStatus,
)
from benchgen.steps.inference import (
    PROBE_PROMPT,
    PROBE_SAMPLING,
    RECORD_MARGIN_S,
    LiveRunError,
    assemble,
    deploy,
    infer_shard,
    plan,
)
from benchgen.vocabulary import ProviderKind, Sampling
from tests.fakes import MemoryEnvironments, MemoryModel, MemoryRuns, MemoryStore
from tests.unit.run_world import BUNDLE_KEY, CASES, tiny_bundle

RUN_ID = "live-1"
BASE_URL = "http://127.0.0.1:1/v1"
SAMPLING = Sampling(temperature=0, max_tokens=64)
# No wait between attempts: a unit test does not sleep through a backoff.
BACKOFF = Backoff(attempts=3, base_s=0, cap_s=0)
SUBMISSION = f"submissions/{RUN_ID}/predictions.json"
ANSWERS = {"1+1": "#### 2", "2+2": "#### 4", "30*40": "#### 1200", "5-8": "#### -3"}


def _throttled() -> ModelCallError:
    return ModelCallError(
        "example-base answered HTTP 429: slow down", retryable=False, retry_after=0, throttled=True
    )


class LiveRun:
    """A live run of the tiny math benchmark: its bundle in the bucket, the runs and environments tables,
    and the model its connection reaches."""

    def __init__(
        self,
        root: Path,
        *,
        model: MemoryModel | None = None,
        status: RunStatus = RunStatus.PENDING,
        cases: list[dict[str, str]] | None = None,
        live: bool = True,
    ) -> None:
        self.root = root
        self.store = MemoryStore({BUNDLE_KEY: tiny_bundle(root, cases=cases or CASES)})
        self.environments = MemoryEnvironments(
            EnvironmentRecord(
                environment_id="tiny",
                version="v1",
                status=EnvironmentStatus.REGISTERED,
                bundle_key=BUNDLE_KEY,
            )
        )
        live_model = LiveModel(
            connection_id="conn-1",
            provider=ProviderKind("openai-compatible"),
            model_id="example-base",
            sampling=SAMPLING,
            base_url=BASE_URL,
        )
        self.runs = MemoryRuns(
            RunRecord(
                run_id=RUN_ID,
                environment_id="tiny",
                environment_version="v1",
                model="example-base",
                owner="alice",
                status=status,
                live_model=live_model if live else None,
            )
        )
        self.model = model or MemoryModel(ANSWERS)
        self.deliveries = 0

    def _workdir(self) -> Path:
        # Each step works in a folder of its own, as each Lambda invocation has its own /tmp.
        self.deliveries += 1
        workdir = self.root / f"step-{self.deliveries}"
        workdir.mkdir()
        return workdir

    def deploy(self, *, backoff: Backoff = BACKOFF, deadline: float | None = None) -> dict[str, Any]:
        return deploy(
            RUN_ID, runs=self.runs, model_for=self.model.for_run, backoff=backoff, deadline=deadline
        )

    def plan(self, shard_size: int = 3) -> dict[str, Any]:
        return plan(
            RUN_ID,
            runs=self.runs,
            environments=self.environments,
            store=self.store,
            workdir=self._workdir(),
            shard_size=shard_size,
        )

    def infer_shard(self, shard: int, *, deadline: float | None = None) -> dict[str, Any]:
        return infer_shard(
            RUN_ID,
            shard,
            runs=self.runs,
            store=self.store,
            workdir=self._workdir(),
            model_for=self.model.for_run,
            backoff=BACKOFF,
            deadline=deadline,
        )

    def assemble(self, shards: int) -> dict[str, Any]:
        return assemble(RUN_ID, shards, runs=self.runs, store=self.store, workdir=self._workdir())

    def run(self) -> RunRecord:
        run = self.runs.get(RUN_ID)
        assert run is not None
        return run

    def lines(self, key: str) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.store.objects[key].splitlines()]

    def put_answers(self, shard: int, answers: list[dict[str, Any]]) -> None:
        body = "".join(json.dumps(answer) + "\n" for answer in answers)
        self.store.objects[inference_shard_key(RUN_ID, "answers", shard)] = body.encode()


def _answer(case_id: str, text: str, *, latency_ms: int = 250, error: str | None = None) -> dict[str, Any]:
    return {
        "id": case_id,
        "prediction_text": text,
        "answered": error is None,
        "latency_ms": latency_ms,
        "attempts": 1 if error is None else 3,
        "input_tokens": 12 if error is None else None,
        "output_tokens": 30 if error is None else None,
        "error": error,
        "raw": json.dumps({"text": text}) if error is None else None,
    }


@pytest.fixture
def running(tmp_path: Path) -> LiveRun:
    """A live run whose model answered the probe and whose cases are planned in shards of three."""
    world = LiveRun(tmp_path)
    world.deploy()
    world.plan()
    assert world.run().status is RunStatus.RUNNING
    return world


# ---- Deploy -----------------------------------------------------------------------------------------------


def test_deploy_marks_the_run_deploying_once_the_model_answers_the_probe(tmp_path: Path) -> None:
    world = LiveRun(tmp_path)

    answer = world.deploy()

    assert world.run().status is RunStatus.DEPLOYING
    assert (answer["run_id"], answer["latency_ms"] >= 0) == (RUN_ID, True)
    # the model was asked the cheap question once, with the probe's sampling, not the run's
    assert world.model.prompts == [PROBE_PROMPT]
    assert world.model.configured == [("example-base", PROBE_SAMPLING)]


def test_a_model_that_never_answers_the_probe_fails_deploy_with_its_error(tmp_path: Path) -> None:
    down = ModelCallError("could not reach http://127.0.0.1:1/v1: connection refused", retryable=True)
    world = LiveRun(tmp_path, model=MemoryModel(down=down))

    with pytest.raises(LiveRunError) as failed:
        world.deploy()

    # the sentence the state machine puts on the failed run, after every attempt the backoff allows
    assert str(failed.value) == (
        f"the model example-base at {BASE_URL} did not answer: could not reach http://127.0.0.1:1/v1: "
        "connection refused (after 3 attempts). Check that it is deployed and that connection conn-1 points "
        "at it, then create the run again"
    )
    assert world.model.prompts == [PROBE_PROMPT] * 3
    assert world.run().status is RunStatus.DEPLOYING


def test_a_probe_that_keeps_failing_is_tried_only_while_a_whole_call_still_fits_in_the_step(
    tmp_path: Path,
) -> None:
    # Given a model that is never reached, and a step whose Lambda time ends half a second after the last
    # moment a whole call (the connection's timeout) and the recording of its outcome still fit
    down = ModelCallError("could not reach http://127.0.0.1:1/v1: connection refused", retryable=True)
    world = LiveRun(tmp_path, model=MemoryModel(down=down))
    step_ends = time.monotonic() + DEFAULT_MODEL_TIMEOUT_S + RECORD_MARGIN_S + 0.5

    # When Deploy probes it with attempts to spare
    with pytest.raises(LiveRunError) as failed:
        world.deploy(backoff=Backoff(attempts=10**9, base_s=0, cap_s=0), deadline=step_ends)

    # Then it stops trying when no more time is left, and says so, before the step's time is up
    assert time.monotonic() < step_ends
    assert re.search(
        r"connection refused \(after \d+ attempts; no time left for another before the step's Lambda "
        r"timeout\)\. Check that",
        str(failed.value),
    )


def test_a_probe_the_model_refuses_is_not_asked_again(tmp_path: Path) -> None:
    refused = ModelCallError("example-base answered HTTP 404: no such model", retryable=False)
    world = LiveRun(tmp_path, model=MemoryModel(down=refused))

    with pytest.raises(
        LiveRunError,
        match=r"did not answer: example-base answered HTTP 404: no such model \(after 1 attempt\)\.",
    ):
        world.deploy()

    assert world.model.prompts == [PROBE_PROMPT]


def test_deploying_a_run_created_for_an_uploaded_submission_is_refused(tmp_path: Path) -> None:
    world = LiveRun(tmp_path, live=False)

    with pytest.raises(LiveRunError) as refused:
        world.deploy()

    assert str(refused.value) == f"run {RUN_ID} was created for an uploaded submission, not a live model"
    assert world.model.prompts == []


# ---- Plan -------------------------------------------------------------------------------------------------


def test_plan_writes_the_cases_in_shards_and_the_run_is_running_on_its_generated_submission(
    tmp_path: Path,
) -> None:
    world = LiveRun(tmp_path)
    world.deploy()

    answer = world.plan(shard_size=3)

    # the state carries counts and a key; the shards are listed in S3, each with its share of the run's
    # max_in_flight (4 by default: one shard at a time asking its 3 cases at once takes 2 rounds, as 2
    # shards at once of 2 requests each would, with fewer requests in flight)
    assert answer == {
        "run_id": RUN_ID,
        "cases": 4,
        "shard_count": 2,
        "items_key": f"runs/{RUN_ID}/inference/items.json",
        "shards_at_once": 1,
        "in_flight_per_shard": 3,
        # 4 cases are far below the size auto sends to batch inference
        "mode": "on_demand",
    }
    assert json.loads(world.store.objects[answer["items_key"]]) == [
        {"run_id": RUN_ID, "shard": 0, "in_flight": 3, "shards_at_once": 1},
        {"run_id": RUN_ID, "shard": 1, "in_flight": 3, "shards_at_once": 1},
    ]
    asked = [world.lines(inference_shard_key(RUN_ID, "cases", shard)) for shard in (0, 1)]
    assert asked == [
        [{"id": "q1", "prompt": "1+1"}, {"id": "q2", "prompt": "2+2"}, {"id": "q3", "prompt": "30*40"}],
        [{"id": "q4", "prompt": "5-8"}],
    ]
    run = world.run()
    assert (run.status, run.submission_key, run.submission_filename) == (
        RunStatus.RUNNING,
        SUBMISSION,
        "predictions.json",
    )


def test_plan_fails_on_a_case_without_a_question_naming_it(tmp_path: Path) -> None:
    cases = [dict(case) for case in CASES]
    del cases[2]["question"]
    world = LiveRun(tmp_path, cases=cases)
    world.deploy()

    with pytest.raises(LiveRunError) as failed:
        world.plan()

    assert str(failed.value) == (
        "case 'q3' has no question: a live run asks the model each case's question, so this environment "
        "needs uploaded predictions instead"
    )
    assert world.run().status is RunStatus.DEPLOYING


def test_plan_of_a_run_that_is_not_waiting_for_its_model_is_refused(tmp_path: Path) -> None:
    world = LiveRun(tmp_path)

    with pytest.raises(LiveRunError) as refused:
        world.plan()

    assert str(refused.value) == (
        f"run {RUN_ID} is Pending, not Deploying or Running: it is not waiting for this step"
    )
    assert world.store.uploads == []


# ---- InferShard -------------------------------------------------------------------------------------------


def test_infer_shard_asks_each_case_with_the_runs_sampling_and_writes_its_answers(running: LiveRun) -> None:
    answer = running.infer_shard(0)

    assert answer == {"shard": 0, "answered": 3, "unanswered": 0, "throttled": 0, "most_in_flight": 1}
    assert running.model.prompts[-3:] == ["1+1", "2+2", "30*40"]
    assert running.model.configured[-1] == ("example-base", SAMPLING)
    written = running.lines(inference_shard_key(RUN_ID, "answers", 0))
    assert [
        (line["id"], line["prediction_text"], line["answered"], line["attempts"]) for line in written
    ] == [
        ("q1", "#### 2", True, 1),
        ("q2", "#### 4", True, 1),
        ("q3", "#### 1200", True, 1),
    ]
    assert written[0]["raw"] == json.dumps({"text": "#### 2"}) and written[0]["error"] is None


def test_a_throttled_case_is_asked_again_and_answered(tmp_path: Path) -> None:
    world = LiveRun(tmp_path, model=MemoryModel(ANSWERS, faults={"2+2": [_throttled(), _throttled()]}))
    world.deploy()
    world.plan()

    world.infer_shard(0)

    by_id = {line["id"]: line for line in world.lines(inference_shard_key(RUN_ID, "answers", 0))}
    assert (by_id["q2"]["answered"], by_id["q2"]["prediction_text"], by_id["q2"]["attempts"]) == (
        True,
        "#### 4",
        3,
    )
    assert world.model.prompts.count("2+2") == 3


def test_throttling_uses_none_of_a_cases_attempts(tmp_path: Path) -> None:
    # Given a case throttled more times than it may fail (3 attempts)
    world = LiveRun(tmp_path, model=MemoryModel(ANSWERS, faults={"2+2": [_throttled()] * 6}))
    world.deploy()
    world.plan()

    # When its shard is asked
    answer = world.infer_shard(0)

    # Then the case was answered on its seventh call: throttling slowed it, it did not fail it
    assert (answer["answered"], answer["unanswered"], answer["throttled"]) == (3, 0, 6)
    by_id = {line["id"]: line for line in world.lines(inference_shard_key(RUN_ID, "answers", 0))}
    assert (by_id["q2"]["answered"], by_id["q2"]["attempts"]) == (True, 7)


def test_a_case_that_keeps_failing_is_answered_empty_with_its_reason(tmp_path: Path) -> None:
    failing = ModelCallError("example-base answered HTTP 500: internal error", retryable=True)
    world = LiveRun(tmp_path, model=MemoryModel(ANSWERS, faults={"30*40": [failing] * 3}))
    world.deploy()
    world.plan()

    answer = world.infer_shard(0)

    assert answer == {"shard": 0, "answered": 2, "unanswered": 1, "throttled": 0, "most_in_flight": 1}
    (line,) = [line for line in world.lines(inference_shard_key(RUN_ID, "answers", 0)) if line["id"] == "q3"]
    assert (line["answered"], line["prediction_text"], line["attempts"], line["raw"]) == (False, "", 3, None)
    assert line["error"] == "example-base answered HTTP 500: internal error (after 3 attempts)"


def test_cases_a_shard_has_no_time_left_to_ask_are_unanswered_saying_so(running: LiveRun) -> None:
    # Given a shard whose step starts too late for one whole call before its Lambda timeout
    step_ends = time.monotonic() + RECORD_MARGIN_S

    # When it is asked
    answer = running.infer_shard(0, deadline=step_ends)

    # Then no case is sent, and each is unanswered with the reason, its answers written all the same
    assert (answer["answered"], answer["unanswered"]) == (0, 3)
    assert running.model.prompts == [PROBE_PROMPT]
    errors = {line["error"] for line in running.lines(inference_shard_key(RUN_ID, "answers", 0))}
    assert errors == {"not asked: the step ran out of time before its turn (its Lambda timeout was near)"}


def test_cases_whose_turn_under_the_rate_limit_comes_after_the_deadline_are_not_waited_for(
    tmp_path: Path,
) -> None:
    # Given a run paced to 6 requests a minute (one every 10 s), whose shard has 5 s to start calls
    world = LiveRun(tmp_path)
    run = world.run()
    assert run.live_model is not None
    limits = InferenceLimits(max_in_flight=1, requests_per_minute=6)
    world.runs.runs[RUN_ID] = run.model_copy(
        update={"live_model": run.live_model.model_copy(update={"limits": limits})}
    )
    world.deploy()
    world.plan()
    step_ends = time.monotonic() + DEFAULT_MODEL_TIMEOUT_S + RECORD_MARGIN_S + 5

    # When it is asked
    started = time.monotonic()
    answer = world.infer_shard(0, deadline=step_ends)

    # Then the first case is asked, and the two whose turn would come after the last moment a call may
    # start are not waited for: unanswered at once, with the reason
    assert time.monotonic() - started < 4
    assert (answer["answered"], answer["unanswered"]) == (1, 2)
    errors = [line["error"] for line in world.lines(inference_shard_key(RUN_ID, "answers", 0))]
    paced = (
        "not asked: the step ran out of time before its turn under the connection's rate limits (its "
        "Lambda timeout was near)"
    )
    assert errors[1:] == [paced, paced]
    assert world.model.prompts[1:] == ["1+1"]


def test_a_retried_shard_counts_its_cases_once_in_the_runs_progress(running: LiveRun) -> None:
    # Given the run's two shards (three cases and one) asked
    running.infer_shard(0)
    running.infer_shard(1)

    # When Step Functions retries the first shard's task, which asks its cases again
    running.infer_shard(0)

    # Then the run's progress counts each of the four cases once, each shard by its own counts
    progress = running.run().progress
    assert progress is not None
    assert (progress.cases, progress.asked, progress.answered, progress.unanswered) == (4, 4, 4, 0)
    assert {shard: counts.asked for shard, counts in running.run().shard_progress.items()} == {"0": 3, "1": 1}


def test_a_case_the_model_refuses_is_not_asked_again(tmp_path: Path) -> None:
    refused = ModelCallError("example-base answered HTTP 400: prompt too long", retryable=False)
    world = LiveRun(tmp_path, model=MemoryModel(ANSWERS, faults={"1+1": [refused]}))
    world.deploy()
    world.plan()

    world.infer_shard(0)

    first = world.lines(inference_shard_key(RUN_ID, "answers", 0))[0]
    assert (first["answered"], first["attempts"]) == (False, 1)
    assert first["error"] == "example-base answered HTTP 400: prompt too long (after 1 attempt)"


def test_infer_shard_of_a_run_that_is_not_running_asks_nothing(tmp_path: Path) -> None:
    world = LiveRun(tmp_path)
    world.deploy()

    with pytest.raises(LiveRunError, match=f"^run {RUN_ID} is Deploying, not Running: "):
        world.infer_shard(0)

    assert world.model.prompts == [PROBE_PROMPT]


# ---- Assemble ---------------------------------------------------------------------------------------------


def test_assemble_writes_the_predictions_submission_under_the_runs_submissions_prefix(
    running: LiveRun,
) -> None:
    running.put_answers(0, [_answer("q1", "#### 2"), _answer("q2", "#### 4"), _answer("q3", "#### 1200")])
    running.put_answers(1, [_answer("q4", "#### -3", latency_ms=1250)])

    answer = running.assemble(2)

    assert answer == {
        "run_id": RUN_ID,
        "cases": 4,
        "answered": 4,
        "unanswered": 0,
        "input_tokens": 48,
        "output_tokens": 120,
    }
    assert json.loads(running.store.objects[SUBMISSION]) == {
        "predictions": [
            {"id": "q1", "prediction_text": "#### 2"},
            {"id": "q2", "prediction_text": "#### 4"},
            {"id": "q3", "prediction_text": "#### 1200"},
            {"id": "q4", "prediction_text": "#### -3"},
        ],
        "metadata": {
            "model": "example-base",
            "provider": "openai-compatible",
            "generated_by": "BenchGen live run",
            "execution_time": 2.0,
            "unanswered_cases": 0,
        },
    }
    # the submission is uploaded last: its upload starts ingest
    assert running.store.uploads[-1] == SUBMISSION


def test_assemble_keeps_every_answer_in_the_inference_log_the_run_links(running: LiveRun) -> None:
    answers = [_answer("q1", "#### 2"), _answer("q2", "", error="HTTP 500 (after 3 attempts)")]
    running.put_answers(0, answers)

    running.assemble(1)

    run = running.run()
    log_key = f"runs/{RUN_ID}/inference_log.jsonl"
    assert run.files[RunOutput.INFERENCE_LOG] == log_key
    assert running.lines(log_key) == answers
    assert run.inference == InferenceSummary(
        cases=2,
        answered=1,
        unanswered=1,
        unanswered_reasons=["q2: HTTP 500 (after 3 attempts)"],
        input_tokens=12,
        output_tokens=30,
        cases_without_tokens=1,
        cost_note="no prices on the connection",
    )
    assert json.loads(running.store.objects[SUBMISSION])["metadata"]["unanswered_cases"] == 1


def test_a_retried_assemble_leaves_the_first_submission_as_it_is(running: LiveRun) -> None:
    running.put_answers(0, [_answer("q1", "#### 2")])
    running.assemble(1)
    first = running.store.objects[SUBMISSION]

    running.put_answers(0, [_answer("q1", "#### 3")])
    running.assemble(1)

    assert running.store.objects[SUBMISSION] == first
    assert running.store.uploads.count(SUBMISSION) == 1


def test_assemble_without_answers_is_refused_and_generates_no_submission(running: LiveRun) -> None:
    with pytest.raises(LiveRunError) as refused:
        running.assemble(0)

    assert str(refused.value) == (
        f"run {RUN_ID} has no answers to assemble: its environment's cases were not asked"
    )
    assert SUBMISSION not in running.store.objects


def test_the_steps_in_order_submit_what_the_model_answered(running: LiveRun) -> None:
    for shard in (0, 1):
        running.infer_shard(shard)

    running.assemble(2)

    predictions = json.loads(running.store.objects[SUBMISSION])["predictions"]
    assert predictions == [{"id": case["id"], "prediction_text": ANSWERS[case["question"]]} for case in CASES]
