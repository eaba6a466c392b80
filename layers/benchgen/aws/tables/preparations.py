"""The preparations table, and what the preparation state machine's Record state writes into it.

Record is a DynamoDB UpdateItem built from the execution's JSON, so the Generate and Check tasks answer
each value in the form its attribute takes: strings as they are, numbers as decimal strings, maps in
DynamoDB's attribute-value form. The values pass through the PreparationRecord field they fill first, so
the record's bounds hold for what the state machine writes too.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import TypeAdapter

from benchgen.aws.items import to_attribute
from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records.bounds import clip_text
from benchgen.records.preparations import PreparationRecord, PreparationStatus

if TYPE_CHECKING:
    # Only the answers' types: a table's importers (the API) need not load generation.
    from benchgen.steps.prepare import Checked, Generation

#: The fields Record sets from Generate's answer, by the attribute type each takes.
RECORD_STRING_FIELDS = ("state_hash",)
RECORD_NUMBER_FIELDS = ("example_count", "source_cases", "held_out_count")
RECORD_MAP_FIELDS = ("splits", "kinds", "dropped", "suggested_hyperparams")


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


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    field = PreparationRecord.model_fields[name]
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[(field.annotation, *field.metadata)])


def _record_value(name: str, value: Any) -> Any:
    adapter = _adapter(name)
    plain = adapter.dump_python(adapter.validate_python(value), mode="json")
    return to_attribute(plain)["M"] if name in RECORD_MAP_FIELDS else str(plain)


def generate_answer(generation: Generation) -> dict[str, Any]:
    """Generate's answer as the state machine reads it: ``refused`` alone when the spec was not prepared
    (the state machine branches on its presence), else the scope, the example count and the ``record``
    values in Record's input form."""
    report = generation.report
    if report is None:
        return {"refused": generation.refused}
    found = report.model_dump(include={*RECORD_STRING_FIELDS, *RECORD_NUMBER_FIELDS, *RECORD_MAP_FIELDS})
    return {
        "scope": generation.scope,
        "example_count": report.example_count,
        "record": {name: _record_value(name, value) for name, value in found.items()},
    }


def check_answer(checked: Checked) -> dict[str, Any]:
    """Check's answer as Record writes it: the gap count as text, as DynamoDB takes a number."""
    return {"gap_count": str(checked.gap_count)}
