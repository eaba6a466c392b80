"""What ``/export-profiles`` does: the export profiles a package can be built in, so that clients list
them from the API instead of keeping their own copy."""

from __future__ import annotations

from benchgen.requests.schemas.export_profiles import ExportProfileList, ExportProfileView
from benchgen.training.export_profiles import PROFILES, Profile
from benchgen.vocabulary import Method


def profile_view(profile: Profile) -> ExportProfileView:
    return ExportProfileView(
        profile_id=profile.id,
        title=profile.title,
        # In the order the enum lists them, so that the answer is the same on every call.
        methods=[method for method in Method if profile.accepts(method)],
        row_shape=profile.shape,
        usage=profile.use,
    )


def export_profiles() -> ExportProfileList:
    return ExportProfileList(items=[profile_view(profile) for profile in PROFILES.values()])
