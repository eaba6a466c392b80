"""``/preparations``: prepare training material from your judged runs; read it, its examples, its coverage.

A preparation is its owner's: only they read it. Creating one checks what can be checked from the records
(the runs, their environment version, the scope), records it ``Generating`` and starts the preparation
state machine, named after the preparation id; the state machine records it ``Ready`` or ``Failed``.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken, PreparationIdempotencyKey, ResourceId
from benchgen.finetune.split import Split
from benchgen.requests.preparations import (
    create_preparation,
    examples_page,
    list_preparations,
    preparation_coverage,
    preparation_detail,
)
from benchgen.requests.schemas.common import ID_PATTERN
from benchgen.requests.schemas.preparations import ExamplePage, PreparationDetail, PreparationList
from benchgen.training.coverage import Coverage
from benchgen.training.examples import Kind
from benchgen.training.preparation import PreparationSpec

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/preparations",
    status_code=201,
    tags=["preparations"],
    summary="Prepare training material from your completed runs of one environment version",
    responses=responses(201, 400, 403, 404, 409, body=True),
)
def post_preparation(
    body: PreparationSpec,
    owner: Owner,
    services: Services,
    idempotency_key: PreparationIdempotencyKey = None,
) -> PreparationDetail:
    return create_preparation(
        body, owner=owner, services=services, idempotency_key=idempotency_key, context=router.lambda_context
    )


@router.get(
    "/preparations",
    tags=["preparations"],
    summary="List your preparations, newest first",
    responses=responses(200, 400),
)
def get_preparations(
    owner: Owner,
    services: Services,
    limit: Annotated[int, Query(ge=1, le=100, description="preparations per page")] = 20,
    next_token: NextToken = None,
) -> PreparationList:
    return list_preparations(owner=owner, services=services, limit=limit, next_token=next_token)


@router.get(
    "/preparations/<preparation_id>",
    tags=["preparations"],
    summary="Read one of your preparations",
    responses=responses(200, 403, 404),
)
def get_preparation(preparation_id: ResourceId, owner: Owner, services: Services) -> PreparationDetail:
    return preparation_detail(preparation_id, owner=owner, services=services)


@router.get(
    "/preparations/<preparation_id>/examples",
    tags=["preparations"],
    summary="A page of the preparation's examples, filtered by split, criterion and kind",
    responses=responses(200, 400, 403, 404, 409),
)
def get_preparation_examples(
    preparation_id: ResourceId,
    owner: Owner,
    services: Services,
    split: Annotated[Split | None, Query(description="only examples of this split")] = None,
    criterion: Annotated[
        str | None, Query(pattern=ID_PATTERN, description="only examples governed by this criterion")
    ] = None,
    kind: Annotated[Kind | None, Query(description="only examples of this kind")] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="examples per page")] = 20,
    next_token: NextToken = None,
) -> ExamplePage:
    return examples_page(
        preparation_id,
        owner=owner,
        services=services,
        split=split,
        criterion=criterion,
        kind=kind,
        limit=limit,
        next_token=next_token,
    )


@router.get(
    "/preparations/<preparation_id>/coverage",
    tags=["preparations"],
    summary="How each criterion and breakdown is represented across the splits, and the gaps to fix",
    responses=responses(200, 403, 404, 409),
)
def get_preparation_coverage(preparation_id: ResourceId, owner: Owner, services: Services) -> Coverage:
    return preparation_coverage(preparation_id, owner=owner, services=services)
