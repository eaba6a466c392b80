"""The judging pass: the environment's judge asked about each answer of a run, before the run is scored.

For an environment whose template asks a judge (its definition's ``asks``), the score step hands the run
to the JudgingPipeline state machine instead of scoring it, which runs the steps below as a live run's
InferencePipeline runs its own: Plan (the judge reached through the environment owner's connection, as a
live run reaches its model, and asked one cheap call; the run's cases with their answers cut into shards,
each with its share of the connection's ``max_in_flight``) -> JudgeShard for each shard, in a Distributed
Map reading the items from S3 (each case asked with :func:`judge_one`, paced, throttling slowing the shard
rather than failing it; a case whose calls keep failing is recorded with its ``error``, unjudged) ->
Assemble (``judgments.jsonl`` in case order, and the judge's calls, tokens and cost on the run). The
state machine then has the score step score the run, which reads the judgments.

Each step reads the run again rather than trusting the state machine's data, and raises
:class:`JudgingError` with the sentence the run fails with.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, overload

import msgspec

from benchgen import vocabulary
from benchgen.bucket_layout import (
    judging_key,
    prediction_key,
    run_key,
    shard_name,
)
from benchgen.cases import Case
from benchgen.errors import BenchGenError
from benchgen.inference.judge_calls import judge_each, judge_one
from benchgen.inference.model import Model
from benchgen.inference.pacing import Pacer, fanout
from benchgen.inference.retry import Backoff, ask
from benchgen.judging import (
    JUDGE_NAME,
    JUDGMENTS_NAME,
    JudgeRecord,
    JudgeRequests,
    JudgeSettings,
    family_check,
    iter_judgments,
)
from benchgen.judging import write_judgments as write_records
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.ports.connections import ConnectionsReader, owned_connections
from benchgen.ports.environments import OwnedEnvironments
from benchgen.ports.providers import ModelFactory
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.providers.connections import ConnectionRecord
from benchgen.providers.judges import JudgeUnreachable, judge_connection
from benchgen.providers.judges import judge_model as reached_judge
from benchgen.providers.registry import provider
from benchgen.records.environments import EnvironmentRecord
from benchgen.records.prices import AskedMode, RunCost, run_cost
from benchgen.records.runs import JudgingSummary, LiveModel, RunRecord, RunStatus
from benchgen.scoring import registry
from benchgen.scoring.ingested import merge_join, read_ingested
from benchgen.scoring.join import iter_cases
from benchgen.scoring.reasoned import CUT_OFF
from benchgen.scoring.reasoning import answer_text
from benchgen.steps.context import open_run_environment, registered_version
from benchgen.steps.inference import (
    PROBE_PROMPT,
    PROBE_SAMPLING,
    LiveRunError,
    inference_mode,
    last_call_start,
    shard_budget,
)
from benchgen.steps.transfers import Uploads, downloads
from benchgen.vocabulary import InferenceMode

ITEMS_NAME = "items.json"
NO_ANSWER = "the run's model gave no answer to this case: there is nothing to judge"
UNJUDGED_SHOWN = 5


class JudgingError(BenchGenError):
    """The judging pass cannot go on; the message is the run's failure reason."""


class Judge(LazyModel):
    """The judge a run's judging pass asks, as Plan found it: the template that asks (by name), the
    environment's ``judge:`` settings, and the model they reach through the owner's connection."""

    template: str
    settings: JudgeSettings
    model: LiveModel
    connection_name: str | None = None  # the name its owner gave the connection the judge is reached through
    mode: AskedMode = InferenceMode.ON_DEMAND  # batch: its first answers come from batch jobs


def asks_of(template: str | None) -> JudgeRequests | None:
    """How the template ``template`` asks a judge about each answer; None when it does not (or the
    environment has no template: its scoring program scores)."""
    if template is None or template not in vocabulary.TEMPLATES:
        return None
    return registry.template(template).asks


def judgments_key(run_id: str) -> str:
    """The run's judgments: what the environment's judge said of each answer, which scoring reads."""
    return run_key(run_id, JUDGMENTS_NAME)


def judged_before_scoring(version: EnvironmentRecord | None) -> bool:
    """Whether a run of the environment ``version`` waits for a judging pass before it is scored: its
    template asks. (A version that is not registered is not: scoring fails the run saying so.)"""
    return version is not None and asks_of(version.template) is not None


def _connection(
    settings: JudgeSettings, owner: str | None, connections: ConnectionsReader
) -> ConnectionRecord:
    """``owner``'s connection that ``settings.connection`` names by name or id; a JudgeUnreachable saying
    what to change when there is none."""
    named = settings.connection
    return judge_connection(
        named, owner, connections.get(named), lambda: owned_connections(connections, owner) if owner else ()
    )


def reach_judge(
    settings: JudgeSettings, owner: str | None, connections: ConnectionsReader, model_id: str | None = None
) -> LiveModel:
    """The judge (``model_id`` in place of its own when given), reached as a live run reaches its model
    through ``owner``'s connection that ``settings.connection`` names by name or id; a JudgeUnreachable
    saying what to change when it cannot be."""
    return reached_judge(settings, _connection(settings, owner, connections), model_id)


def judge_of(template: str, settings: JudgeSettings, *, owner: str, connections: ConnectionsReader) -> Judge:
    """The judge, reached through ``owner``'s connection ``settings.connection`` (:func:`reach_judge`); a
    JudgingError saying what to fix in ``judge:`` when it cannot be."""
    try:
        connection = _connection(settings, owner, connections)
        model = reached_judge(settings, connection)
    except JudgeUnreachable as error:
        raise JudgingError(f"{error}; then upload the submission again") from None
    return Judge(template=template, settings=settings, model=model, connection_name=connection.name)


def running_run(runs: RunsStore, run_id: str) -> RunRecord:
    run = runs.get(run_id)
    if run is None:
        raise JudgingError(f"run {run_id} does not exist: there is nothing to judge")
    if run.status is not RunStatus.RUNNING:
        raise JudgingError(f"run {run_id} is {run.status.value}, no longer Running: its judging stops here")
    return run


def _probe(judge: LiveModel, model_for: ModelFactory, backoff: Backoff, deadline: float | None) -> None:
    outcome = ask(lambda: model_for(judge, PROBE_SAMPLING).complete(PROBE_PROMPT), backoff, deadline=deadline)
    if outcome.answer is None:
        raise JudgingError(
            f"the judge {provider(judge.provider).where(judge)} did not answer: {outcome.error}. Check that "
            f"connection {judge.connection_id} of the environment's owner reaches it, then upload the "
            "submission again"
        )


def _pairs(cases_path: Path, prediction_output: Path, kind: type[Case]) -> Iterator[dict[str, Any]]:
    """Each case's line of a shard file: the case as the template reads it and the run's answer to it
    (None: no answer)."""
    with read_ingested(prediction_output) as stream:
        for case, prediction in merge_join(iter_cases(cases_path, kind), iter(stream)):
            answer = prediction.prediction_text if prediction is not None else None
            yield {"case": msgspec.to_builtins(case), "answer": answer}


def plan(
    run_id: str,
    *,
    runs: RunsStore,
    environments: OwnedEnvironments,
    connections: ConnectionsReader,
    store: ObjectStorage,
    workdir: Path,
    model_for: ModelFactory,
    backoff: Backoff,
    shard_size: int,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Find the environment's judge and check it answers, then cut the run's cases with their answers into
    shards of at most ``shard_size`` (fewer when the judge's connection allows few requests at once: see
    :func:`fanout`) and write the items list the Map reads, each shard with its share of the judge's
    ``max_in_flight``; and say whether the judge is asked through its provider's batch inference first
    (:func:`inference_mode`, over the cases with an answer)."""
    run = running_run(runs, run_id)
    record = registered_version(run, environments)
    if asks_of(record.template) is None or record.template is None:
        raise JudgingError(f"the environment of run {run_id} asks no judge: the run is scored as it is")
    environment = open_run_environment(run, record, store=store, workdir=workdir / "env")
    settings = environment.spec.judge
    if settings is None:
        raise JudgingError(
            f"template {record.template} asks a judge, and competition.yaml has no judge: section: name the "
            "judge's connection and model_id there and register the environment again"
        )
    owner = environments.owner_of(run.environment_id)
    if owner is None:
        raise JudgingError(
            f"environment {run.environment_id} has no owner whose connection could reach its judge"
        )
    judge = judge_of(record.template, settings, owner=owner.owner, connections=connections)
    _probe(judge.model, model_for, backoff, last_call_start(judge.model, deadline))
    kind = registry.template(record.template).case_type
    prediction_output = store.download(prediction_key(run_id), RunOutput.PREDICTION_OUTPUT.path_in(workdir))
    cases = asked = 0
    for pair in _pairs(environment.cases_path, prediction_output, kind):
        cases += 1
        asked += asked_about(pair["answer"])[0] is not None
    if cases == 0:
        raise JudgingError(f"the environment of run {run_id} has no cases to judge")
    try:
        # As a live run chooses: a run this big goes to the judge provider's batch inference.
        mode = inference_mode(judge.model, asked) if asked else InferenceMode.ON_DEMAND
    except LiveRunError as error:
        raise JudgingError(f"the judge: section: {error}") from None
    judge = judge.model_copy(update={"mode": mode})
    lines = _pairs(environment.cases_path, prediction_output, kind)
    planned = write_job(
        functools.partial(judging_key, run_id),
        {"run_id": run_id},
        judge,
        lines,
        cases=cases,
        shard_size=shard_size,
        store=store,
        workdir=workdir,
    )
    return {"run_id": run_id, "cases": cases, "asked": asked, "mode": mode.value, **planned}


def write_job(
    key: Callable[[str], str],
    subject: dict[str, str],
    judge: Judge,
    lines: Iterable[dict[str, Any]],
    *,
    cases: int,
    shard_size: int,
    store: ObjectStorage,
    workdir: Path,
) -> dict[str, Any]:
    """Write a judging job's working files where ``key(name)`` says: the judge it asks, its ``cases``
    lines (each a case and the answer to judge) cut into shards of at most ``shard_size`` (fewer when the
    judge's connection allows few requests at once: see :func:`fanout`), and the items list the Map reads,
    each item ``subject`` and a shard with its share of the judge's ``max_in_flight``. Answers what the
    state machine needs: only counts and a key, so the state's payload stays the same size whatever the
    job's."""
    spread = fanout(cases, shard_size, judge.model.limits.max_in_flight)
    shards = 0
    # Streamed, a shard at a time: a big run's cases and answers need not fit in memory at once.
    with Uploads(store) as uploads:
        judge_path = workdir / JUDGE_NAME
        judge_path.write_text(judge.model_dump_json(), encoding="utf-8")
        uploads.put(judge_path, key(JUDGE_NAME), content_type="application/json")
        batch: list[dict[str, Any]] = []

        def flush() -> None:
            nonlocal shards
            name = shard_name("cases", shards)
            path = workdir / name
            path.write_text("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in batch), "utf-8")
            uploads.put(path, key(name), content_type="application/jsonl")
            shards += 1
            batch.clear()

        for line in lines:
            batch.append(line)
            if len(batch) == spread.shard_size:
                flush()
        if batch:
            flush()
    items = [
        {**subject, "shard": shard, "in_flight": spread.per_shard, "shards_at_once": spread.shards}
        for shard in range(shards)
    ]
    items_path = workdir / ITEMS_NAME
    items_path.write_text(json.dumps(items, separators=(",", ":")), encoding="utf-8")
    items_key = key(ITEMS_NAME)
    store.upload(items_path, items_key, content_type="application/json")
    return {"shard_count": shards, "items_key": items_key, "shards_at_once": spread.shards}


def asked_about(answer: str | None) -> tuple[str | None, str | None]:
    """What the judge is asked about a run's ``answer``, as scoring reads it (the answer apart from a
    reasoning block before it) and None; or None and why it is not asked (no answer, or one cut off inside
    its reasoning block). On demand and in a batch alike."""
    if answer is None:
        return None, NO_ANSWER
    text = answer_text(answer)
    return (text, None) if text is not None else (None, CUT_OFF)


def judge_cases(
    lines: Sequence[dict[str, Any]],
    *,
    kind: type[Case],
    asks: JudgeRequests,
    settings: JudgeSettings,
    model: Model,
    backoff: Backoff,
    pacer: Pacer,
    in_flight: int,
    deadline: float | None = None,
    earlier: Sequence[JudgeRecord] | None = None,
) -> list[JudgeRecord]:
    """The judge's record of each case of ``lines`` (a shard file's), in their order, up to ``in_flight``
    asked at once and paced by ``pacer``; a case without an answer (or cut off inside its reasoning block)
    is not asked, and an answer after a reasoning block is asked about alone. ``earlier``: each case's
    record from the judge's batch jobs, where it was asked there first: only an answer that could not be
    read is asked again."""
    decode = msgspec.convert

    def judged(line: dict[str, Any], before: JudgeRecord | None) -> JudgeRecord:
        case = decode(line["case"], kind)
        answer, not_asked = asked_about(line["answer"])
        if answer is None:
            return JudgeRecord(id=case.id, error=not_asked)
        if before is not None and not before.attempts:
            return before  # the provider failed its record: unjudged, with the provider's reason
        return judge_one(
            case.id,
            lambda problem: asks.prompt(case, answer, settings, problem),
            lambda text: asks.problem(case, text),
            model,
            backoff,
            pacer=pacer,
            deadline=deadline,
            first=before.attempts[0] if before is not None else None,
        )

    befores: Sequence[JudgeRecord | None] = earlier if earlier is not None else [None] * len(lines)
    return judge_each(list(zip(lines, befores, strict=True)), lambda pair: judged(*pair), in_flight)


def run_job(run_id: str, *, runs: RunsStore) -> Callable[[str], str]:
    """Where the run's judging pass keeps its working files (its shards read and write them), while the
    run is Running."""
    running_run(runs, run_id)
    return functools.partial(judging_key, run_id)


def judge_shard(
    key: Callable[[str], str],
    shard: int,
    *,
    store: ObjectStorage,
    workdir: Path,
    model_for: ModelFactory,
    backoff: Backoff,
    in_flight: int = 1,
    shards_at_once: int = 1,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Ask the judge about every case of one shard of a judging job whose working files ``key(name)``
    names (a run's judging pass, a version's calibration), up to ``in_flight`` at once (paced to the
    shard's share of the judge's quotas), no call starting too late to end before the step's
    ``deadline``; the shard's judgments go to its file in the cases' order."""
    judge_path = store.download(key(JUDGE_NAME), workdir / JUDGE_NAME)
    judge = Judge.model_validate_json(judge_path.read_bytes())
    definition = registry.template(judge.template)
    if definition.asks is None:
        raise JudgingError(f"template {judge.template} no longer asks a judge: there is nothing to judge")
    cases_path = store.download(key(shard_name("cases", shard)), workdir / "cases.jsonl")
    with cases_path.open(encoding="utf-8") as lines:
        cases = [json.loads(line) for line in lines if line.strip()]
    earlier = None
    if judge.mode is InferenceMode.BATCH:
        batch_path = store.download(key(shard_name("batch", shard)), workdir / "batch.jsonl")
        earlier = list(iter_judgments(batch_path))
        if [record.id for record in earlier] != [line["case"]["id"] for line in cases]:
            raise JudgingError(
                f"shard {shard}: its judgments from the batch are not of its cases; upload the submission "
                "again to judge the run afresh"
            )
    budget = shard_budget(judge.model, in_flight, shards_at_once)
    pacer = Pacer(budget)
    records = judge_cases(
        cases,
        kind=definition.case_type,
        asks=definition.asks,
        settings=judge.settings,
        model=model_for(judge.model, judge.settings.sampling),
        backoff=backoff,
        pacer=pacer,
        in_flight=budget.in_flight,
        deadline=last_call_start(judge.model, deadline),
        earlier=earlier,
    )
    path = workdir / "judgments.jsonl"
    write_records(path, records)
    store.upload(path, key(shard_name("judgments", shard)), content_type="application/jsonl")
    return {
        "shard": shard,
        "judged": sum(record.read is not None for record in records),
        "unjudged": sum(record.read is None for record in records),
        "throttled": pacer.throttles,
        "most_in_flight": pacer.most_in_flight,
    }


def summarize(records: Iterable[JudgeRecord], judge: Judge, *judged_models: str | None) -> JudgingSummary:
    """What the judge's records of a run come to, its tokens priced at its connection's prices as it was
    asked (a batch pass's first answers at the batch prices, its retries on demand); ``judged_models``:
    what names the run's model, the first that tells its family deciding the same-family flag (a live
    run's model id, then the run's model name, an uploaded run's only one)."""
    same, family_note = family_check(judge.settings, "judged", *judged_models)
    summary = JudgingSummary(
        connection_id=judge.model.connection_id,
        connection_name=judge.connection_name,
        provider=judge.model.provider,
        model_id=judge.model.model_id,
        mode=judge.mode,
        family=judge.settings.judge_family,
        same_family=same,
        family_note=family_note,
    )
    batched = [0, 0]  # the input and output tokens of the answers batch jobs gave
    for record in records:
        summary.cases += 1
        summary.calls += len(record.attempts)
        for number, attempt in enumerate(record.attempts):
            if attempt.input_tokens is None or attempt.output_tokens is None:
                summary.calls_without_tokens += 1
                continue
            summary.input_tokens += attempt.input_tokens
            summary.output_tokens += attempt.output_tokens
            if judge.mode is InferenceMode.BATCH and number == 0:
                batched[0] += attempt.input_tokens
                batched[1] += attempt.output_tokens
        if record.read is not None:
            summary.judged += 1
            continue
        summary.errors += record.error is not None
        summary.unreadable += record.error is None
        if len(summary.unjudged_reasons) < UNJUDGED_SHOWN:
            why = record.error or record.attempts[-1].problem
            summary.unjudged_reasons.append(f"{record.id}: {why}")
    parts: tuple[tuple[AskedMode, int, int], ...] = (
        (InferenceMode.BATCH, batched[0], batched[1]),
        (InferenceMode.ON_DEMAND, summary.input_tokens - batched[0], summary.output_tokens - batched[1]),
    )
    costs = [
        run_cost(judge.model.prices, input_tokens=input_tokens, output_tokens=output_tokens, mode=mode)
        for mode, input_tokens, output_tokens in parts
        if mode is judge.mode or input_tokens or output_tokens
    ]
    note = next((cost for cost in costs if not isinstance(cost, RunCost)), None)
    if note is not None:
        return summary.model_copy(update={"cost_note": note})
    priced = [cost for cost in costs if isinstance(cost, RunCost)]
    input_cost = sum(cost.input_cost for cost in priced)
    output_cost = sum(cost.output_cost for cost in priced)
    total = RunCost(
        mode=judge.mode, input_cost=input_cost, output_cost=output_cost, total=input_cost + output_cost
    )
    return summary.model_copy(update={"cost": total})


def assemble(
    run_id: str, shard_count: int, *, runs: RunsStore, store: ObjectStorage, workdir: Path
) -> dict[str, Any]:
    """Write the run's judgments from its shards', in case order, and record what the judge's calls came
    to on the run."""
    run = running_run(runs, run_id)
    judge_path = store.download(judging_key(run_id, JUDGE_NAME), workdir / JUDGE_NAME)
    judge = Judge.model_validate_json(judge_path.read_bytes())
    path = workdir / "judgments.jsonl"
    write_records(
        path, job_lines(functools.partial(judging_key, run_id), "judgments", shard_count, store, workdir)
    )
    summary = summarize(
        iter_judgments(path), judge, run.live_model.model_id if run.live_model else None, run.model
    )
    store.upload(path, judgments_key(run_id), content_type="application/jsonl")
    if runs.record_judging(run_id, summary) is None:
        raise JudgingError(f"run {run_id} stopped Running while its judgments were assembled")
    return {"run_id": run_id, **summary.model_dump(include={"cases", "judged", "unreadable", "errors"})}


@overload
def job_lines(
    key: Callable[[str], str],
    kind: Literal["judgments"],
    shard_count: int,
    store: ObjectStorage,
    workdir: Path,
) -> Iterator[JudgeRecord]: ...


@overload
def job_lines(
    key: Callable[[str], str], kind: Literal["cases"], shard_count: int, store: ObjectStorage, workdir: Path
) -> Iterator[dict[str, Any]]: ...


def job_lines(
    key: Callable[[str], str], kind: str, shard_count: int, store: ObjectStorage, workdir: Path
) -> Iterator[JudgeRecord] | Iterator[dict[str, Any]]:
    """A judging job's ``judgments`` (its records) or ``cases`` lines, shard after shard, in case order."""
    keys = (key(shard_name(kind, shard)) for shard in range(shard_count))
    parts = downloads(store, keys, workdir / f"{kind}-parts")
    if kind == "judgments":
        return (record for part in parts for record in iter_judgments(part))
    return (
        json.loads(line) for part in parts for line in part.read_text("utf-8").splitlines() if line.strip()
    )


def record_judging_failure(run_id: str, reason: str, *, runs: RunsStore) -> None:
    """The JudgingPipeline's caught failure: the Running run fails for ``reason``; a finished run keeps
    its outcome."""
    runs.fail(run_id, reason, expected=RunStatus.RUNNING)
