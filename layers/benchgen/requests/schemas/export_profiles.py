"""The bodies of ``/export-profiles``."""

from __future__ import annotations

from pydantic import BaseModel

from benchgen.vocabulary import Method


class ExportProfileView(BaseModel):
    """One export profile: what to ask a package for, which methods it takes and what its rows look like."""

    profile_id: str
    title: str
    methods: list[Method]
    row_shape: str
    usage: str


class ExportProfileList(BaseModel):
    items: list[ExportProfileView]
