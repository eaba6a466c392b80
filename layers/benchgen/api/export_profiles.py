"""``/export-profiles``: the export profiles a package can be built in, so that clients list them from the
API instead of keeping their own copy."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from benchgen.api.errors import responses
from benchgen.requests.export_profiles import export_profiles
from benchgen.requests.schemas.export_profiles import ExportProfileList

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


@router.get(
    "/export-profiles",
    tags=["packages"],
    summary="List the export profiles a package can be requested in",
    description="The id to send as POST /preparations/{preparation_id}/packages' profile, the methods a "
    "profile takes, the shape of its rows and how its files are used.",
    responses=responses(200),
)
def get_export_profiles() -> ExportProfileList:
    return export_profiles()
