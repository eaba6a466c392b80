"""The steps of a live run, as the InferencePipeline state machine runs them.

Deploy (the model answers a cheap call; the run is Deploying) -> Plan (the environment's cases, cut
into shards of at most the deploy-time size, and the items list of the shards, each with its share of
the run's ``max_in_flight``; the run is Running) -> InferShard for each shard, in a Distributed Map
that reads the items from S3 (the shard's cases asked concurrently, paced to its share, with retries;
throttling slows the shard down; a case that keeps failing is answered empty and recorded with its
reason) -> Assemble (the inference log, then the generated submission, whose upload starts the existing
ingest).

Each step reads the run and its environment again rather than trusting the state machine's data, so a
retried step redoes its work from the source. Failures raise :class:`LiveRunError` with a sentence the
state machine puts on the failed run.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchgen.bucket_layout import (
    GENERATED_SUBMISSION,
    inference_items_key,
    inference_shard_key,
    run_key,
    submission_key,
)
from benchgen.errors import BenchGenError
from benchgen.inference.model import Answer, Model
from benchgen.inference.pacing import Budget, Pacer, fanout
from benchgen.inference.prompts import prompt_for
from benchgen.inference.retry import Backoff, Outcome, ask
from benchgen.outputs import RunOutput
from benchgen.ports.environments import EnvironmentsReader
from benchgen.ports.providers import ModelFactory
from benchgen.ports.runs import RunsStore, ShardReport
from benchgen.ports.storage import ObjectStorage
from benchgen.providers.registry import provider
from benchgen.records.prices import AskedMode, RunCost, run_cost
from benchgen.records.runs import (
    InferenceProgress,
    InferenceSummary,
    LiveModel,
    RunRecord,
    RunStatus,
    ShardCounts,
)
from benchgen.records.timestamps import utc_in, utc_now
from benchgen.steps.context import open_run_environment, registered_version
from benchgen.steps.transfers import Uploads, downloads
from benchgen.vocabulary import InferenceMode, Sampling

# The reachability call: as short a question and answer as a model allows.
PROBE_PROMPT = "Reply with OK."
PROBE_SAMPLING = Sampling.model_construct(max_tokens=1, temperature=0.0)
UNANSWERED_SHOWN = 5
PROBE_WAIT = "the model's answer to one short call, before any case is asked"
CASES_WAIT = "the model's answers to the run's cases"
# What a step keeps of its Lambda time after its last call to the model could end: enough to write and
# record what the calls gave, so a silent model ends in a recorded outcome, never in `Task timed out`.
RECORD_MARGIN_S = 30.0
# How often a shard adds what it asked and heard to the run's progress: often enough for a user watching
# the run, seldom enough that a run's shards together make few writes.
PROGRESS_EVERY_S = 2.0


class LiveRunError(BenchGenError):
    """A live run cannot go on; the message is the run's failure reason."""


def live_run(runs: RunsStore, run_id: str, *statuses: RunStatus) -> tuple[RunRecord, LiveModel]:
    """The live run ``run_id`` and its model, read again; a LiveRunError unless it is in ``statuses``."""
    run = runs.get(run_id)
    if run is None:
        raise LiveRunError(f"run {run_id} does not exist: create it with POST /runs and a model_config")
    if run.live_model is None:
        raise LiveRunError(f"run {run_id} was created for an uploaded submission, not a live model")
    if run.status not in statuses:
        wanted = " or ".join(status.value for status in statuses)
        raise LiveRunError(
            f"run {run_id} is {run.status.value}, not {wanted}: it is not waiting for this step"
        )
    return run, run.live_model


def last_call_start(live: LiveModel, step_deadline: float | None) -> float | None:
    """The latest moment (``time.monotonic``) a call to the model may start in a step that ends at
    ``step_deadline``: its whole timeout, and the time to record what it gave, still fit."""
    return None if step_deadline is None else step_deadline - live.timeout_s - RECORD_MARGIN_S


def deploy(
    run_id: str,
    *,
    runs: RunsStore,
    model_for: ModelFactory,
    backoff: Backoff,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Mark the run Deploying and wait, within ``backoff`` and the step's ``deadline``, until the model
    answers one cheap call."""
    runs.deploy(run_id)
    _, live = live_run(runs, run_id, RunStatus.DEPLOYING)
    probe = model_for(live, PROBE_SAMPLING)

    def probe_call() -> Answer:
        waiting = InferenceProgress(
            waiting_for=PROBE_WAIT, call_deadline=utc_in(live.timeout_s), updated_at=utc_now()
        )
        runs.record_progress(run_id, waiting, expected=RunStatus.DEPLOYING)
        return probe.complete(PROBE_PROMPT)

    outcome = ask(probe_call, backoff, deadline=last_call_start(live, deadline))
    if outcome.answer is None:
        raise LiveRunError(
            f"the model {provider(live.provider).where(live)} did not answer: {outcome.error}. Check that "
            f"it is deployed and that connection {live.connection_id} points at it, then create the run again"
        )
    return {"run_id": run_id, "latency_ms": outcome.latency_ms}


def record_live_run_failure(run_id: str, reason: str, *, runs: RunsStore) -> None:
    """The InferencePipeline's caught failure: the run, while it waits for its model or is being answered,
    fails for ``reason``. A finished run keeps its outcome, and the state machine fails either way."""
    runs.fail(run_id, reason, expected=(RunStatus.PENDING, RunStatus.DEPLOYING, RunStatus.RUNNING))


def _cases(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                case = json.loads(line)
                prompt = prompt_for(case)
                if not prompt.strip():
                    raise LiveRunError(
                        f"case {case.get('id')!r} has no question: a live run asks the model each case's "
                        "question, so this environment needs uploaded predictions instead"
                    )
                yield {"id": str(case["id"]), "prompt": prompt}


def inference_mode(live: LiveModel, cases: int) -> AskedMode:
    """How a run of ``cases`` cases asks its model: ``auto`` goes to the provider's batch inference above
    the run's ``batch_above_cases`` (when the provider has one and the run fills a job); an explicit
    ``batch`` the provider cannot take fails the run saying why."""
    definition = provider(live.provider)
    api = definition.batch()
    if live.inference_mode is InferenceMode.ON_DEMAND:
        return InferenceMode.ON_DEMAND
    if live.inference_mode is InferenceMode.AUTO:
        fits = api is not None and cases >= api.limits.min_records
        return InferenceMode.BATCH if fits and cases > live.batch_above_cases else InferenceMode.ON_DEMAND
    if api is None:
        raise LiveRunError(definition.batch_gap)
    if cases < api.limits.min_records:
        raise LiveRunError(
            f"this run asks {cases} cases, and {api.title} needs at least {api.limits.min_records} records "
            "in a job: set inference_mode to on_demand (or auto, which asks a run this small on demand)"
        )
    return InferenceMode.BATCH


def plan(
    run_id: str,
    *,
    runs: RunsStore,
    environments: EnvironmentsReader,
    store: ObjectStorage,
    workdir: Path,
    shard_size: int,
) -> dict[str, Any]:
    """Cut the environment's cases into shards of at most ``shard_size`` (fewer when the run asks few
    requests at once: see :func:`fanout`) and write the items list the Map reads, each shard with its
    share of the run's ``max_in_flight``, and say whether the run goes to its provider's batch inference
    instead (:func:`inference_mode`); the run is Running from here."""
    run, live = live_run(runs, run_id, RunStatus.DEPLOYING, RunStatus.RUNNING)
    environment = open_run_environment(
        run, registered_version(run, environments), store=store, workdir=workdir
    )
    cases = sum(1 for _ in _cases(environment.cases_path))
    if cases == 0:
        raise LiveRunError(f"the environment of run {run_id} has no cases to ask the model")
    mode = inference_mode(live, cases)
    spread = fanout(cases, shard_size, live.limits.max_in_flight)
    shards = 0
    batch: list[dict[str, Any]] = []
    with Uploads(store) as uploads:

        def flush() -> None:
            nonlocal shards
            path = workdir / f"cases-{shards:05d}.jsonl"
            path.write_text("".join(json.dumps(case, ensure_ascii=False) + "\n" for case in batch), "utf-8")
            key = inference_shard_key(run_id, "cases", shards)
            uploads.put(path, key, content_type="application/jsonl")
            shards += 1
            batch.clear()

        for case in _cases(environment.cases_path):
            batch.append(case)
            if len(batch) == spread.shard_size:
                flush()
        if batch:
            flush()
    items_path = workdir / "items.json"
    with items_path.open("w", encoding="utf-8") as items:
        items.write("[")
        for shard in range(shards):
            item = {
                "run_id": run_id,
                "shard": shard,
                "in_flight": spread.per_shard,
                "shards_at_once": spread.shards,
            }
            items.write(("," if shard else "") + json.dumps(item, separators=(",", ":")))
        items.write("]")
    items_key = inference_items_key(run_id)
    store.upload(items_path, items_key, content_type="application/json")
    moved = runs.start(
        run_id,
        submission_key=submission_key(run_id, GENERATED_SUBMISSION),
        submission_filename=GENERATED_SUBMISSION,
        started_at=run.started_at,
        expected=(RunStatus.DEPLOYING, RunStatus.RUNNING),
    )
    if not moved:
        raise LiveRunError(f"run {run_id} stopped waiting for its model while its cases were planned")
    if mode is InferenceMode.ON_DEMAND:
        started = InferenceProgress(waiting_for=CASES_WAIT, cases=cases, updated_at=utc_now())
        runs.record_progress(run_id, started, expected=RunStatus.RUNNING)
    # Only counts and a key: the state's payload stays the same size whatever the run's (256 KiB at most).
    return {
        "run_id": run_id,
        "cases": cases,
        "shard_count": shards,
        "items_key": items_key,
        "shards_at_once": spread.shards,
        "in_flight_per_shard": spread.per_shard,
        "mode": mode.value,
    }


def answer_fields(answer: Answer | None) -> dict[str, Any]:
    """What a case's line of the inference log says of its answer (None: there is none)."""
    return {
        "prediction_text": answer.text if answer else "",
        "reasoning": answer.reasoning if answer else None,
        "answered": answer is not None,
        "input_tokens": answer.input_tokens if answer else None,
        "output_tokens": answer.output_tokens if answer else None,
        "reasoning_tokens": answer.reasoning_tokens if answer else None,
        "raw": answer.raw if answer else None,
    }


def _answer_line(case_id: str, outcome: Outcome) -> dict[str, Any]:
    return {
        "id": case_id,
        **answer_fields(outcome.answer),
        "latency_ms": outcome.latency_ms,
        "attempts": outcome.attempts,
        "error": outcome.error,
    }


def shard_budget(live: LiveModel, in_flight: int, shards_at_once: int) -> Budget:
    """One shard's share of the run's bounds: ``in_flight`` requests (the plan's split), and the
    per-minute quotas divided between the ``shards_at_once`` shards asking together."""
    limits = live.limits
    share = max(1, shards_at_once)
    return Budget(
        in_flight=max(1, min(in_flight, limits.max_in_flight)),
        requests_per_minute=limits.requests_per_minute / share if limits.requests_per_minute else None,
        tokens_per_minute=limits.tokens_per_minute / share if limits.tokens_per_minute else None,
    )


def infer_shard(
    run_id: str,
    shard: int,
    *,
    runs: RunsStore,
    store: ObjectStorage,
    workdir: Path,
    model_for: ModelFactory,
    backoff: Backoff,
    in_flight: int = 1,
    shards_at_once: int = 1,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Ask the model every case of one shard, up to ``in_flight`` at once (paced to the shard's share of
    the run's quotas), no call starting too late to end before the step's ``deadline``; each answer, or
    why there is none, goes to its file in the cases' order."""
    run, live = live_run(runs, run_id, RunStatus.RUNNING)
    model = model_for(live, live.sampling)
    cases_path = store.download(inference_shard_key(run_id, "cases", shard), workdir / "cases.jsonl")
    with cases_path.open(encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines if line.strip()]
    budget = shard_budget(live, in_flight, shards_at_once)
    pacer = Pacer(budget)
    last_start = last_call_start(live, deadline)
    progress = ShardProgress(
        lambda report: runs.add_progress(run_id, report),
        shard=shard,
        timeout_s=live.timeout_s,
        reported=run.shard_progress.get(str(shard)),
    )
    with (
        progress.reporting(),
        ThreadPoolExecutor(max_workers=budget.in_flight, thread_name_prefix=f"shard-{shard}") as pool,
    ):
        outcomes = list(
            pool.map(lambda case: _ask_case(model, case, backoff, pacer, last_start, progress), cases)
        )
    answers_path = workdir / "answers.jsonl"
    answered = unanswered = 0
    with answers_path.open("w", encoding="utf-8") as out:
        for case, outcome in zip(cases, outcomes, strict=True):
            answered += outcome.answer is not None
            unanswered += outcome.answer is None
            out.write(json.dumps(_answer_line(str(case["id"]), outcome), ensure_ascii=False) + "\n")
    key = inference_shard_key(run_id, "answers", shard)
    store.upload(answers_path, key, content_type="application/jsonl")
    return {
        "shard": shard,
        "answered": answered,
        "unanswered": unanswered,
        "throttled": pacer.throttles,
        "most_in_flight": pacer.most_in_flight,
    }


class ShardProgress:
    """What one shard has asked and heard, reported as the run's progress every ``PROGRESS_EVERY_S`` by a
    thread of its own (a call that never answers still shows as waiting). The shard's counts replace what
    it ``reported`` before (a retried shard's earlier attempt), so a shard asked twice counts once."""

    def __init__(
        self,
        report: Callable[[ShardReport], bool],
        *,
        shard: int,
        timeout_s: float,
        reported: ShardCounts | None = None,
    ) -> None:
        self._report = report
        self._shard = shard
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._counts = ShardCounts()
        self._reported = reported
        self._call_deadline: str | None = None

    def calling(self, *, first: bool) -> None:
        """A call goes out now (a case's ``first``, or a retry)."""
        with self._lock:
            self._counts.asked += first
            self._call_deadline = utc_in(self._timeout_s)

    def ended(self, outcome: Outcome) -> None:
        with self._lock:
            self._counts.asked += outcome.attempts == 0  # given up unsent: taken up all the same
            self._counts.answered += outcome.answer is not None
            self._counts.unanswered += outcome.answer is None

    def flush(self) -> None:
        with self._lock:
            now = self._counts.model_copy()
            deadline, self._call_deadline = self._call_deadline, None
        changed = now != self._reported or deadline is not None
        if changed and self._report(ShardReport(self._shard, self._reported, now, deadline)):
            self._reported = now

    @contextlib.contextmanager
    def reporting(self) -> Iterator[None]:
        """Report every ``PROGRESS_EVERY_S`` while the block runs, and once more as it ends."""
        done = threading.Event()

        def report() -> None:
            while not done.wait(PROGRESS_EVERY_S):
                self.flush()

        reporter = threading.Thread(target=report, name="progress", daemon=True)
        reporter.start()
        try:
            yield
        finally:
            done.set()
            reporter.join()
            self.flush()


def _ask_case(
    model: Model,
    case: dict[str, Any],
    backoff: Backoff,
    pacer: Pacer,
    last_start: float | None,
    progress: ShardProgress,
) -> Outcome:
    prompt = str(case["prompt"])
    calls = 0

    def call() -> Answer:
        nonlocal calls
        calls += 1
        progress.calling(first=calls == 1)
        return model.complete(prompt)

    outcome = ask(call, backoff, pacer=pacer, deadline=last_start)
    progress.ended(outcome)
    return outcome


def _tally_tokens(summary: InferenceSummary, record: dict[str, Any]) -> None:
    input_tokens, output_tokens = record.get("input_tokens"), record.get("output_tokens")
    if isinstance(input_tokens, int) and isinstance(output_tokens, int):
        summary.input_tokens += input_tokens
        summary.output_tokens += output_tokens
        reasoning_tokens = record.get("reasoning_tokens")
        summary.reasoning_tokens += reasoning_tokens if isinstance(reasoning_tokens, int) else 0
    else:
        summary.cases_without_tokens += 1


def priced(summary: InferenceSummary, live: LiveModel, mode: AskedMode) -> InferenceSummary:
    """The summary with the cost of its tokens at the run's prices in ``mode``, or why it has none."""
    cost = run_cost(
        live.prices, input_tokens=summary.input_tokens, output_tokens=summary.output_tokens, mode=mode
    )
    if isinstance(cost, RunCost):
        return summary.model_copy(update={"cost": cost, "cost_note": None})
    return summary.model_copy(update={"cost": None, "cost_note": cost})


def assemble(
    run_id: str,
    shard_count: int,
    *,
    runs: RunsStore,
    store: ObjectStorage,
    workdir: Path,
) -> dict[str, Any]:
    """Write the inference log, record it (tokens and cost included) on the run, then upload the
    generated submission."""
    run, summary, predictions_path = record_answers(
        run_id, shard_count, runs=runs, store=store, workdir=workdir, mode=InferenceMode.ON_DEMAND
    )
    upload_submission(run, predictions_path, store=store)
    counts = summary.model_dump(include={"cases", "answered", "unanswered", "input_tokens", "output_tokens"})
    return {"run_id": run_id, **counts}


def upload_submission(run: RunRecord, predictions_path: Path, *, store: ObjectStorage) -> None:
    """Upload the generated submission, whose upload starts ingest; one already there is left as it is
    (a retried step does not start ingest twice)."""
    target = run.submission_key or submission_key(run.run_id, GENERATED_SUBMISSION)
    if store.size(target) is None:
        store.upload(predictions_path, target, content_type="application/json")


def record_answers(
    run_id: str,
    shard_count: int,
    *,
    runs: RunsStore,
    store: ObjectStorage,
    workdir: Path,
    mode: AskedMode,
) -> tuple[RunRecord, InferenceSummary, Path]:
    """Write the inference log from the shards' answers and record it on the run, its tokens priced as
    asked in ``mode``; the run, what its answers came to, and the generated submission, written beside
    them (not uploaded yet)."""
    run, live = live_run(runs, run_id, RunStatus.RUNNING)
    log_path = RunOutput.INFERENCE_LOG.path_in(workdir)
    predictions_path = workdir / GENERATED_SUBMISSION
    summary = InferenceSummary()
    reasons: list[str] = []
    latency_ms = 0
    with log_path.open("w", encoding="utf-8") as log, predictions_path.open("w", encoding="utf-8") as out:
        out.write('{"predictions": [\n')
        keys = (inference_shard_key(run_id, "answers", shard) for shard in range(shard_count))
        for answers in downloads(store, keys, workdir):
            with answers.open(encoding="utf-8") as lines:
                for line in lines:
                    record = json.loads(line)
                    log.write(line)
                    summary.cases += 1
                    latency_ms += int(record["latency_ms"])
                    _tally_tokens(summary, record)
                    if record["answered"]:
                        summary.answered += 1
                    else:
                        summary.unanswered += 1
                        if len(reasons) < UNANSWERED_SHOWN:
                            reasons.append(f"{record['id']}: {record['error']}")
                    separator = ",\n" if summary.cases > 1 else ""
                    prediction = {"id": record["id"], "prediction_text": record["prediction_text"]}
                    # A reasoning model's reasoning goes apart from its answer: scoring judges the answer.
                    if record.get("reasoning") is not None:
                        prediction["reasoning"] = record["reasoning"]
                    out.write(separator + json.dumps(prediction, ensure_ascii=False))
        metadata = {
            "model": live.model_id,
            "provider": live.provider,
            "generated_by": "BenchGen live run",
            "execution_time": round(latency_ms / 1000, 3),
            "unanswered_cases": summary.unanswered,
        }
        out.write('\n], "metadata": ' + json.dumps(metadata) + "}\n")
    if summary.cases == 0:
        raise LiveRunError(f"run {run_id} has no answers to assemble: its environment's cases were not asked")
    summary.unanswered_reasons = reasons
    summary = priced(summary, live, mode)
    log_key = run_key(run_id, RunOutput.INFERENCE_LOG.file_name)
    store.upload(log_path, log_key, content_type="application/jsonl")
    runs.add_files(run_id, {RunOutput.INFERENCE_LOG: log_key})
    runs.record_inference(run_id, summary)
    return run, summary, predictions_path
