"""``/export-profiles``: the export profiles a package can be built in, so that clients list them from the
API instead of keeping their own copy."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router
from pydantic import BaseModel

from benchgen.api.errors import responses
from benchgen.training.export_profiles import PROFILES, Profile
from benchgen.vocabulary import Method

router = Router()  # type: ignore[no-untyped-call]  # powertools leaves Router.__init__ unannotated


class ExportProfileView(BaseModel):
    """One export profile: what to ask a package for, which methods it takes and what its rows look like."""

    profile_id: str
    title: str
    methods: list[Method]
    row_shape: str
    usage: str


class ExportProfileList(BaseModel):
    items: list[ExportProfileView]


def profile_view(profile: Profile) -> ExportProfileView:
    return ExportProfileView(
        profile_id=profile.id,
        title=profile.title,
        # In the order the enum lists them, so that the answer is the same on every call.
        methods=[method for method in Method if profile.accepts(method)],
        row_shape=profile.shape,
        usage=profile.use,
    )


@router.get(
    "/export-profiles",
    tags=["packages"],
    summary="List the export profiles a package can be requested in",
    description="The id to send as POST /preparations/{preparation_id}/packages' profile, the methods a "
    "profile takes, the shape of its rows and how its files are used.",
    responses=responses(200),
)
def get_export_profiles() -> ExportProfileList:
    return ExportProfileList(items=[profile_view(profile) for profile in PROFILES.values()])
