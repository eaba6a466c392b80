"""The fields BenchGen reads from an S3 event notification.

A narrow model: the local cloud (and some real deliveries) omit fields such as ``userIdentity`` that the
full S3 schema requires, and only the bucket, key, version and ETag matter here (the last two tell a
redelivery from a new upload).
"""

from __future__ import annotations

from urllib.parse import unquote_plus

from pydantic import ConfigDict, Field

from benchgen.lazy_model import LazyModel
from benchgen.ports.storage import UploadedObject


class _Lenient(LazyModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Object(_Lenient):
    key: str
    version_id: str | None = Field(default=None, alias="versionId")
    etag: str | None = Field(default=None, alias="eTag")


class _Bucket(_Lenient):
    name: str


class _S3(_Lenient):
    bucket: _Bucket
    object: _Object


class _Record(_Lenient):
    event_name: str = Field(alias="eventName")
    s3: _S3


class S3Notification(_Lenient):
    records: list[_Record] = Field(alias="Records", default_factory=list)


def uploaded_objects(event: dict[str, object]) -> list[UploadedObject]:
    """Every object-created record of the notification, keys decoded."""
    notification = S3Notification.model_validate(event)
    return [
        UploadedObject(
            bucket=record.s3.bucket.name,
            key=unquote_plus(record.s3.object.key),
            version_id=record.s3.object.version_id,
            etag=record.s3.object.etag,
        )
        for record in notification.records
        if record.event_name.startswith("ObjectCreated")
    ]
