"""The environments table: environment versions and each environment's owner."""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any

from benchgen.aws.items import from_item, to_attribute, to_item
from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page, decode_token, encode_token
from benchgen.records.environments import EnvironmentOwner, EnvironmentRecord, EnvironmentStatus
from benchgen.records.judge_calibration import CalibrationStatus, JudgeCalibration

#: The sort key of an environment's owner item, kept beside its versions (a version never starts with '#').
OWNER_ITEM_VERSION = "#owner"


def _is_version_item(item: Mapping[str, Any]) -> bool:
    return bool(item.get("version", {}).get("S") != OWNER_ITEM_VERSION)


class EnvironmentsRepo(Table):
    """Environment versions (pk ``environment_id``, sk ``version``) and each environment's owner."""

    def claim_owner(self, owner: EnvironmentOwner) -> EnvironmentOwner:
        """Make ``owner`` the environment's owner unless it has one; returns the owner that stands.

        A conditional write: of two first publishers racing for one environment id, exactly one wins.
        """
        written = self._conditional(
            "put_item",
            TableName=self.table_name,
            Item={**to_item(owner), "version": {"S": OWNER_ITEM_VERSION}},
            ConditionExpression="attribute_not_exists(environment_id)",
        )
        if written is not None:
            return owner
        stored = self.owner_of(owner.environment_id)
        if stored is None:
            raise RuntimeError(f"the owner of {owner.environment_id!r} exists and is missing")
        return stored

    def owner_of(self, environment_id: str) -> EnvironmentOwner | None:
        return self._get(EnvironmentOwner, {"environment_id": environment_id, "version": OWNER_ITEM_VERSION})

    def set_publisher_group(self, environment_id: str, group: str, *, owner: str) -> bool:
        """Name the group whose members publish too; ``False`` (nothing changed) unless ``owner`` owns it."""
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"environment_id": {"S": environment_id}, "version": {"S": OWNER_ITEM_VERSION}},
                UpdateExpression="SET publisher_group = :g",
                ConditionExpression="#o = :o",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":g": {"S": group}, ":o": {"S": owner}},
            )
            is not None
        )

    def put_if_absent(self, record: EnvironmentRecord) -> bool:
        """Store a version; ``False`` (and nothing changed) when that version is already recorded."""
        return self._put_if_absent(record, "environment_id")

    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None:
        return self._get(EnvironmentRecord, {"environment_id": environment_id, "version": version})

    def record_calibration(self, environment_id: str, version: str, calibration: JudgeCalibration) -> bool:
        """Replace the version's running calibration with ``calibration``; ``False`` (nothing changed)
        when its calibration is not running."""
        return self._conditional_update(
            {"environment_id": environment_id, "version": version},
            "SET #c = :c",
            "#c.#s = :running",
            {"#c": "judge_calibration", "#s": "status"},
            {
                ":c": to_attribute(calibration.model_dump(mode="json", exclude_none=True)),
                ":running": {"S": CalibrationStatus.RUNNING.value},
            },
        )

    def versions(self, environment_id: str) -> builtins.list[EnvironmentRecord]:
        """Every recorded version of one environment, oldest registration first."""
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": "environment_id = :e",
            "ExpressionAttributeValues": {":e": {"S": environment_id}},
            "ConsistentRead": True,
        }
        found: builtins.list[EnvironmentRecord] = []
        while True:
            response = self._client.query(**request)
            found.extend(
                from_item(EnvironmentRecord, item)
                for item in response.get("Items", [])
                if _is_version_item(item)
            )
            if "LastEvaluatedKey" not in response:
                break
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        return sorted(found, key=lambda record: record.created_at)

    def latest(
        self, environment_id: str, *, status: EnvironmentStatus | None = None
    ) -> EnvironmentRecord | None:
        """The most recently recorded version (optionally only among those with ``status``).

        "Latest" is by registration time, not by the version string: "10" sorts before "9" as text.
        """
        candidates = [
            record for record in self.versions(environment_id) if status is None or record.status == status
        ]
        return candidates[-1] if candidates else None

    def list(self, *, limit: int = 20, next_token: str | None = None) -> Page[EnvironmentRecord]:
        """All environment versions, a page at a time, ordered by (environment_id, version) within a page.

        A scan: the table has no index that orders all environments, and there are few of them (one
        item per uploaded bundle version), unlike runs. Owner items are skipped, so a page may hold fewer
        than ``limit`` versions.
        """
        request: dict[str, Any] = {"TableName": self.table_name, "Limit": limit}
        if next_token is not None:
            position = decode_token(next_token, ("environment_id", "version"))
            request["ExclusiveStartKey"] = {name: {"S": value} for name, value in position.items()}
        response = self._client.scan(**request)
        records = sorted(
            (
                from_item(EnvironmentRecord, item)
                for item in response.get("Items", [])
                if _is_version_item(item)
            ),
            key=lambda record: (record.environment_id, record.version),
        )
        last_key = response.get("LastEvaluatedKey")
        token = None
        if last_key is not None:
            token = encode_token({name: value["S"] for name, value in last_key.items()})
        return Page(items=records, next_token=token)
