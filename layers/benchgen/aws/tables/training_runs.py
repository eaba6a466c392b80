"""The training runs table, with each run's status timeline."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchgen.aws.items import field_attribute, to_attribute
from benchgen.aws.tables.base import EqualsFilter, Table
from benchgen.aws.transitions import log_training_transition
from benchgen.ports.pages import Page
from benchgen.records.training_runs import TRAINING_TERMINAL, StatusChange, TrainingRunRecord, TrainingStatus


def _terminal_placeholders(values: dict[str, Any]) -> str:
    """Add the terminal training statuses to ``values``; their placeholders, for ``#status IN (...)``."""
    placeholders = []
    for position, final in enumerate(sorted(TRAINING_TERMINAL)):
        values[f":t{position}"] = {"S": final.value}
        placeholders.append(f":t{position}")
    return ", ".join(placeholders)


class TrainingRunsRepo(Table):
    """Training runs (pk ``training_run_id``; GSIs ``by_owner`` and ``by_preparation``, sorted by
    ``created_at``).

    Created Queued by the API; every later status is a conditional :meth:`transition` that appends one
    :class:`StatusChange` to the timeline, so a duplicate poll or a late step changes nothing, and a run
    that reached Succeeded, Failed or Cancelled never leaves it.
    """

    def put_if_absent(self, record: TrainingRunRecord) -> bool:
        """Store a new training run; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "training_run_id")

    def get(self, training_run_id: str) -> TrainingRunRecord | None:
        return self._get(TrainingRunRecord, {"training_run_id": training_run_id})

    def list(
        self,
        *,
        owner: str,
        preparation_id: str | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> Page[TrainingRunRecord]:
        """The owner's training runs, newest first; with ``preparation_id``, only those that trained its
        material (a query of ``by_preparation`` filtered on the owner, so no one else's run is returned)."""
        if preparation_id is None:
            return self._newest_page(
                TrainingRunRecord,
                index="by_owner",
                partition_attribute="owner",
                partitions=[owner],
                key_attribute="training_run_id",
                limit=limit,
                next_token=next_token,
            )
        items, token = self._newest_first(
            index="by_preparation",
            partition_attribute="preparation_id",
            partitions=[preparation_id],
            sort_attribute="created_at",
            key_attribute="training_run_id",
            limit=limit,
            next_token=next_token,
            where=EqualsFilter("owner", owner),
        )
        return Page(items=[TrainingRunRecord.model_validate(item) for item in items], next_token=token)

    def transition(
        self,
        training_run_id: str,
        status: TrainingStatus,
        *,
        provider_status: str | None = None,
        message: str | None = None,
        result_model: str | None = None,
        failure_reason: str | None = None,
    ) -> bool:
        """Move the run to ``status``, appending the change (with what the provider said) to its timeline.

        The trained model and the failure reason are set with it when given. A terminal status also sets
        ``finished_at``. ``False`` (nothing changed) when the run is missing, already in ``status``, or
        already terminal.
        """
        fields: dict[str, str | None] = {"result_model": result_model, "failure_reason": failure_reason}
        change = StatusChange(status=status, provider_status=provider_status, message=message)
        names = {"#status": "status", "#timeline": "timeline"}
        values: dict[str, Any] = {
            ":status": {"S": status.value},
            ":change": {"L": [to_attribute(change.model_dump(mode="json", exclude_none=True))]},
            ":empty": {"L": []},
        }
        assignments = [
            "#status = :status",
            "#timeline = list_append(if_not_exists(#timeline, :empty), :change)",
        ]
        if status in TRAINING_TERMINAL:
            fields = {**fields, "finished_at": change.at}
        for position, (name, value) in enumerate(sorted(fields.items())):
            if value is None:
                continue
            names[f"#f{position}"] = name
            values[f":f{position}"] = (
                {"S": value} if name == "finished_at" else field_attribute(TrainingRunRecord, name, value)
            )
            assignments.append(f"#f{position} = :f{position}")
        held = _terminal_placeholders(values)
        moved = self._conditional_update(
            {"training_run_id": training_run_id},
            "SET " + ", ".join(assignments),
            f"attribute_exists(#status) AND #status <> :status AND NOT (#status IN ({held}))",
            names,
            values,
        )
        if moved:
            log_training_transition(training_run_id, status.value, provider_status)
        return moved

    def record_job(self, training_run_id: str, *, job_id: str) -> bool:
        """Keep the provider's id of the run's job; ``False`` if the run is missing or names another job.

        Kept whatever the status: a run cancelled while its job was being started still names that job.
        """
        return self._conditional_update(
            {"training_run_id": training_run_id},
            "SET #job = :job",
            "attribute_exists(training_run_id) AND (attribute_not_exists(#job) OR #job = :job)",
            {"#job": "job_id"},
            {":job": {"S": job_id}},
        )

    def record_cost(self, training_run_id: str, cost: Mapping[str, float | str]) -> bool:
        """Set what the provider reports of the job's cost; ``False`` if the run is missing."""
        return self._conditional_update(
            {"training_run_id": training_run_id},
            "SET #cost = :cost",
            "attribute_exists(training_run_id)",
            {"#cost": "cost"},
            {":cost": field_attribute(TrainingRunRecord, "cost", dict(cost))},
        )

    def request_cancel(self, training_run_id: str, *, owner: str) -> bool:
        """Mark the run for cancelling; ``False`` unless ``owner`` owns it and it is not terminal yet."""
        values: dict[str, Any] = {":yes": {"BOOL": True}, ":owner": {"S": owner}}
        held = _terminal_placeholders(values)
        return self._conditional_update(
            {"training_run_id": training_run_id},
            "SET #cancel = :yes",
            f"#owner = :owner AND NOT (#status IN ({held}))",
            {"#cancel": "cancel_requested", "#owner": "owner", "#status": "status"},
            values,
        )
