"""What ``/preparations`` does: prepare training material from your judged runs; read it, its examples,
its coverage.

A preparation is its owner's: only they read it. Creating one checks what can be checked from the records
(the runs, their environment version, the scope), records it ``Generating`` and starts the preparation
state machine, named after the preparation id; the state machine records it ``Ready`` or ``Failed``.
"""

from __future__ import annotations

import secrets
import time
from contextlib import closing

from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from benchgen.bucket_layout import COVERAGE, preparation_key
from benchgen.finetune.split import Split
from benchgen.outputs import RunOutput
from benchgen.ports.pages import InvalidNextToken
from benchgen.ports.storage import MissingObject, OutOfRange
from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.records.runs import RunRecord, RunStatus
from benchgen.records.timestamps import utc_now
from benchgen.requests.errors import ApiError, Conflict, Forbidden, NotFound
from benchgen.requests.idempotency import create_once
from benchgen.requests.line_offsets import LineOffsets, offset_of, token_for
from benchgen.requests.schemas.preparations import (
    ExamplePage,
    PreparationDetail,
    PreparationList,
    PreparationSummary,
)
from benchgen.requests.services import ApiServices
from benchgen.steps.prepare import BundleRef, GenerateInput, RunRef
from benchgen.training.coverage import Coverage
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME, Kind
from benchgen.training.preparation import PreparationSpec, SourceProblem, SourcesRefused, check_sources
from benchgen.training.views import page_examples


class InvalidPreparation(ApiError):
    """The request contradicts itself or the environment (400): the message says which part to change."""


def new_preparation_id() -> str:
    """``prep-`` and 32 hex digits: milliseconds since the epoch, then 80 random bits (sorts by creation)."""
    return f"prep-{time.time_ns() // 1_000_000:012x}{secrets.token_hex(10)}"


def _names(run_ids: list[str]) -> str:
    return ", ".join(run_ids)


def _environment(spec: PreparationSpec, services: ApiServices) -> EnvironmentRecord:
    environment = services.environments.get(spec.environment_id, spec.environment_version)
    if environment is None:
        raise NotFound(
            f"environment {spec.environment_id!r} version {spec.environment_version!r} is not registered: "
            "check environment_id and environment_version (GET /environments lists them)"
        )
    if environment.status is not EnvironmentStatus.REGISTERED:
        raise Conflict(
            f"environment {spec.environment_id!r} version {spec.environment_version!r} was rejected: "
            "prepare from a registered version"
        )
    return environment


# Each check the preparation shares with Generate answered with the status that fits it.
_REFUSED_AS: dict[SourceProblem, type[ApiError]] = {
    SourceProblem.REPEATED_RUN: InvalidPreparation,
    SourceProblem.UNKNOWN_RUN: NotFound,
    SourceProblem.OTHER_VERSION: InvalidPreparation,
    SourceProblem.UNKNOWN_CRITERION: InvalidPreparation,
}


def _runs(
    spec: PreparationSpec, environment: EnvironmentRecord, *, owner: str, services: ApiServices
) -> list[RunRecord]:
    """The spec's runs, once each can be drawn from: the caller's (checked first, so that nothing about
    someone else's run is told), then what Generate checks again (``check_sources``), then Completed with
    verdicts."""
    found = {run_id: services.runs.get(run_id) for run_id in dict.fromkeys(spec.run_ids)}
    others = [run.run_id for run in found.values() if run is not None and run.owner != owner]
    if others:
        raise Forbidden(f"runs {_names(others)} are not yours: a preparation draws only from your own runs")
    try:
        runs = check_sources(spec, found, criteria=environment.criteria)
    except SourcesRefused as refused:
        raise _REFUSED_AS[refused.problem](str(refused)) from None
    unfinished = [
        f"{run.run_id} ({run.status.value})" for run in runs if run.status is not RunStatus.COMPLETED
    ]
    if unfinished:
        raise Conflict(
            f"runs {', '.join(unfinished)} are not Completed: wait until they are, or leave them out"
        )
    unscored = [run.run_id for run in runs if RunOutput.SCORING_OUTPUT not in run.files]
    if unscored:
        raise Conflict(
            f"runs {_names(unscored)} have no scoring output (per-case verdicts) to draw from: leave them out"
        )
    return runs


def new_preparation(spec: PreparationSpec, *, owner: str, services: ApiServices) -> PreparationRecord:
    """Check the request, record the preparation ``Generating`` and start its state machine."""
    environment = _environment(spec, services)
    runs = _runs(spec, environment, owner=owner, services=services)
    preparation_id = new_preparation_id()
    record = PreparationRecord(
        preparation_id=preparation_id,
        owner=owner,
        environment_id=spec.environment_id,
        environment_version=spec.environment_version,
        method=spec.method,
        criteria=spec.criteria,
        selection=spec.selection,
        run_ids=spec.run_ids,
        settings=spec.settings.model_dump(mode="json"),
        benchmark=environment.title,
        base_model=runs[0].model,
        examples_key=preparation_key(preparation_id, EXAMPLES_NAME),
        held_out_key=preparation_key(preparation_id, HELD_OUT_NAME),
        coverage_key=preparation_key(preparation_id, COVERAGE),
    )
    if not services.preparations.create(record):
        raise Conflict(f"preparation id {preparation_id} is already taken: send the request again")
    task = GenerateInput(
        preparation_id=preparation_id,
        spec=spec,
        runs=[
            RunRef(
                run_id=run.run_id,
                model=run.model,
                environment_id=run.environment_id,
                environment_version=run.environment_version,
            )
            for run in runs
        ],
        bundle=BundleRef(key=environment.bundle_key, version_id=environment.bundle_version_id),
    )
    starter = services.preparation_starter
    if starter is None:
        raise RuntimeError(
            "PREPARATION_STATE_MACHINE_ARN is not set: only the api function starts preparations"
        )
    try:
        starter.start_once(preparation_id, task.model_dump(mode="json"))
    except Exception:
        # Not left Generating forever: the preparation says it never started, and the error is a 500.
        services.preparations.fail(
            preparation_id,
            reason="the preparation could not be started: create it again",
            finished_at=utc_now(),
        )
        raise
    services.record_event("PreparationCreated")
    return record


def create_preparation(
    spec: PreparationSpec,
    *,
    owner: str,
    services: ApiServices,
    idempotency_key: str | None = None,
    context: LambdaContext | None = None,
) -> PreparationDetail:
    """A new preparation; with an Idempotency-Key, a retry gets the preparation the first request made."""
    record = create_once(
        lambda: new_preparation(spec, owner=owner, services=services),
        id_of=lambda created: created.preparation_id,
        read=lambda preparation_id: preparation_of_owner(preparation_id, owner=owner, services=services),
        noun="preparation",
        caller=owner,
        key=idempotency_key,
        body=spec.model_dump(mode="json"),
        persistence=services.idempotency,
        context=context,
    )
    return PreparationDetail.of(record)


def list_preparations(
    *, owner: str, services: ApiServices, limit: int, next_token: str | None
) -> PreparationList:
    page = services.preparations.list(owner=owner, limit=limit, next_token=next_token)
    return PreparationList(
        items=[PreparationSummary.of(record) for record in page.items], next_token=page.next_token
    )


def preparation_detail(preparation_id: str, *, owner: str, services: ApiServices) -> PreparationDetail:
    return PreparationDetail.of(preparation_of_owner(preparation_id, owner=owner, services=services))


def preparation_of_owner(preparation_id: str, *, owner: str, services: ApiServices) -> PreparationRecord:
    """The preparation, for its owner: 404 when there is none, 403 when it is someone else's."""
    record = services.preparations.get(preparation_id)
    if record is None:
        raise NotFound(f"no preparation {preparation_id!r}: check the id (GET /preparations lists yours)")
    if record.owner != owner:
        raise Forbidden("only the preparation's owner can read it")
    return record


def ready_preparation(preparation_id: str, *, owner: str, services: ApiServices) -> PreparationRecord:
    """The owner's preparation once it is Ready; a 409 that says why while it is not."""
    record = preparation_of_owner(preparation_id, owner=owner, services=services)
    if record.status is PreparationStatus.GENERATING:
        raise Conflict(f"preparation {preparation_id} is still Generating: read it again in a moment")
    if record.status is PreparationStatus.FAILED:
        raise Conflict(f"preparation {preparation_id} failed ({record.failure_reason}): it has no examples")
    return record


def examples_page(
    preparation_id: str,
    *,
    owner: str,
    services: ApiServices,
    split: Split | None,
    criterion: str | None,
    kind: Kind | None,
    limit: int,
    next_token: str | None,
) -> ExamplePage:
    """One page of the examples that pass the filters, read from examples.jsonl as a stream."""
    record = ready_preparation(preparation_id, owner=owner, services=services)
    offset = offset_of(next_token)
    try:
        with closing(services.store.lines(record.examples_key, start=offset)) as lines:
            read = LineOffsets(lines, offset)
            items, following = page_examples(
                read,
                split=split.value if split else None,
                criterion=criterion,
                kind=kind.value if kind else None,
                start=0,
                limit=limit,
            )
    except MissingObject:
        raise Conflict(
            f"preparation {preparation_id} has lost its examples file: create the preparation again"
        ) from None
    except (ValidationError, OutOfRange):
        # An offset this listing did not hand out: past the end, or inside a line.
        if offset:
            raise InvalidNextToken() from None
        raise
    # page_examples stops on the first line of the next page: the last line it read.
    token = token_for(read.start_of(following)) if following is not None else None
    return ExamplePage(items=items, next_token=token)


def preparation_coverage(preparation_id: str, *, owner: str, services: ApiServices) -> Coverage:
    record = ready_preparation(preparation_id, owner=owner, services=services)
    chunks = services.store.chunks(record.coverage_key)
    if chunks is None:
        raise Conflict(
            f"preparation {preparation_id} has lost its coverage report: create the preparation again"
        )
    with closing(chunks):
        return Coverage.model_validate_json(b"".join(chunks))
