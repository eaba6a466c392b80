"""``/preparations/{id}/packages`` and ``/packages/{id}``: request an exact package, list them, download one.

A package is one export profile over one preparation state, so its id derives from the state hash and the
profile: the same request finds the package the first one made (200) instead of building another.
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Query

from benchgen.api import Owner, Services
from benchgen.api.errors import responses
from benchgen.api.parameters import NextToken, ResourceId
from benchgen.requests.packages import list_packages, package_view, request_package
from benchgen.requests.schemas.packages import CreatePackageRequest, PackageList, PackageView

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.post(
    "/preparations/<preparation_id>/packages",
    status_code=202,
    tags=["packages"],
    summary="Request an exact package of the preparation in an export profile",
    description="202 with the package Building: new, or built again after a failed build; 200 with the "
    "package when this state and profile were requested before. Read it with GET /packages/{package_id}.",
    responses={
        **responses(202, 400, 403, 404, 409, body=True),
        200: {
            "description": "The package of this state and profile, requested before",
            "content": {"application/json": {"model": PackageView}},
        },
    },
)
def post_package(
    preparation_id: ResourceId, body: CreatePackageRequest, owner: Owner, services: Services
) -> Response[PackageView]:
    package, created = request_package(preparation_id, body.profile, owner=owner, services=services)
    return Response(
        status_code=202 if created else 200,
        content_type=content_types.APPLICATION_JSON,
        body=PackageView(**package.model_dump()),
    )


@router.get(
    "/preparations/<preparation_id>/packages",
    tags=["packages"],
    summary="List the preparation's packages, newest first",
    responses=responses(200, 400, 403, 404),
)
def get_packages(
    preparation_id: ResourceId,
    owner: Owner,
    services: Services,
    limit: Annotated[int, Query(ge=1, le=100, description="packages per page")] = 20,
    next_token: NextToken = None,
) -> PackageList:
    return list_packages(preparation_id, owner=owner, services=services, limit=limit, next_token=next_token)


@router.get(
    "/packages/<package_id>",
    tags=["packages"],
    summary="Read a package; when it is Ready, with a short-lived URL to download it",
    responses=responses(200, 403, 404),
)
def get_package(package_id: ResourceId, owner: Owner, services: Services) -> PackageView:
    return package_view(package_id, owner=owner, services=services)
