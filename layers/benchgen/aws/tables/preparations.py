"""The preparations table."""

from __future__ import annotations

from benchgen.aws.items import field_attribute
from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records.bounds import clip_text
from benchgen.records.preparations import PreparationRecord, PreparationStatus
from benchgen.training.preparation import GenerationReport

#: What a preparation records from its generation report when it is Ready (the rest the API recorded).
READY_FIELDS = (
    "state_hash",
    "example_count",
    "source_cases",
    "held_out_count",
    "splits",
    "kinds",
    "dropped",
    "suggested_hyperparams",
)


class PreparationsRepo(Table):
    """Preparations (pk ``preparation_id``; GSI ``by_owner`` sorted by ``created_at``).

    Created ``Generating`` by the API; the preparation state machine's Check moves it to ``Ready``
    (:meth:`ready`), and :meth:`fail` records the machine's caught failure, or the API's when the machine
    never started. Both are conditional on ``Generating``.
    """

    def create(self, record: PreparationRecord) -> bool:
        """Store a new preparation; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "preparation_id")

    def get(self, preparation_id: str) -> PreparationRecord | None:
        return self._get(PreparationRecord, {"preparation_id": preparation_id})

    def ready(
        self, preparation_id: str, *, report: GenerationReport, gap_count: int, finished_at: str
    ) -> bool:
        """``Generating`` -> ``Ready`` with what generation found and the coverage's gap count; ``False``
        unless it was still Generating."""
        found = {name: getattr(report, name) for name in READY_FIELDS} | {"gap_count": gap_count}
        names = {"#status": "status"} | {f"#{name}": name for name in found}
        values = {f":{name}": field_attribute(PreparationRecord, name, found[name]) for name in found}
        assignments = ", ".join(f"#{name} = :{name}" for name in found)
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"preparation_id": {"S": preparation_id}},
                UpdateExpression=f"SET #status = :ready, {assignments}, finished_at = :finished",
                ConditionExpression="#status = :generating",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values
                | {
                    ":ready": {"S": PreparationStatus.READY.value},
                    ":generating": {"S": PreparationStatus.GENERATING.value},
                    ":finished": {"S": finished_at},
                },
            )
            is not None
        )

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
