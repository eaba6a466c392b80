"""The evaluations table, which also holds the evaluation grants of training runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchgen.aws.items import field_attribute, to_item
from benchgen.aws.tables.base import Table
from benchgen.ports.pages import Page
from benchgen.records.bounds import clip_text
from benchgen.records.evaluations import EvaluationGrant, EvaluationRecord, EvaluationStatus


class EvaluationsRepo(Table):
    """Evaluations (pk ``evaluation_id``; GSI ``by_training_run`` sorted by ``authorized_at``), and the
    evaluation grants of training runs beside them.

    A grant lives under the key ``grant:<training_run_id>:<user>``, which no evaluation id (``eval-<hex>``)
    can take: one table serves both. Grants have no ``authorized_at``, so the index holds evaluations only.
    """

    @staticmethod
    def _grant_key(training_run_id: str, user: str) -> str:
        return f"grant:{training_run_id}:{user}"

    def put_grant(self, grant: EvaluationGrant) -> bool:
        """Record a grant; ``False`` (the first one kept) when this user was granted this run before."""
        return (
            self._conditional(
                "put_item",
                TableName=self.table_name,
                Item={
                    "evaluation_id": {"S": self._grant_key(grant.training_run_id, grant.user)},
                    **to_item(grant),
                },
                ConditionExpression="attribute_not_exists(evaluation_id)",
            )
            is not None
        )

    def grant_for(self, training_run_id: str, user: str) -> EvaluationGrant | None:
        return self._get(EvaluationGrant, {"evaluation_id": self._grant_key(training_run_id, user)})

    def create(self, record: EvaluationRecord) -> bool:
        """Store a new evaluation; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "evaluation_id")

    def get(self, evaluation_id: str) -> EvaluationRecord | None:
        if evaluation_id.startswith("grant:"):
            return None
        return self._get(EvaluationRecord, {"evaluation_id": evaluation_id})

    def list_for_training_run(
        self, training_run_id: str, *, limit: int = 20, next_token: str | None = None
    ) -> Page[EvaluationRecord]:
        """The training run's evaluations, whoever asked for them, newest first."""
        items, token = self._newest_first(
            index="by_training_run",
            partition_attribute="training_run_id",
            partitions=[training_run_id],
            sort_attribute="authorized_at",
            key_attribute="evaluation_id",
            limit=limit,
            next_token=next_token,
        )
        return Page(items=[EvaluationRecord.model_validate(item) for item in items], next_token=token)

    def set_runs(
        self, evaluation_id: str, *, tuned_run_id: str, base_run_id: str, held_out_count: int
    ) -> bool:
        """Name the evaluation's two runs and its case count; only while it is Running."""
        return self._conditional_update(
            {"evaluation_id": evaluation_id},
            "SET #tuned.#run = :tuned, #base.#run = :base, held_out_count = :count",
            "#status = :running",
            # "base" is a DynamoDB reserved word: every name goes through a placeholder.
            {"#status": "status", "#tuned": "tuned", "#base": "base", "#run": "run_id"},
            {
                ":tuned": {"S": tuned_run_id},
                ":base": {"S": base_run_id},
                ":count": {"N": str(held_out_count)},
                ":running": {"S": EvaluationStatus.RUNNING.value},
            },
        )

    def complete(self, evaluation_id: str, *, found: Mapping[str, Any], finished_at: str) -> bool:
        """``Running`` -> ``Completed`` with what the comparison ``found`` (verdict, its reason, accuracy
        before and after, paired cases, the report keys: fields of the record, bounded as it bounds them);
        ``False`` unless it was still Running."""
        names = {"#status": "status"} | {f"#{name}": name for name in found}
        values = {f":{name}": field_attribute(EvaluationRecord, name, found[name]) for name in found}
        assignments = ", ".join(f"#{name} = :{name}" for name in found)
        return self._conditional_update(
            {"evaluation_id": evaluation_id},
            f"SET #status = :completed, {assignments}, finished_at = :finished",
            "#status = :running",
            names,
            values
            | {
                ":completed": {"S": EvaluationStatus.COMPLETED.value},
                ":running": {"S": EvaluationStatus.RUNNING.value},
                ":finished": {"S": finished_at},
            },
        )

    def fail(self, evaluation_id: str, *, reason: str, finished_at: str) -> bool:
        """``Running`` -> ``Failed`` with ``reason``; ``False`` unless it was still Running."""
        return self._conditional_update(
            {"evaluation_id": evaluation_id},
            "SET #status = :failed, failure_reason = :reason, finished_at = :finished",
            "#status = :running",
            {"#status": "status"},
            {
                ":failed": {"S": EvaluationStatus.FAILED.value},
                ":running": {"S": EvaluationStatus.RUNNING.value},
                ":reason": {"S": clip_text(reason)},
                ":finished": {"S": finished_at},
            },
        )
