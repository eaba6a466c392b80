"""What ``/runs`` does: create a run (and its upload URL), list runs, and read one run, its files and
results."""

from __future__ import annotations

import posixpath
import secrets
import time
from collections.abc import Collection, Mapping
from contextlib import closing
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from benchgen.bucket_layout import live_execution_name, run_key, submission_key
from benchgen.environment import PhaseError, phase_position
from benchgen.jsonhead import pick_top_level_fields
from benchgen.outputs import RunOutput
from benchgen.records.environments import EnvironmentStatus
from benchgen.records.judge_calibration import JudgeAgreement
from benchgen.records.runs import RunConfig, RunRecord, RunStatus
from benchgen.requests.errors import Conflict, Forbidden, NotFound, Unprocessable
from benchgen.requests.idempotency import create_once
from benchgen.requests.live_runs import live_model_for
from benchgen.requests.schemas.runs import (
    CreatedRun,
    CreateRunRequest,
    DatasetLink,
    DetailedResults,
    InferenceProgressView,
    LiveModelView,
    MetricTile,
    RunConfiguration,
    RunDetail,
    RunFile,
    RunFiles,
    RunList,
    RunSummary,
)
from benchgen.requests.services import ApiServices

DEFAULT_SUBMISSION_FILENAME = "submission.zip"
# Files a browser can show in place (the stored content type says HTML or plain text): the console's
# View button and its embedded report use a URL without the attachment disposition.
VIEWABLE_SUFFIXES = (".html", ".log")
_DETAILED_HEAD_FIELDS = frozenset({"title", "summary", "metrics", "breakdowns"})


def new_run_id() -> str:
    """32 hex digits: milliseconds since the epoch, then 80 random bits, so ids sort by creation time."""
    return f"{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


def metric_tiles(metrics: Mapping[str, float], columns: Collection[Mapping[str, Any]]) -> list[MetricTile]:
    """The run's metrics as tiles in leaderboard column order (a column's ``index``, else its position).

    DynamoDB maps keep no order, so the order comes from the environment's columns. Hidden columns
    give no tile; a metric with no column at all (there should be none: those are ``other_metrics``)
    follows, titled by its key.
    """

    def place(position: int, column: Mapping[str, Any]) -> tuple[int, int]:
        index = column.get("index")
        return (index if isinstance(index, int) else position, position)

    ordered = [column for _, column in sorted(enumerate(columns), key=lambda pair: place(*pair))]
    tiles: list[MetricTile] = []
    placed: set[str] = set()
    for column in ordered:
        key = column.get("key")
        if not isinstance(key, str) or key in placed:
            continue
        placed.add(key)
        if key in metrics and not column.get("hidden"):
            precision = column.get("precision")
            tiles.append(
                MetricTile(
                    title=str(column.get("title") or key),
                    key=key,
                    value=metrics[key],
                    precision=precision if isinstance(precision, int) else None,
                )
            )
    tiles.extend(
        MetricTile(title=key, key=key, value=metrics[key]) for key in sorted(metrics) if key not in placed
    )
    return tiles


def labelled_files(run: RunRecord) -> dict[str, str]:
    """The run's files (label -> key) in reading order; the submission counts once ingestion began."""
    files = dict(run.files)
    if RunOutput.SUBMISSION not in files and run.submission_key and run.status != RunStatus.PENDING:
        files[RunOutput.SUBMISSION] = run.submission_key
    return {output.label: files[output] for output in RunOutput if output in files}


def run_or_404(services: ApiServices, run_id: str) -> RunRecord:
    """The run, or the 404 every route about one run answers when there is none."""
    run = services.runs.get(run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r}: check the id (GET /runs lists runs)")
    return run


def _phase_name(phases: list[dict[str, Any]], wanted: str | None) -> str | None:
    """The name of the phase ``wanted`` names among the environment's; the first phase's when None.

    A version registered before its phases were recorded keeps ``wanted`` for the run to check."""
    if not phases:
        return wanted
    try:
        position = phase_position([(phase["index"], phase["name"]) for phase in phases], wanted)
    except PhaseError as error:
        raise Unprocessable(str(error)) from None
    return str(phases[position]["name"])


def new_run(request: CreateRunRequest, *, owner: str, services: ApiServices) -> RunRecord:
    """Record a Pending run of a registered environment version."""
    environment = services.environments.get(request.environment_id, request.version)
    if environment is None:
        raise NotFound(
            f"environment {request.environment_id!r} version {request.version!r} is not registered: "
            "upload its bundle first (POST /environments)"
        )
    if environment.status != EnvironmentStatus.REGISTERED:
        problems = "; ".join(environment.problems[:3]) or "no reason recorded"
        raise Conflict(
            f"environment {request.environment_id!r} version {request.version!r} was rejected ({problems}): "
            "fix the bundle and upload it as a new version"
        )
    filename = request.filename or DEFAULT_SUBMISSION_FILENAME
    phase = _phase_name(environment.phases, request.phase)
    run_id = new_run_id()
    live = None
    if request.live is not None:
        connection = services.connections.get(request.live.connection_id)
        live = live_model_for(request.live, owner=owner, connection=connection)
    record = RunRecord(
        run_id=run_id,
        environment_id=environment.environment_id,
        environment_version=environment.version,
        model=request.model,
        owner=owner,
        submission_key=None if live else submission_key(run_id, filename),
        submission_filename=None if live else filename,
        run_config=_run_config(request),
        phase=phase,
        live_model=live,
    )
    if not services.runs.create(record):
        raise Conflict(f"run id {run_id} is already taken: send the request again")
    services.record_event("RunCreated")
    if live is not None:
        _start_live(record, services=services)
    return record


def _run_config(request: CreateRunRequest) -> RunConfig:
    if request.live is not None:
        sampling = request.live.sampling.model_dump(exclude_none=True)
        # The owner-only configuration shows stop sequences as one text, like every other sampling value.
        if "stop" in sampling:
            sampling["stop"] = " | ".join(sampling["stop"])
        return RunConfig(sampling=sampling, environment_variables=request.live.environment_variables)
    return request.run_config.record() if request.run_config else RunConfig()


def _start_live(run: RunRecord, *, services: ApiServices) -> None:
    """Start the run's InferencePipeline; a run that cannot start is failed, not left Pending."""
    try:
        starter = services.inference_starter
        if starter is None:
            raise RuntimeError("INFERENCE_STATE_MACHINE_ARN is not set: the API function starts live runs")
        starter.start_once(live_execution_name(run.run_id), {"run_id": run.run_id})
    except Exception:
        services.runs.fail(
            run.run_id,
            "the live run could not be started: create it again in a moment",
            expected=RunStatus.PENDING,
        )
        raise


def create_run(
    request: CreateRunRequest,
    *,
    owner: str,
    services: ApiServices,
    idempotency_key: str | None = None,
    context: LambdaContext | None = None,
) -> CreatedRun:
    """A new run and where to upload its submission; with an Idempotency-Key, a retry gets the run the
    first request made (only its id is kept with the key, never the run configuration)."""
    run = create_once(
        lambda: new_run(request, owner=owner, services=services),
        id_of=lambda created: created.run_id,
        read=lambda run_id: run_or_404(services, run_id),
        noun="run",
        caller=owner,
        key=idempotency_key,
        body=request.model_dump(mode="json"),
        persistence=services.idempotency,
        context=context,
    )
    return created_run(run, services=services)


def list_runs(
    *,
    services: ApiServices,
    environment_id: str | None,
    status: RunStatus | None,
    limit: int,
    next_token: str | None,
) -> RunList:
    page = services.runs.list(
        environment_id=environment_id, status=status, limit=limit, next_token=next_token
    )
    return RunList(items=[RunSummary.of(run) for run in page.items], next_token=page.next_token)


def created_run(run: RunRecord, *, services: ApiServices) -> CreatedRun:
    """The run and a fresh URL to upload its submission to (a retry gets a URL that has not expired)."""
    if run.live_model is not None:
        return CreatedRun(
            run=RunSummary.of(run), upload_key=None, upload_url=None, upload_method=None, expires_in=None
        )
    key = run.submission_key or submission_key(run.run_id, DEFAULT_SUBMISSION_FILENAME)
    url = services.store.presigned_put_url(key, expires_in=services.ttl)
    return CreatedRun(run=RunSummary.of(run), upload_key=key, upload_url=url, expires_in=services.ttl)


def run_detail(run_id: str, *, services: ApiServices) -> RunDetail:
    """The run as its page shows it; the configuration stays out (owner only, GET /runs/{id}/config)."""
    run = run_or_404(services, run_id)
    environment = services.environments.get(run.environment_id, run.environment_version)
    columns = environment.columns if environment is not None else []
    dataset = None
    if run.dataset_id:
        dataset = DatasetLink(
            dataset_id=run.dataset_id, name=run.dataset_name, href=f"/datasets/{run.dataset_id}"
        )
    return RunDetail(
        **RunSummary.of(run).model_dump(),
        submission_filename=run.submission_filename,
        metrics=metric_tiles(run.metrics, columns),
        other_metrics=run.other_metrics,
        breakdowns=run.breakdowns,
        counts=run.counts,
        warnings=run.warnings,
        programs=run.programs,
        files=list(labelled_files(run)),
        artifact_reason=run.artifact_reason,
        dataset=dataset,
        judge=JudgeAgreement.of(environment.judge_calibration)
        if environment is not None and environment.judge_calibration is not None
        else None,
        live_model=LiveModelView.model_validate(run.live_model.model_dump()) if run.live_model else None,
        inference=run.inference,
        judging=run.judging,
        progress=InferenceProgressView.model_validate(run.progress.model_dump()) if run.progress else None,
        batch=run.batch,
        judging_batch=run.judging_batch,
    )


def run_files(run_id: str, *, services: ApiServices) -> RunFiles:
    """Each file the run produced that is in the bucket, with a short-lived download URL."""
    run = run_or_404(services, run_id)
    files: list[RunFile] = []
    for label, key in labelled_files(run).items():
        size = services.store.size(key)
        if size is None:
            continue
        url = services.store.presigned_get_url(
            key, expires_in=services.ttl, download_name=posixpath.basename(key)
        )
        view_url = None
        if key.endswith(VIEWABLE_SUFFIXES):
            view_url = services.store.presigned_get_url(key, expires_in=services.ttl)
        files.append(RunFile(label=label, key=key, size=size, url=url, view_url=view_url))
    return RunFiles(run_id=run.run_id, files=files, expires_in=services.ttl)


def detailed_results(run_id: str, *, services: ApiServices) -> DetailedResults:
    """Summary, metric tiles and breakdowns of detailed_results.json, and a URL to the whole file."""
    run = run_or_404(services, run_id)
    key = run.files.get(RunOutput.DETAILED_JSON) or run_key(run.run_id, RunOutput.DETAILED_JSON.file_name)
    chunks = services.store.chunks(key)
    if chunks is None:
        raise NotFound(f"run {run_id!r} has no detailed results yet (status {run.status.value})")
    with closing(chunks):
        head = pick_top_level_fields(chunks, _DETAILED_HEAD_FIELDS)
    url = services.store.presigned_get_url(
        key, expires_in=services.ttl, download_name=posixpath.basename(key)
    )
    return DetailedResults(run_id=run.run_id, url=url, expires_in=services.ttl, **head)


def run_config(run_id: str, *, owner: str, services: ApiServices) -> RunConfiguration:
    """The run's configuration, for its owner only."""
    run = run_or_404(services, run_id)
    if run.owner != owner:
        raise Forbidden("only the run's owner can read its configuration")
    return RunConfiguration.of(run)
