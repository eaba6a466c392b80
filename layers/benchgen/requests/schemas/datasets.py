"""The bodies of ``/datasets``."""

from __future__ import annotations

from benchgen.records.datasets import DatasetRecord
from benchgen.requests.schemas.common import Listing


class DatasetList(Listing):
    items: list[DatasetRecord]
