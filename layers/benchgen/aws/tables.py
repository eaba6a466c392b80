"""DynamoDB repositories for environment versions, runs, datasets, preparations, packages, training runs
and evaluations.

Every item goes through :mod:`benchgen.aws.items` (``to_item`` and ``from_item``). Lists are newest
first and paginated with an opaque ``next_token`` (see :mod:`benchgen.aws.pages`); a token a listing
did not hand out raises ``InvalidNextToken``.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from botocore.exceptions import ClientError
from pydantic import BaseModel, TypeAdapter

from benchgen.aws import clients
from benchgen.aws.items import ModelT, from_item, plain_item, to_attribute, to_item
from benchgen.aws.pages import Page, decode_token, encode_token
from benchgen.aws.transitions import TRACKED, log_training_transition, log_transitions
from benchgen.records import (
    TRAINING_TERMINAL,
    ConnectionRecord,
    DatasetRecord,
    EnvironmentOwner,
    EnvironmentRecord,
    EnvironmentStatus,
    EvaluationGrant,
    EvaluationRecord,
    EvaluationStatus,
    PackageRecord,
    PackageStatus,
    PreparationRecord,
    PreparationStatus,
    RunClaim,
    RunRecord,
    RunStatus,
    StatusChange,
    TrainingRunRecord,
    TrainingStatus,
    clip_text,
)

#: Dataset kinds an unfiltered dataset list covers (one ``by_kind`` partition each).
DATASET_KINDS: tuple[str, ...] = ("finetune",)


def _is_condition_failure(error: ClientError) -> bool:
    return bool(error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


@functools.cache
def _run_field_adapter(name: str) -> TypeAdapter[Any]:
    """Validates and dumps one RunRecord field's value, the same way the whole record would.

    With the field's metadata, so that the record's bounds (see :mod:`benchgen.records`) hold for updates.
    """
    field = RunRecord.model_fields.get(name)
    if field is None or name == "run_id":
        raise ValueError(f"a run has no updatable field {name!r}")
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[(field.annotation, *field.metadata)])


# ---- the shared table plumbing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Filter:
    """An equality filter applied after the key condition (``attribute = value``)."""

    attribute: str
    value: str


class _Table:
    def __init__(self, table_name: str, *, client: Any = None) -> None:
        self.table_name = table_name
        self._injected_client = client

    @property
    def _client(self) -> Any:
        # Resolved per call, so a repository built before a mock started still reaches the mock.
        return self._injected_client or clients.dynamodb()

    def _put_if_absent(self, record: BaseModel, key_attribute: str) -> bool:
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item=to_item(record),
                ConditionExpression="attribute_not_exists(#k)",
                ExpressionAttributeNames={"#k": key_attribute},
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def _conditional_update(
        self,
        key: Mapping[str, str],
        expression: str,
        condition: str,
        names: Mapping[str, str],
        values: Mapping[str, Any],
    ) -> bool:
        """Apply ``expression`` to the item at ``key`` if ``condition`` holds; ``False`` (nothing changed)
        when it does not."""
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={name: {"S": value} for name, value in key.items()},
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=dict(names),
                ExpressionAttributeValues=dict(values),
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def _get(self, model: type[ModelT], key: Mapping[str, str]) -> ModelT | None:
        response = self._client.get_item(
            TableName=self.table_name,
            Key={name: {"S": value} for name, value in key.items()},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return from_item(model, item) if item else None

    def _newest_page(
        self,
        model: type[ModelT],
        *,
        index: str,
        partition_attribute: str,
        partitions: Sequence[str],
        key_attribute: str,
        limit: int,
        next_token: str | None,
    ) -> Page[ModelT]:
        """A page of ``model`` records from a GSI sorted on ``created_at``, newest first."""
        items, token = self._newest_first(
            index=index,
            partition_attribute=partition_attribute,
            partitions=partitions,
            sort_attribute="created_at",
            key_attribute=key_attribute,
            limit=limit,
            next_token=next_token,
        )
        return Page(items=[model.model_validate(item) for item in items], next_token=token)

    def _newest_first(
        self,
        *,
        index: str,
        partition_attribute: str,
        partitions: Sequence[str],
        sort_attribute: str,
        key_attribute: str,
        limit: int,
        next_token: str | None,
        where: _Filter | None = None,
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Items of ``partitions`` of a GSI, merged newest first; returns (items, next_token).

        The position is the last item's (sort value, table key), so one token format serves a single
        partition and a merge of several alike. Each partition is read from just after the position,
        in pages of ``limit + 1``, until it has more than ``limit`` items past every item that shares
        the boundary's sort value (ties on the timestamp are broken by the table key).
        """
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        cursor: tuple[str, str] | None = None
        if next_token is not None:
            position = decode_token(next_token, (sort_attribute, key_attribute))
            cursor = (position[sort_attribute], position[key_attribute])
        merged: list[dict[str, Any]] = []
        for partition in partitions:
            merged.extend(
                self._partition_after(
                    index=index,
                    partition=(partition_attribute, partition),
                    sort_attribute=sort_attribute,
                    key_attribute=key_attribute,
                    cursor=cursor,
                    limit=limit,
                    where=where,
                )
            )
        merged.sort(key=lambda item: (item[sort_attribute], item[key_attribute]), reverse=True)
        if len(merged) <= limit:
            return merged, None
        page = merged[:limit]
        last = page[-1]
        return page, encode_token({sort_attribute: last[sort_attribute], key_attribute: last[key_attribute]})

    def _partition_after(
        self,
        *,
        index: str,
        partition: tuple[str, str],
        sort_attribute: str,
        key_attribute: str,
        cursor: tuple[str, str] | None,
        limit: int,
        where: _Filter | None,
    ) -> list[dict[str, Any]]:
        names = {"#pk": partition[0]}
        values: dict[str, Any] = {":pk": {"S": partition[1]}}
        condition = "#pk = :pk"
        if cursor is not None:
            condition += " AND #sk <= :sk"
            names["#sk"] = sort_attribute
            values[":sk"] = {"S": cursor[0]}
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "IndexName": index,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": limit + 1,
        }
        if where is not None:
            names["#f"] = where.attribute
            values[":f"] = {"S": where.value}
            request["FilterExpression"] = "#f = :f"
        kept: list[dict[str, Any]] = []
        while True:
            response = self._client.query(**request)
            for raw in response.get("Items", []):
                item = plain_item(raw)
                if cursor is not None and (item[sort_attribute], item[key_attribute]) >= cursor:
                    continue
                kept.append(item)
            last_key = response.get("LastEvaluatedKey")
            if last_key is None:
                return kept
            if len(kept) > limit and kept[-1][sort_attribute] < kept[limit - 1][sort_attribute]:
                return kept
            request["ExclusiveStartKey"] = last_key


# ---- repositories ---------------------------------------------------------------------------------------


#: The sort key of an environment's owner item, kept beside its versions (a version never starts with '#').
OWNER_ITEM_VERSION = "#owner"


def _is_version_item(item: Mapping[str, Any]) -> bool:
    return bool(item.get("version", {}).get("S") != OWNER_ITEM_VERSION)


class EnvironmentsRepo(_Table):
    """Environment versions (pk ``environment_id``, sk ``version``) and each environment's owner."""

    def claim_owner(self, owner: EnvironmentOwner) -> EnvironmentOwner:
        """Make ``owner`` the environment's owner unless it has one; returns the owner that stands.

        A conditional write: of two first publishers racing for one environment id, exactly one wins.
        """
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item={**to_item(owner), "version": {"S": OWNER_ITEM_VERSION}},
                ConditionExpression="attribute_not_exists(environment_id)",
            )
        except ClientError as error:
            if not _is_condition_failure(error):
                raise
            stored = self.owner_of(owner.environment_id)
            if stored is None:
                raise RuntimeError(f"the owner of {owner.environment_id!r} exists and is missing") from None
            return stored
        return owner

    def owner_of(self, environment_id: str) -> EnvironmentOwner | None:
        return self._get(EnvironmentOwner, {"environment_id": environment_id, "version": OWNER_ITEM_VERSION})

    def set_publisher_group(self, environment_id: str, group: str, *, owner: str) -> bool:
        """Name the group whose members publish too; ``False`` (nothing changed) unless ``owner`` owns it."""
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"environment_id": {"S": environment_id}, "version": {"S": OWNER_ITEM_VERSION}},
                UpdateExpression="SET publisher_group = :g",
                ConditionExpression="#o = :o",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":g": {"S": group}, ":o": {"S": owner}},
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def put_if_absent(self, record: EnvironmentRecord) -> bool:
        """Store a version; ``False`` (and nothing changed) when that version is already recorded."""
        return self._put_if_absent(record, "environment_id")

    def get(self, environment_id: str, version: str) -> EnvironmentRecord | None:
        return self._get(EnvironmentRecord, {"environment_id": environment_id, "version": version})

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


class RunsRepo(_Table):
    """Runs (pk ``run_id``; GSIs ``by_environment`` and ``by_status``, both sorted by ``created_at``)."""

    def create(self, record: RunRecord) -> bool:
        """Store a new run; ``False`` (and nothing changed) when the run id is taken."""
        if not self._put_if_absent(record, "run_id"):
            return False
        log_transitions(record.run_id, {}, record.model_dump(mode="json"))
        return True

    def get(self, run_id: str) -> RunRecord | None:
        return self._get(RunRecord, {"run_id": run_id})

    def update(
        self,
        run_id: str,
        *,
        expected_status: RunStatus | Iterable[RunStatus] | None = None,
        if_unset: Iterable[str] = (),
        **fields: Any,
    ) -> bool:
        """Set ``fields`` on an existing run (a ``None`` value removes the field).

        The write happens only if the run exists, its status is one of ``expected_status`` (when
        given) and none of the ``if_unset`` fields is set yet; otherwise nothing changes and the
        result is ``False``. That is how a duplicate event becomes a no-op: the second
        ``Pending -> Running`` finds the run already ``Running`` and changes nothing.
        """
        if not fields:
            raise ValueError("update needs at least one field to set")
        names: dict[str, str] = {"#run_id": "run_id"}
        values: dict[str, Any] = {}
        assignments: builtins.list[str] = []
        removals: builtins.list[str] = []
        for position, (name, value) in enumerate(sorted(fields.items())):
            adapter = _run_field_adapter(name)
            names[f"#f{position}"] = name
            if value is None:
                removals.append(f"#f{position}")
                continue
            plain = adapter.dump_python(adapter.validate_python(value), mode="json")
            values[f":v{position}"] = to_attribute(plain)
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
        if expected_status is not None:
            statuses = [expected_status] if isinstance(expected_status, RunStatus) else expected_status
            names["#status"] = "status"
            placeholders = []
            for position, status in enumerate(statuses):
                values[f":s{position}"] = {"S": RunStatus(status).value}
                placeholders.append(f":s{position}")
            conditions.append(f"#status IN ({', '.join(placeholders)})")
        for position, name in enumerate(if_unset):
            names[f"#u{position}"] = name
            conditions.append(f"attribute_not_exists(#u{position})")
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "Key": {"run_id": {"S": run_id}},
            "UpdateExpression": expression,
            "ConditionExpression": " AND ".join(conditions),
            "ExpressionAttributeNames": names,
        }
        if values:
            request["ExpressionAttributeValues"] = values
        if TRACKED.keys() & fields.keys():
            request["ReturnValues"] = "ALL_OLD"
        try:
            response = self._client.update_item(**request)
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        log_transitions(run_id, plain_item(response.get("Attributes", {})), fields)
        return True

    def claim(
        self, run_id: str, *, step: str, holder: str, expires_at: float, now: float, status: RunStatus
    ) -> int | None:
        """Take the run for ``step`` until ``expires_at``; the attempt number, or None if it is not free.

        Free means: the run is in ``status`` and no other holder's claim on the same step is still live.
        The write is conditioned on the claim that was read, so of concurrent claimers exactly one wins.
        """
        run = self.get(run_id)
        if run is None or run.status is not status:
            return None
        previous = run.claim
        same_step = previous is not None and previous.step == step
        if previous is not None and same_step and previous.expires_at > now:
            return None
        attempt = previous.attempt + 1 if previous is not None and same_step else 1
        claim = RunClaim(step=step, holder=holder, expires_at=expires_at, attempt=attempt)
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
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"run_id": {"S": run_id}},
                UpdateExpression="SET #claim = :claim",
                ConditionExpression=f"#status = :status AND {unchanged}",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return None
            raise
        return attempt

    def release_claim(self, run_id: str, *, holder: str) -> bool:
        """Let the claim lapse now, keeping its attempt count; ``False`` if ``holder`` no longer holds it."""
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"run_id": {"S": run_id}},
                UpdateExpression="SET #claim.#expires = :lapsed",
                ConditionExpression="#claim.#holder = :holder",
                ExpressionAttributeNames={"#claim": "claim", "#holder": "holder", "#expires": "expires_at"},
                ExpressionAttributeValues={":lapsed": {"N": "0"}, ":holder": {"S": holder}},
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def add_files(self, run_id: str, files: Mapping[str, str]) -> bool:
        """Record files the run produced (label -> S3 key), each entry on its own.

        The steps of a run finish in any order (an upload triggers the next step before the uploader
        returns), so none of them rewrites the whole map: each sets only its own entries.
        """
        names: dict[str, str] = {"#run_id": "run_id", "#files": "files"}
        values: dict[str, Any] = {}
        assignments: builtins.list[str] = []
        for position, (label, key) in enumerate(sorted(files.items())):
            names[f"#l{position}"] = label
            values[f":k{position}"] = {"S": key}
            assignments.append(f"#files.#l{position} = :k{position}")
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"run_id": {"S": run_id}},
                UpdateExpression="SET " + ", ".join(assignments),
                ConditionExpression="attribute_exists(#run_id)",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

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
                where=_Filter("status", RunStatus(status).value) if status is not None else None,
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


class DatasetsRepo(_Table):
    """Datasets (pk ``dataset_id``; GSI ``by_kind`` sorted by ``created_at``)."""

    def __init__(self, table_name: str, *, client: Any = None, kinds: Sequence[str] = DATASET_KINDS) -> None:
        super().__init__(table_name, client=client)
        self.kinds = tuple(kinds)

    def put_if_absent(self, record: DatasetRecord) -> bool:
        """Store a dataset; ``False`` (and nothing changed) when that dataset id is already saved."""
        return self._put_if_absent(record, "dataset_id")

    def get(self, dataset_id: str) -> DatasetRecord | None:
        return self._get(DatasetRecord, {"dataset_id": dataset_id})

    def list(
        self, *, kind: str | None = None, limit: int = 20, next_token: str | None = None
    ) -> Page[DatasetRecord]:
        """Datasets newest first, of one kind, or of every kind in ``self.kinds`` merged."""
        return self._newest_page(
            DatasetRecord,
            index="by_kind",
            partition_attribute="kind",
            partitions=[kind] if kind is not None else self.kinds,
            key_attribute="dataset_id",
            limit=limit,
            next_token=next_token,
        )


class ConnectionsRepo(_Table):
    """Provider connections (pk ``connection_id``; GSI ``by_owner`` sorted by ``created_at``)."""

    def put(self, record: ConnectionRecord) -> bool:
        """Store a new connection; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "connection_id")

    def get(self, connection_id: str) -> ConnectionRecord | None:
        return self._get(ConnectionRecord, {"connection_id": connection_id})

    def list(
        self,
        *,
        owner: str,
        limit: int = 20,
        next_token: str | None = None,
        keep: Callable[[ConnectionRecord], bool] | None = None,
    ) -> Page[ConnectionRecord]:
        """The owner's connections, newest first; with ``keep``, only those it keeps.

        A filtered page reads on until it holds ``limit`` connections or the owner has no more, so a
        short page is the last one.
        """
        kept: builtins.list[ConnectionRecord] = []
        token = next_token
        while True:
            items, after = self._newest_first(
                index="by_owner",
                partition_attribute="owner",
                partitions=[owner],
                sort_attribute="created_at",
                key_attribute="connection_id",
                limit=limit,
                next_token=token,
            )
            for position, item in enumerate(items):
                record = ConnectionRecord.model_validate(item)
                if keep is not None and not keep(record):
                    continue
                kept.append(record)
                if len(kept) == limit:
                    if position < len(items) - 1:
                        after = encode_token(
                            {"created_at": item["created_at"], "connection_id": item["connection_id"]}
                        )
                    return Page(items=kept, next_token=after)
            if after is None:
                return Page(items=kept, next_token=None)
            token = after

    def delete(self, connection_id: str, *, owner: str) -> bool:
        """Delete the connection if ``owner`` owns it; ``False`` (nothing changed) if not, or if gone."""
        try:
            self._client.delete_item(
                TableName=self.table_name,
                Key={"connection_id": {"S": connection_id}},
                ConditionExpression="#o = :o",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":o": {"S": owner}},
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True


class PreparationsRepo(_Table):
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
        try:
            self._client.update_item(
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
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

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


class PackagesRepo(_Table):
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
        try:
            self._client.update_item(
                TableName=self.table_name,
                Key={"package_id": {"S": package_id}},
                UpdateExpression=expression,
                ConditionExpression="#status = :expected",
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def retry(self, package_id: str, *, attempt: int) -> bool:
        """Failed at ``attempt`` -> Building at the next attempt, its reason cleared; ``False`` if not so.

        Of two requests retrying the same failed build, exactly one moves it (and starts the next build).
        """
        try:
            self._client.update_item(
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
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

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


@functools.cache
def _training_field_adapter(name: str) -> TypeAdapter[Any]:
    """Validates and dumps one TrainingRunRecord field's value with the record's own bounds."""
    field = TrainingRunRecord.model_fields[name]
    if not field.metadata:
        return TypeAdapter(field.annotation)
    return TypeAdapter(Annotated[(field.annotation, *field.metadata)])


def _training_value(name: str, value: Any) -> dict[str, Any]:
    adapter = _training_field_adapter(name)
    return to_attribute(adapter.dump_python(adapter.validate_python(value), mode="json"))


def _terminal_placeholders(values: dict[str, Any]) -> str:
    """Add the terminal training statuses to ``values``; their placeholders, for ``#status IN (...)``."""
    placeholders = []
    for position, final in enumerate(sorted(TRAINING_TERMINAL)):
        values[f":t{position}"] = {"S": final.value}
        placeholders.append(f":t{position}")
    return ", ".join(placeholders)


class TrainingRunsRepo(_Table):
    """Training runs (pk ``training_run_id``; GSI ``by_owner`` sorted by ``created_at``).

    Created Queued by the API; every later status is a conditional :meth:`transition` that appends one
    :class:`StatusChange` to the timeline, so a duplicate poll or a late step changes nothing, and a run
    that reached Succeeded, Failed or Cancelled never leaves it.
    """

    def put_if_absent(self, record: TrainingRunRecord) -> bool:
        """Store a new training run; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "training_run_id")

    def get(self, training_run_id: str) -> TrainingRunRecord | None:
        return self._get(TrainingRunRecord, {"training_run_id": training_run_id})

    def list(self, *, owner: str, limit: int = 20, next_token: str | None = None) -> Page[TrainingRunRecord]:
        """The owner's training runs, newest first."""
        return self._newest_page(
            TrainingRunRecord,
            index="by_owner",
            partition_attribute="owner",
            partitions=[owner],
            key_attribute="training_run_id",
            limit=limit,
            next_token=next_token,
        )

    def transition(
        self,
        training_run_id: str,
        status: TrainingStatus,
        *,
        provider_status: str | None = None,
        message: str | None = None,
        **fields: Any,
    ) -> bool:
        """Move the run to ``status``, appending the change (with what the provider said) to its timeline.

        ``fields`` are set with it: ``job_id``, ``result_model``, ``failure_reason``, ``cost``. A terminal
        status also sets ``finished_at``. ``False`` (nothing changed) when the run is missing, already in
        ``status``, or already terminal.
        """
        allowed = {"job_id", "result_model", "failure_reason", "cost"}
        unknown = set(fields) - allowed
        if unknown:
            raise ValueError(f"a transition sets only {sorted(allowed)}, not {sorted(unknown)}")
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
            values[f":f{position}"] = {"S": value} if name == "finished_at" else _training_value(name, value)
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
            {":cost": _training_value("cost", dict(cost))},
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


class EvaluationsRepo(_Table):
    """Evaluations (pk ``evaluation_id``), and the evaluation grants of training runs beside them.

    A grant lives under the key ``grant:<training_run_id>:<user>``, which no evaluation id (``eval-<hex>``)
    can take: one table serves both, read by key only.
    """

    @staticmethod
    def _grant_key(training_run_id: str, user: str) -> str:
        return f"grant:{training_run_id}:{user}"

    def put_grant(self, grant: EvaluationGrant) -> bool:
        """Record a grant; ``False`` (the first one kept) when this user was granted this run before."""
        try:
            self._client.put_item(
                TableName=self.table_name,
                Item={
                    "evaluation_id": {"S": self._grant_key(grant.training_run_id, grant.user)},
                    **to_item(grant),
                },
                ConditionExpression="attribute_not_exists(evaluation_id)",
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    def grant_for(self, training_run_id: str, user: str) -> EvaluationGrant | None:
        return self._get(EvaluationGrant, {"evaluation_id": self._grant_key(training_run_id, user)})

    def create(self, record: EvaluationRecord) -> bool:
        """Store a new evaluation; ``False`` (and nothing changed) when the id is taken."""
        return self._put_if_absent(record, "evaluation_id")

    def get(self, evaluation_id: str) -> EvaluationRecord | None:
        if evaluation_id.startswith("grant:"):
            return None
        return self._get(EvaluationRecord, {"evaluation_id": evaluation_id})

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
