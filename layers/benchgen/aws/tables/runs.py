"""The runs table."""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from typing import Any

from benchgen.aws.items import field_adapter, from_item, plain_item, to_attribute
from benchgen.aws.tables.base import EqualsFilter, Table
from benchgen.aws.transitions import log_transitions
from benchgen.outputs import RunOutput
from benchgen.ports.pages import Page
from benchgen.ports.runs import Holder, RunsStore, ShardReport
from benchgen.records.runs import RunClaim, RunRecord, RunStatus, ShardCounts
from benchgen.records.timestamps import utc_now


def _run_field(name: str) -> str:
    if name not in RunRecord.model_fields or name == "run_id":
        raise ValueError(f"a run has no updatable field {name!r}")
    return name


class RunsRepo(Table, RunsStore):
    """Runs (pk ``run_id``; GSIs ``by_environment`` and ``by_status``, both sorted by ``created_at``)."""

    def create(self, record: RunRecord) -> bool:
        """Store a new run; ``False`` (and nothing changed) when the run id is taken."""
        if not self._put_if_absent(record, "run_id"):
            return False
        log_transitions(record.run_id, {}, record.model_dump(mode="json"))
        return True

    def get(self, run_id: str) -> RunRecord | None:
        return self._get(RunRecord, {"run_id": run_id})

    def _update(
        self,
        run_id: str,
        expected: RunStatus | Iterable[RunStatus] | None,
        *,
        holder: str | Holder | None = Holder.ANY,
        **fields: Any,
    ) -> RunRecord | None:
        names: dict[str, str] = {"#run_id": "run_id"}
        values: dict[str, Any] = {}
        assignments: builtins.list[str] = []
        removals: builtins.list[str] = []
        written: dict[str, Any] = {}
        for position, (name, value) in enumerate(sorted(fields.items())):
            names[f"#f{position}"] = _run_field(name)
            if value is None:
                removals.append(f"#f{position}")
                continue
            adapter = field_adapter(RunRecord, name)
            written[name] = adapter.dump_python(adapter.validate_python(value), mode="json")
            values[f":v{position}"] = to_attribute(written[name])
            assignments.append(f"#f{position} = :v{position}")
        expression = " ".join(
            part
            for part in (
                "SET " + ", ".join(assignments) if assignments else "",
                "REMOVE " + ", ".join(removals) if removals else "",
            )
            if part
        )
        conditions = ["attribute_exists(#run_id)"]
        if expected is not None:
            statuses = [expected] if isinstance(expected, RunStatus) else expected
            names["#status"] = "status"
            placeholders = []
            for position, status in enumerate(statuses):
                values[f":s{position}"] = {"S": RunStatus(status).value}
                placeholders.append(f":s{position}")
            conditions.append(f"#status IN ({', '.join(placeholders)})")
        if holder is None:
            names["#claim"] = "claim"
            conditions.append("attribute_not_exists(#claim)")
        elif holder is not Holder.ANY:
            names["#claim"] = "claim"
            names["#holder"] = "holder"
            values[":holder"] = {"S": holder}
            conditions.append("#claim.#holder = :holder")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"run_id": {"S": run_id}},
            "UpdateExpression": expression,
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        # The item before the write: what the transition's log line starts from, and with the fields
        # written, exactly the item the write left (DynamoDB applied them to it atomically).
        request["ReturnValues"] = "ALL_OLD"
        response = self._conditional("update_item", **request)
        if response is None:
            return None
        before = plain_item(response.get("Attributes", {}))
        log_transitions(run_id, before, fields)
        after = {name: value for name, value in before.items() if name not in fields or name in written}
        return RunRecord.model_validate(after | written)

    def add_progress(self, run_id: str, report: ShardReport) -> bool:
        names = {
            "#run_id": "run_id",
            "#status": "status",
            "#p": "progress",
            "#sp": "shard_progress",
            "#shard": str(report.shard),
            "#updated": "updated_at",
        }
        values: dict[str, Any] = {
            ":now": to_attribute(report.now.model_dump()),
            ":updated": {"S": utc_now()},
            ":running": {"S": RunStatus.RUNNING.value},
        }
        was = report.was
        added, unchanged = [], []
        for name in ShardCounts.model_fields:
            names[f"#{name}"] = name
            values[f":add_{name}"] = {"N": str(report.added(name))}
            added.append(f"#p.#{name} :add_{name}")
            if was is not None:
                values[f":was_{name}"] = {"N": str(getattr(was, name))}
                unchanged.append(f"#sp.#shard.#{name} = :was_{name}")
        assignments = ["#sp.#shard = :now", "#p.#updated = :updated"]
        if report.call_deadline is not None:
            names["#deadline"] = "call_deadline"
            values[":deadline"] = {"S": report.call_deadline}
            assignments.append("#p.#deadline = :deadline")
        # The shard's counts as its reporter last left them: none yet, or exactly ``was``.
        as_left = "attribute_not_exists(#sp.#shard)" if was is None else " AND ".join(unchanged)
        response = self._conditional(
            "update_item",
            TableName=self.table_name,
            Key={"run_id": {"S": run_id}},
            UpdateExpression=f"ADD {', '.join(added)} SET {', '.join(assignments)}",
            ConditionExpression=(
                "attribute_exists(#run_id) AND attribute_exists(#p) AND attribute_exists(#sp) "
                f"AND #status = :running AND {as_left}"
            ),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        return response is not None

    def claim(
        self,
        run: RunRecord,
        *,
        step: str,
        holder: str,
        expires_at: float,
        now: float,
        status: RunStatus,
        request_id: str | None = None,
    ) -> int | None:
        """Take ``run`` for ``step`` until ``expires_at``; the attempt number, or None if it is not free.

        Free means: the run is in ``status`` and no other holder's claim on the same step is still live.
        The write is conditioned on the claim ``run`` holds (as the caller read or wrote it), so of
        concurrent claimers exactly one wins, and a run that changed hands since is not taken.
        """
        if run.status is not status:
            return None
        previous = run.claim
        same_step = previous is not None and previous.step == step
        if previous is not None and same_step and previous.expires_at > now:
            return None
        attempt = previous.attempt + 1 if previous is not None and same_step else 1
        claim = RunClaim(
            step=step, holder=holder, expires_at=expires_at, attempt=attempt, request_id=request_id
        )
        names = {"#claim": "claim", "#status": "status"}
        values: dict[str, Any] = {
            ":claim": to_attribute(claim.model_dump(mode="json")),
            ":status": {"S": status.value},
        }
        if previous is None:
            unchanged = "attribute_not_exists(#claim)"
        else:
            names["#holder"] = "holder"
            values[":previous"] = {"S": previous.holder}
            unchanged = "#claim.#holder = :previous"
        claimed = self._conditional(
            "update_item",
            TableName=self.table_name,
            Key={"run_id": {"S": run.run_id}},
            UpdateExpression="SET #claim = :claim",
            ConditionExpression=f"#status = :status AND {unchanged}",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        return attempt if claimed is not None else None

    def release_claim(self, run_id: str, *, holder: str) -> bool:
        """Let the claim lapse now, keeping its attempt count; ``False`` if ``holder`` no longer holds it."""
        return (
            self._conditional(
                "update_item",
                TableName=self.table_name,
                Key={"run_id": {"S": run_id}},
                UpdateExpression="SET #claim.#expires = :lapsed",
                ConditionExpression="#claim.#holder = :holder",
                ExpressionAttributeNames={"#claim": "claim", "#holder": "holder", "#expires": "expires_at"},
                ExpressionAttributeValues={":lapsed": {"N": "0"}, ":holder": {"S": holder}},
            )
            is not None
        )

    def add_files(self, run_id: str, files: Mapping[RunOutput, str]) -> RunRecord | None:
        """Record files the run produced (output -> S3 key), each entry on its own; the run as it is then.

        The steps of a run finish in any order (an upload triggers the next step before the uploader
        returns), so none of them rewrites the whole map: each sets only its own entries.
        """
        names: dict[str, str] = {"#run_id": "run_id", "#files": "files"}
        values: dict[str, Any] = {}
        assignments: builtins.list[str] = []
        for position, (output, key) in enumerate(sorted(files.items())):
            names[f"#l{position}"] = output.value
            values[f":k{position}"] = {"S": key}
            assignments.append(f"#files.#l{position} = :k{position}")
        response = self._conditional(
            "update_item",
            TableName=self.table_name,
            Key={"run_id": {"S": run_id}},
            UpdateExpression="SET " + ", ".join(assignments),
            ConditionExpression="attribute_exists(#run_id)",
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        return from_item(RunRecord, response["Attributes"]) if response is not None else None

    def list(
        self,
        *,
        environment_id: str | None = None,
        status: RunStatus | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> Page[RunRecord]:
        """Runs newest first, optionally of one environment and/or in one status.

        With an environment: a query of ``by_environment``, filtered on status when one is given (so a
        page may read more of the environment's runs than it returns).
        With a status only: a query of ``by_status``. With neither: the five ``by_status``
        partitions (one per status, a fixed set) are queried and merged newest first, so even the
        unfiltered list reads only about ``5 x limit`` items a page, never the whole table.
        """
        if environment_id is not None:
            items, token = self._newest_first(
                index="by_environment",
                partition_attribute="environment_id",
                partitions=[environment_id],
                sort_attribute="created_at",
                key_attribute="run_id",
                limit=limit,
                next_token=next_token,
                where=EqualsFilter("status", RunStatus(status).value) if status is not None else None,
            )
        else:
            items, token = self._newest_first(
                index="by_status",
                partition_attribute="status",
                partitions=[RunStatus(status).value] if status is not None else [s.value for s in RunStatus],
                sort_attribute="created_at",
                key_attribute="run_id",
                limit=limit,
                next_token=next_token,
            )
        return Page(items=[RunRecord.model_validate(item) for item in items], next_token=token)
