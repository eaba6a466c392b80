"""Which delivery of an S3 event is at work on an object version, beside powertools' idempotency record.

powertools records that some invocation is processing an object version, not which one. A delivery that
finds the record in progress is one of two things. A duplicate: S3 delivers at least once, so a second
event for the same version arrives while the first is still working (a long scoring program); it must end
quietly, as the first delivery's own event carries the work to its end, its retries and dead letter
included. Or Lambda's retry of an event whose earlier attempt died holding the record (killed out of
memory): it must fail again, so that Lambda retries it and at last sends it to the dead-letter queue,
whose consumer ends the run. Lambda keeps an event's request id across its retries, so the request id of
the delivery that took the record tells the two apart; this module keeps it, in the idempotency table,
under an id powertools never writes.
"""

from __future__ import annotations

import hashlib
import json
import time

from benchgen.aws import clients
from benchgen.ports.storage import UploadedObject

# As long as the idempotency record it stands beside: a redelivery after that is processed again anyway.
HOLDER_TTL_S = 24 * 3600


def holder_id(prefix: str, upload: UploadedObject) -> str:
    """The id of the holder of ``upload``'s record under ``prefix`` (powertools' are ``prefix#hash``)."""
    identity = json.dumps([upload.bucket, upload.key, upload.version_id, upload.etag])
    return f"holder:{prefix}#{hashlib.sha256(identity.encode()).hexdigest()}"


class DeliveryHolders:
    """The request id of the delivery that took each object version's idempotency record."""

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name

    def hold(self, record_id: str, request_id: str) -> None:
        """Say that ``request_id`` now holds the record (written by the holder, after it took it)."""
        clients.dynamodb().put_item(
            TableName=self.table_name,
            Item={
                "id": {"S": record_id},
                "request_id": {"S": request_id},
                "expiration": {"N": str(int(time.time()) + HOLDER_TTL_S)},
            },
        )

    def holder(self, record_id: str) -> str | None:
        """The request id of the record's latest holder; None if none said yet (it has just taken it)."""
        found = clients.dynamodb().get_item(
            TableName=self.table_name, Key={"id": {"S": record_id}}, ConsistentRead=True
        )
        item = found.get("Item")
        return None if item is None else str(item["request_id"]["S"])
