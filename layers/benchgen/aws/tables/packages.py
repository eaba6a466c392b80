"""The packages table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchgen.aws.items import field_attribute
from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records.bounds import clip_text
from benchgen.records.packages import PackageFile, PackageRecord, PackageStatus


class PackagesRepo(Table):
    """Packages (pk ``package_id``; GSI ``by_preparation`` sorted by ``created_at``)."""

    def put_if_absent(self, record: PackageRecord) -> bool:
        """Store a package; ``False`` (and nothing changed) when that package id is already recorded."""
        return self._put_if_absent(record, "package_id")

    def get(self, package_id: str) -> PackageRecord | None:
        return self._get(PackageRecord, {"package_id": package_id})

    def transition(
        self, package_id: str, *, expected: PackageStatus, status: PackageStatus, reason: str | None = None
    ) -> bool:
        """Move a package from ``expected`` to ``status`` (with the reason); ``False`` if it was not there.

        Conditional, so a package that has already left ``expected`` (a duplicate, a late failure after
        the build recorded it) keeps what it has.
        """
        names = {"#status": "status"}
        values: dict[str, Any] = {":expected": {"S": expected.value}, ":status": {"S": status.value}}
        expression = "SET #status = :status"
        if reason is not None:
            names["#reason"] = "reason"
            values[":reason"] = {"S": clip_text(reason)}
            expression += ", #reason = :reason"
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"package_id": {"S": package_id}},
                UpdateExpression=expression,
                ConditionExpression="#status = :expected",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
            is not None
        )

    def ready(self, package_id: str, *, sha256: str, size: int, files: Mapping[str, PackageFile]) -> bool:
        """Building -> Ready with the zip's digest, size and files; ``False`` if it was not Building."""
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"package_id": {"S": package_id}},
                UpdateExpression="SET #status = :ready, #sha256 = :sha256, #size = :size, #files = :files",
                ConditionExpression="#status = :building",
                ExpressionAttributeNames={
                    "#status": "status",
                    "#sha256": "sha256",
                    "#size": "size",
                    "#files": "files",
                },
                ExpressionAttributeValues={
                    ":ready": {"S": PackageStatus.READY.value},
                    ":building": {"S": PackageStatus.BUILDING.value},
                    ":sha256": field_attribute(PackageRecord, "sha256", sha256),
                    ":size": field_attribute(PackageRecord, "size", size),
                    ":files": field_attribute(PackageRecord, "files", files),
                },
            )
            is not None
        )

    def retry(self, package_id: str, *, attempt: int) -> bool:
        """Failed at ``attempt`` -> Building at the next attempt, its reason cleared; ``False`` if not so.

        Of two requests retrying the same failed build, exactly one moves it (and starts the next build).
        """
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"package_id": {"S": package_id}},
                UpdateExpression="SET #status = :building, #attempt = :next REMOVE #reason",
                ConditionExpression="#status = :failed AND #attempt = :attempt",
                ExpressionAttributeNames={"#status": "status", "#attempt": "attempt", "#reason": "reason"},
                ExpressionAttributeValues={
                    ":building": {"S": PackageStatus.BUILDING.value},
                    ":failed": {"S": PackageStatus.FAILED.value},
                    ":attempt": {"N": str(attempt)},
                    ":next": {"N": str(attempt + 1)},
                },
            )
            is not None
        )

    def list(
        self, preparation_id: str, *, limit: int = 20, next_token: str | None = None
    ) -> Page[PackageRecord]:
        """The packages of one preparation, newest first."""
        return self._newest_page(
            PackageRecord,
            index="by_preparation",
            partition_attribute="preparation_id",
            partitions=[preparation_id],
            key_attribute="package_id",
            limit=limit,
            next_token=next_token,
        )
