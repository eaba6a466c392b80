"""The bodies of ``/export-profiles``."""

from __future__ import annotations

from benchgen.lazy_model import LazyModel
from benchgen.vocabulary import Method


class ExportProfileView(LazyModel):
    """One export profile: what to ask a package for, which methods it takes and what its rows look like."""

    profile_id: str
    title: str
    methods: list[Method]
    row_shape: str
    usage: str


class ExportProfileList(LazyModel):
    items: list[ExportProfileView]
