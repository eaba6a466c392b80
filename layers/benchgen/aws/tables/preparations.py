"""The preparations table."""

from __future__ import annotations

from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records import PreparationRecord, PreparationStatus, clip_text


class PreparationsRepo(Table):
    """Preparations (pk ``preparation_id``; GSI ``by_owner`` sorted by ``created_at``).

    Created ``Generating`` by the API; the preparation state machine moves it to ``Ready`` or ``Failed``
    with its own conditional updates, and :meth:`fail` is the API's way out when the machine never started.
    """

    def create(self, record: PreparationRecord) -> bool:
        """Store a new preparation; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "preparation_id")

    def get(self, preparation_id: str) -> PreparationRecord | None:
        return self._get(PreparationRecord, {"preparation_id": preparation_id})

    def fail(self, preparation_id: str, *, reason: str, finished_at: str) -> bool:
        """``Generating`` -> ``Failed`` with ``reason``; ``False`` unless it was still Generating."""
        plain = clip_text(reason)
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"preparation_id": {"S": preparation_id}},
                UpdateExpression="SET #status = :failed, failure_reason = :reason, finished_at = :finished",
                ConditionExpression="#status = :generating",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":failed": {"S": PreparationStatus.FAILED.value},
                    ":generating": {"S": PreparationStatus.GENERATING.value},
                    ":reason": {"S": plain},
                    ":finished": {"S": finished_at},
                },
            )
            is not None
        )

    def list(self, *, owner: str, limit: int = 20, next_token: str | None = None) -> Page[PreparationRecord]:
        """The owner's preparations, newest first."""
        return self._newest_page(
            PreparationRecord,
            index="by_owner",
            partition_attribute="owner",
            partitions=[owner],
            key_attribute="preparation_id",
            limit=limit,
            next_token=next_token,
        )
