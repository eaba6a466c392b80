"""The batch branch of a live run: its cases go to the provider's batch inference instead of being asked
one by one.

SubmitBatch (the case shards Plan wrote, cut into jobs within the provider's limits, each job's records
uploaded and the job submitted) -> Wait -> PollBatch (each job's status and counts recorded on the run; a
job whose output the provider keeps is copied into the job's output folder, its manifest last), looping
a bounded number of times. The last manifest to land is the S3 event that assembles the submission
(``assemble_batch``): the cases answered from the records, a record with an error an unanswered case
with the provider's reason, the inference log and the generated submission written as on demand, whose
upload starts the existing ingest.

A judging pass sends its judge's prompts the same way (:class:`BatchWork` says whose records they are):
the same submit and poll, and its answers read back through :class:`BatchAnswers`
(``benchgen.steps.judging_batch``).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from benchgen.bucket_layout import (
    BATCH_MANIFEST,
    GENERATED_SUBMISSION,
    batch_input_key,
    batch_output_prefix,
    inference_shard_key,
    parse_batch_manifest_key,
    submission_key,
)
from benchgen.errors import BenchGenError
from benchgen.inference.model import Answer
from benchgen.ports.providers import BatchFactory, BatchJobs
from benchgen.ports.runs import RunsStore
from benchgen.ports.storage import ObjectStorage, SharedStorage
from benchgen.providers.batch import (
    BatchAnswerError,
    BatchApi,
    BatchJobSpec,
    BatchRefused,
    BatchState,
    BatchStatus,
    JobCutter,
    RecordResult,
    job_size,
    record_index,
)
from benchgen.providers.jobs import ProviderFault
from benchgen.providers.registry import provider
from benchgen.records.runs import BatchJob, BatchSummary, InferenceSummary, LiveModel, RunRecord, RunStatus
from benchgen.records.timestamps import wait_until
from benchgen.steps.attempts import Invocation, claim_run, fail_if_last_attempt
from benchgen.steps.inference import (
    LiveRunError,
    answer_fields,
    live_run,
    record_answers,
    upload_submission,
)
from benchgen.vocabulary import InferenceMode

ASSEMBLE_STEP = "assemble_batch"


def _api(live: LiveModel) -> BatchApi:
    definition = provider(live.provider)
    api = definition.batch()
    if api is None:
        raise LiveRunError(definition.batch_gap)
    return api


def job_name(seed: str, number: int) -> str:
    """A job's fixed name, made from ``seed`` (a run id, for a live run's jobs), within every provider's
    name rules (Bedrock's: 63 characters at most)."""
    return f"benchgen-{hashlib.sha256(seed.encode()).hexdigest()[:16]}-{number:03d}"


@dataclass(frozen=True)
class BatchWork:
    """What a run sends to its provider's batch inference: a live run's cases, or the prompts of its
    judging pass. The model that answers, the jobs recorded so far and how to record them, where the jobs'
    records and output are kept, and how a failure is told (``failure``, with ``again``: what to do)."""

    run_id: str
    model: LiveModel
    summary: BatchSummary | None
    record: Callable[[BatchSummary], object]
    name_seed: str
    input_key: Callable[[str], str]  # a job's name -> where its records are
    output_prefix: Callable[[str], str]  # a job's name -> where its output lands
    again: str
    failure: type[BenchGenError] = LiveRunError
    finished: bool = False  # the records' answers were read already (a live run assembled, even scored)

    def fail(self, reason: str) -> BenchGenError:
        return self.failure(f"{reason}; {self.again}")


# The statuses a live run's jobs are looked at in: their output may have assembled it, even scored it, before
# a look hears them end.
LOOKED_AT = (RunStatus.RUNNING, RunStatus.COMPLETED, RunStatus.FAILED)
LIVE_AGAIN = "create the run again, or with inference_mode on_demand (which asks the cases one by one)"


def live_work(runs: RunsStore, run_id: str, *statuses: RunStatus) -> BatchWork:
    """A live run's cases as batch work: its jobs on the run's ``batch``, its records and output under
    the batch keys."""
    run, live = live_run(runs, run_id, *statuses)
    return BatchWork(
        run_id=run_id,
        model=live,
        summary=run.batch,
        record=functools.partial(runs.record_batch, run_id),
        name_seed=run_id,
        input_key=functools.partial(batch_input_key, run_id),
        output_prefix=functools.partial(batch_output_prefix, run_id),
        again=LIVE_AGAIN,
        finished=run.status is not RunStatus.RUNNING,
    )


def _spec(job: BatchJob, work: BatchWork, bucket: str, role_arn: str | None) -> BatchJobSpec:
    input_key = work.input_key(job.name)
    return BatchJobSpec(
        name=job.name,
        model_id=work.model.model_id,
        records=job.records,
        input_key=input_key,
        input_uri=f"s3://{bucket}/{input_key}",
        output_uri=f"s3://{bucket}/{work.output_prefix(job.name)}",
        role_arn=role_arn,
    )


def shard_prompts(store: ObjectStorage, run_id: str, shard_count: int) -> Iterator[str]:
    """A live run's prompts, in case order, from the case shards its Plan wrote."""
    for shard in range(shard_count):
        for line in store.lines(inference_shard_key(run_id, "cases", shard)):
            if line.strip():
                yield str(json.loads(line)["prompt"])


def submit(
    work: BatchWork,
    prompts: Iterator[str],
    shard_count: int,
    records: int,
    *,
    store: ObjectStorage,
    workdir: Path,
    batch_for: BatchFactory,
    bucket: str,
    role_arn: str | None,
    wait_seconds: int,
    max_records: int | None = None,
) -> dict[str, Any]:
    """Cut the ``records`` prompts into jobs within the provider's limits (``max_records`` a job when the
    account's quota is lower), upload each job's records and submit the jobs not yet accepted (a retried
    step submits none twice); every job is on the run from here, and so is the moment of the first look,
    ``wait_seconds`` on, which the state machine's wait ends at."""
    api = _api(work.model)
    limits = api.limits
    if max_records is not None and max_records < limits.max_records:
        limits = replace(limits, max_records=max(max_records, limits.min_records))
    try:
        cutter = JobCutter(job_size(records, limits), limits)
        paths = _write_records(prompts, api, work.model, cutter, workdir)
        cutter.check()
    except BatchRefused as refused:
        raise work.fail(f"{api.title} cannot take this run: {refused}") from None
    known = {job.name: job for job in work.summary.jobs} if work.summary else {}
    jobs = [
        known.get(name) or BatchJob(name=name, first_record=first, records=count)
        for name, (first, count) in ((job_name(work.name_seed, n), cut) for n, cut in enumerate(cutter.jobs))
    ]
    summary = BatchSummary(jobs=jobs, case_shards=shard_count)
    work.record(summary)
    provider_jobs = batch_for(work.model)
    for job, path in zip(jobs, paths, strict=True):
        if job.job_id is not None:
            continue
        spec = _spec(job, work, bucket, role_arn)
        store.upload(path, spec.input_key, content_type="application/jsonl")
        job.job_id = provider_jobs.submit(spec, path)
        job.status = "Submitted"
        work.record(summary)
    summary.next_poll_at = wait_until(wait_seconds)
    work.record(summary)
    answer = {"run_id": work.run_id, "jobs": len(jobs), "polls": 0, "done": False}
    return {**answer, "next_poll_at": summary.next_poll_at}


def _write_records(
    prompts: Iterator[str], api: BatchApi, live: LiveModel, cutter: JobCutter, workdir: Path
) -> list[Path]:
    paths: list[Path] = []
    out: IO[str] | None = None
    try:
        for index, prompt in enumerate(prompts):
            line = json.dumps(api.record(index, live.model_id, prompt, live.sampling), ensure_ascii=False)
            if cutter.starts_job(index, len(line.encode()) + 1):
                if out is not None:
                    out.close()
                paths.append(workdir / f"records-{len(paths):03d}.jsonl")
                out = paths[-1].open("w", encoding="utf-8")
            assert out is not None  # the first record starts a job
            out.write(line + "\n")
    finally:
        if out is not None:
            out.close()
    return paths


def poll(
    work: BatchWork,
    polls: int,
    *,
    store: ObjectStorage,
    workdir: Path,
    batch_for: BatchFactory,
    bucket: str,
    max_polls: int,
    wait_seconds: int,
) -> dict[str, Any]:
    """One look at every job not yet ended, recorded on the run; a job that ended with its output at the
    provider has it copied into its output folder. Fails the run when a job failed, or when the jobs have
    not all ended after ``max_polls`` looks; work whose answers were read already is done. Work looked at
    again has the moment of its next look, ``wait_seconds`` on, recorded: the state machine's wait ends
    at it."""
    # A live run may be assembled, even scored, before a look hears its jobs end: a provider writes the
    # output (whose event assembles the run) before, or as, it says so.
    finished = work.finished
    api = _api(work.model)
    if work.summary is None:
        raise work.failure(f"run {work.run_id} has no batch jobs to follow: its jobs were never submitted")
    summary = work.summary
    provider_jobs = batch_for(work.model)
    empty: list[BatchJob] = []  # ended with no output to read, which will never come
    for job in summary.jobs:
        if job.job_id is None or api.status(job.status) is not BatchStatus.RUNNING:
            continue
        spec = _spec(job, work, bucket, None)
        try:
            state = provider_jobs.describe(spec, job.job_id)
        except ProviderFault as fault:
            if not fault.retryable:
                raise
            # The provider could not say this time (throttled, its own fault): the next look asks again.
            job.message = str(fault)
            continue
        except BatchAnswerError as impossible:
            if finished:
                continue
            raise work.fail(
                f"batch job {job.name} ({job.job_id}): {impossible}. The provider's answer cannot be trusted"
            ) from None
        job.status, job.succeeded, job.failed = state.provider_status, state.succeeded, state.failed
        job.message = state.message
        if state.status is not BatchStatus.ENDED:
            continue
        folder = _job_folder(work, job, api)
        if state.output_file or state.error_file:
            _copy_output(provider_jobs, state, job, folder, api, store=store, workdir=workdir)
        # Every kind's output is in the folder, manifest last, before its job says it ended (the provider
        # wrote it, or the line above copied it): a job that ended without one has answered nothing.
        if not _landed(store, folder):
            empty.append(job)
    summary.polls = polls + 1
    failed = [job for job in summary.jobs if api.status(job.status) is BatchStatus.FAILED]
    done = finished or all(api.status(job.status) is BatchStatus.ENDED for job in summary.jobs)
    again = not (done or empty or failed or summary.polls >= max_polls)
    summary.next_poll_at = wait_until(wait_seconds) if again else None
    work.record(summary)
    answer = {"run_id": work.run_id, "jobs": len(summary.jobs), "polls": summary.polls}
    if finished:
        return {**answer, "done": True}
    if empty:
        job = empty[0]
        raise work.fail(
            f"batch job {job.name} ({job.job_id}) ended {job.status} at {api.title} {api.no_output}: "
            f"none of its {job.records} records was answered"
        )
    if failed:
        job = failed[0]
        raise work.fail(
            f"batch job {job.name} ({job.job_id}) ended {job.status} at {api.title}: "
            f"{job.message or 'it gave no reason'}"
        )
    if not done and summary.polls >= max_polls:
        running = [job.name for job in summary.jobs if api.status(job.status) is BatchStatus.RUNNING]
        raise work.fail(
            f"the run's batch jobs had not all ended after {summary.polls} looks ({', '.join(running)} "
            f"still running at {api.title}): the run stops waiting"
        )
    return {**answer, "done": done, "next_poll_at": summary.next_poll_at}


def _copy_output(
    provider_jobs: BatchJobs,
    state: BatchState,
    job: BatchJob,
    folder: str,
    api: BatchApi,
    *,
    store: ObjectStorage,
    workdir: Path,
) -> None:
    """The job's output and error files, from the provider into its output ``folder``, then its manifest
    (the event that assembles the run). A manifest already there means they were copied before."""
    if store.size(folder + BATCH_MANIFEST) is not None:
        return
    for file_id, name in zip((state.output_file, state.error_file), api.output_files, strict=True):
        if file_id:
            path = provider_jobs.download(file_id, workdir / name)
            store.upload(path, folder + name, content_type="application/jsonl")
    manifest = workdir / BATCH_MANIFEST
    manifest.write_text(
        json.dumps(
            {
                "totalRecordCount": job.records,
                "processedRecordCount": (state.succeeded or 0) + (state.failed or 0),
                "successRecordCount": state.succeeded,
                "errorRecordCount": state.failed,
            }
        ),
        encoding="utf-8",
    )
    store.upload(manifest, folder + BATCH_MANIFEST, content_type="application/json")


def assemble_batch(
    key: str, *, runs: RunsStore, store: SharedStorage, workdir: Path, invocation: Invocation
) -> dict[str, Any]:
    """A job's manifest landed: once every job of the run has its output, write the run's answers from
    the records and upload its generated submission. Anything else (a run that has moved on, jobs still
    running, an assembly already done) changes nothing."""
    landed = parse_batch_manifest_key(key)
    run = runs.get(landed.run_id)
    if run is None or run.live_model is None or run.batch is None or run.status is not RunStatus.RUNNING:
        return {"key": key, "ignored": "no live run waits for this batch output"}
    target = run.submission_key or submission_key(run.run_id, GENERATED_SUBMISSION)
    if store.size(target) is not None:
        return {"key": key, "ignored": "the run's answers were assembled already"}
    work = live_work(runs, run.run_id, RunStatus.RUNNING)
    waiting = waiting_jobs(work, store)
    if waiting:
        return {"key": key, "run_id": run.run_id, "waiting_for": waiting}
    # Concurrent manifests of the last jobs: the one that claims the run writes its answers. The claim is
    # let go before the upload, so that the ingest it starts finds the run free.
    attempt = claim_run(runs, run, step=ASSEMBLE_STEP, invocation=invocation)
    if attempt is None:
        return {"key": key, "ignored": "another delivery is assembling this run"}
    try:
        claimed, summary, predictions_path = _assemble(work, store=store, runs=runs, workdir=workdir)
    except LiveRunError as error:
        runs.fail(run.run_id, str(error), expected=RunStatus.RUNNING)
        return {"key": key, "run_id": run.run_id, "failed": str(error)}
    except Exception as error:
        # The state machine has ended: the last delivery fails the run rather than leave it Running.
        if not fail_if_last_attempt(
            runs, run.run_id, step=ASSEMBLE_STEP, attempt=attempt, invocation=invocation, error=error
        ):
            raise
        return {"key": key, "run_id": run.run_id, "failed": "internal error"}
    finally:
        runs.release_claim(run.run_id, holder=invocation.holder)
    upload_submission(claimed, predictions_path, store=store)
    return {"key": key, "run_id": run.run_id, **summary.model_dump(exclude={"unanswered_reasons"})}


def _job_folder(work: BatchWork, job: BatchJob, api: BatchApi) -> str:
    """The folder a submitted job's output lands in."""
    assert job.job_id is not None
    return work.output_prefix(job.name) + api.output_folder(job.job_id) + "/"


def _landed(store: ObjectStorage, folder: str) -> bool:
    return store.size(folder + BATCH_MANIFEST) is not None


def waiting_jobs(work: BatchWork, store: ObjectStorage) -> list[str]:
    """The work's jobs whose output has not all landed yet (a job never accepted among them)."""
    assert work.summary is not None
    api = _api(work.model)
    return [
        job.name
        for job in work.summary.jobs
        if job.job_id is None or not _landed(store, _job_folder(work, job, api))
    ]


class BatchAnswers:
    """The answers the work's jobs gave, asked for in record order: one job's output is read at a time
    (a job holds at most its provider's maximum)."""

    def __init__(self, work: BatchWork, store: SharedStorage) -> None:
        assert work.summary is not None
        self._work, self._store = work, store
        self._api = _api(work.model)
        self._jobs = work.summary.jobs
        self._job = 0
        self._loaded = -1
        self._output = _JobOutput()

    def answer(self, index: int) -> tuple[BatchJob, Answer | None, str | None]:
        """The job of the record ``index`` (records are asked for in rising order), the answer it gave,
        and the provider's reason when it gave none."""
        while index >= self._jobs[self._job].first_record + self._jobs[self._job].records:
            self._job += 1
        job = self._jobs[self._job]
        if self._loaded != self._job:
            self._output = _results(self._store, self._api, _job_folder(self._work, job, self._api))
            self._loaded = self._job
        answer, error = _read_answer(index, job, self._output)
        return job, answer, error


def _assemble(
    work: BatchWork, *, store: SharedStorage, runs: RunsStore, workdir: Path
) -> tuple[RunRecord, InferenceSummary, Path]:
    assert work.summary is not None
    answers = BatchAnswers(work, store)
    index = 0
    for shard in range(work.summary.case_shards):
        path = workdir / f"answers-{shard:05d}.jsonl"
        with path.open("w", encoding="utf-8") as out:
            for line in store.lines(inference_shard_key(work.run_id, "cases", shard)):
                if not line.strip():
                    continue
                case = json.loads(line)
                job, answer, error = answers.answer(index)
                entry = {
                    "id": str(case["id"]),
                    **answer_fields(answer),
                    "latency_ms": 0,
                    "attempts": 1,
                    "error": error,
                    "batch_job": job.name,
                }
                out.write(json.dumps(entry, ensure_ascii=False) + "\n")
                index += 1
        store.upload(
            path, inference_shard_key(work.run_id, "answers", shard), content_type="application/jsonl"
        )
    return record_answers(
        work.run_id,
        work.summary.case_shards,
        runs=runs,
        store=store,
        workdir=workdir,
        mode=InferenceMode.BATCH,
    )


# An output record is one model answer and its JSON envelope: a line past this is not one to read whole.
MAX_RECORD_BYTES = 8 * 1024 * 1024


@dataclass
class _JobOutput:
    """One job's output files as read: each record by case index, the indexes answered by more than one
    record, and the lines that could not be read and named no record (the first few)."""

    found: dict[int, RecordResult] = field(default_factory=dict)
    repeated: set[int] = field(default_factory=set)
    unread: list[str] = field(default_factory=list)
    unread_count: int = 0


def _results(store: SharedStorage, api: BatchApi, folder: str | None) -> _JobOutput:
    """Every record of one job's output files, by case index. A line that cannot be read is the failure
    of the record it names, never the run's."""
    assert folder is not None
    output = _JobOutput()
    for name in api.output_files:
        chunks = store.chunks(folder + name)
        if chunks is None:
            continue
        for number, (line, length) in enumerate(_output_lines(chunks, MAX_RECORD_BYTES), start=1):
            if not line.strip():
                continue
            parsed = _parsed(line, length)
            if isinstance(parsed, dict):
                for result in api.results(parsed):
                    if result.index in output.found:
                        output.repeated.add(result.index)
                    else:
                        output.found[result.index] = result
                continue
            index = _named_record(line, api)
            if index in output.found:
                output.repeated.add(index)
                continue
            if index is not None:
                output.found[index] = RecordResult(index, None, f"{api.title} answered a line that {parsed}")
                continue
            output.unread_count += 1
            if len(output.unread) < 3:
                output.unread.append(f"line {number} of {name} {parsed}")
    return output


def _output_lines(chunks: Iterator[bytes], most: int) -> Iterator[tuple[bytearray, int]]:
    """Each line of a stream of chunks, without its end, and its length; a line longer than ``most``
    bytes is cut to its first ``most`` bytes, so that no line is held whole beyond that (nor twice: each
    line is handed out as read, not copied)."""
    kept = bytearray()
    length = 0
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if len(kept) < most:
                kept += piece[: most - len(kept)]
            length += len(piece)
            if end < 0:
                break
            yield kept, length
            kept, length, start = bytearray(), 0, end + 1
    if length:
        yield kept, length


def _parsed(line: bytearray, length: int) -> dict[str, Any] | str:
    """The JSON object a line holds, or what is wrong with it."""
    if length > MAX_RECORD_BYTES:
        return f"is {length} bytes, more than the {MAX_RECORD_BYTES} an output record may be"
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"is not UTF-8 (byte {error.start})"
    try:
        parsed = json.loads(text)
    except RecursionError:
        return "is nested too deep to read"
    except ValueError as error:  # not JSON, or a number too long for Python to convert
        return f"is not JSON ({error})"
    if not isinstance(parsed, dict):
        return f"is {_JSON_KINDS[type(parsed)]}, not a JSON object"
    return parsed


_JSON_KINDS: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "true or false",
    type(None): "null",
}


def _named_record(line: bytearray, api: BatchApi) -> int | None:
    """The case index an unreadable line names in its record id field, where it names one."""
    found = re.search(rb'"%s"\s*:\s*"(R\d{10})"' % api.record_id_field.encode(), line)
    return record_index(found[1].decode()) if found else None


def _read_answer(index: int, job: BatchJob, output: _JobOutput) -> tuple[Answer | None, str | None]:
    """The answer to the record ``index`` of ``job``, or why there is none."""
    result = output.found.get(index)
    if index in output.repeated:
        # Two records for one case may say different things: neither is taken as its answer.
        return None, f"batch job {job.name} returned more than one record for this case"
    if result is None:
        error = f"batch job {job.name} returned no record for this case"
        if output.unread_count:
            error += (
                f" ({output.unread_count} of its output lines could not be read, none naming a record: "
                f"{'; '.join(output.unread)})"
            )
        return None, error
    return result.answer, result.error if result.answer is None else None
