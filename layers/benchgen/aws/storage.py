"""The data bucket: streams objects to and from local files (Lambda's /tmp)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from benchgen.aws import clients
from benchgen.errors import BenchGenError

_NOT_FOUND = {"404", "NoSuchKey", "NoSuchVersion"}


class MissingObject(BenchGenError):
    """An object a step needs is not in the bucket (or not at the version it expects)."""


class ObjectStore:
    """A thin adapter over one S3 bucket. The client is injected, or else the shared one is looked up on
    each call, so an adapter made before a (local) cloud started still reaches that cloud."""

    def __init__(self, bucket: str, *, client: Any = None) -> None:
        self._client = client
        self.bucket = bucket

    @property
    def _s3(self) -> Any:
        return self._client or clients.s3()

    def download(self, key: str, path: Path, *, version_id: str | None = None) -> Path:
        extra = {"VersionId": version_id} if version_id else None
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._s3.download_file(self.bucket, key, str(path), ExtraArgs=extra)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _NOT_FOUND:
                raise MissingObject(f"{key} is not in the bucket {self.bucket}") from None
            raise
        return path

    def upload(self, path: Path, key: str, *, content_type: str = "application/octet-stream") -> None:
        self._s3.upload_file(str(path), self.bucket, key, ExtraArgs={"ContentType": content_type})

    def head(self, key: str, *, version_id: str | None = None) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if version_id:
            kwargs["VersionId"] = version_id
        response: dict[str, Any] = self._s3.head_object(**kwargs)
        return response


CONTENT_TYPES = {
    ".json": "application/json",
    ".html": "text/html; charset=utf-8",
    ".zip": "application/zip",
    ".log": "text/plain; charset=utf-8",
}


def content_type_for(path: Path) -> str:
    return CONTENT_TYPES.get(path.suffix, "application/octet-stream")
