"""``/datasets`` and the manual save of a run's finetune artifact as a dataset."""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken, ResourceId, RunId
from benchgen.records.datasets import DatasetRecord
from benchgen.requests.datasets import dataset_or_404, list_datasets, save_dataset_for_run
from benchgen.requests.schemas.common import KIND_PATTERN
from benchgen.requests.schemas.datasets import DatasetList

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.get(
    "/datasets",
    tags=["datasets"],
    summary="List datasets, newest first",
    responses=responses(200, 400),
)
def get_datasets(
    services: Services,
    _owner: Owner,
    kind: Annotated[
        str | None, Query(pattern=KIND_PATTERN, description="only datasets of this kind, e.g. finetune")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=100, description="datasets per page")] = 20,
    next_token: NextToken = None,
) -> DatasetList:
    return list_datasets(services=services, kind=kind, limit=limit, next_token=next_token)


@router.get(
    "/datasets/<dataset_id>", tags=["datasets"], summary="Read a dataset", responses=responses(200, 404)
)
def get_dataset(dataset_id: ResourceId, services: Services, _owner: Owner) -> DatasetRecord:
    return dataset_or_404(dataset_id, services=services)


@router.post(
    "/runs/<run_id>/dataset",
    status_code=201,
    tags=["datasets"],
    summary="Save the run's finetune artifact as a dataset (once per run)",
    responses=responses(201, 403, 404, 409),
)
def post_run_dataset(run_id: RunId, owner: Owner, services: Services) -> DatasetRecord:
    return save_dataset_for_run(run_id, owner=owner, services=services)
