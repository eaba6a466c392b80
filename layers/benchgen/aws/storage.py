"""The data bucket: streams objects to and from local files (Lambda's /tmp), and hands out presigned URLs."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from benchgen.aws import clients
from benchgen.ports.storage import MissingObject, OutOfRange

# What S3 answers for an absent object: head_object gives a bare 404, get_object NoSuchKey, and a
# request for a version that is not there NoSuchVersion.
_NOT_FOUND = {"404", "NotFound", "NoSuchKey", "NoSuchVersion"}


def _is_missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in _NOT_FOUND


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
            if _is_missing(error):
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

    def size(self, key: str) -> int | None:
        """The object's size in bytes, or ``None`` when there is no such object."""
        try:
            head = self.head(key)
        except ClientError as error:
            if _is_missing(error):
                return None
            raise
        size: int = head["ContentLength"]
        return size

    def chunks(self, key: str, *, chunk_size: int = 1 << 20) -> Generator[bytes, None, None] | None:
        """The object's bytes in chunks (memory stays flat whatever its size), or ``None`` when it is absent.

        Closing the generator early (``contextlib.closing``) releases the connection at once.
        """
        try:
            body = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"]
        except ClientError as error:
            if _is_missing(error):
                return None
            raise
        return _chunks(body, chunk_size)

    def lines(self, key: str, *, start: int = 0, chunk_size: int = 1 << 20) -> Generator[bytes, None, None]:
        """The object's lines from byte ``start`` on, each with its line end (so a reader can count bytes),
        streamed; raises :class:`MissingObject` when the object is absent.

        Lazy: nothing is read, and nothing raised, until the first line is asked for.
        """
        request: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if start:
            request["Range"] = f"bytes={start}-"
        try:
            body = self._s3.get_object(**request)["Body"]
        except ClientError as error:
            if _is_missing(error):
                raise MissingObject(f"{key} is not in the bucket {self.bucket}") from None
            if error.response.get("Error", {}).get("Code") == "InvalidRange":
                raise OutOfRange(f"{key} has no byte {start}") from None
            raise
        try:
            yield from body.iter_lines(chunk_size, keepends=True)
        finally:
            body.close()

    def presigned_get_url(self, key: str, *, expires_in: int, download_name: str | None = None) -> str:
        """A GET URL valid for ``expires_in`` seconds; ``download_name`` makes browsers save the file."""
        params: dict[str, str] = {"Bucket": self.bucket, "Key": key}
        if download_name:
            params["ResponseContentDisposition"] = f'attachment; filename="{download_name}"'
        url: str = self._s3.generate_presigned_url(
            "get_object", Params=params, ExpiresIn=expires_in, HttpMethod="GET"
        )
        return url

    def presigned_put_url(
        self, key: str, *, expires_in: int, metadata: Mapping[str, str] | None = None
    ) -> str:
        """A PUT URL valid for ``expires_in`` seconds (``curl -T file URL`` or ``requests.put``).

        ``metadata`` becomes signed ``x-amz-meta-*`` headers: the upload must send exactly those, so the
        holder of the URL cannot change or leave them out.
        """
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if metadata:
            params["Metadata"] = dict(metadata)
        url: str = self._s3.generate_presigned_url(
            "put_object", Params=params, ExpiresIn=expires_in, HttpMethod="PUT"
        )
        return url

    def metadata(self, key: str, *, version_id: str | None = None) -> dict[str, str]:
        """The object's user metadata (``x-amz-meta-*``, keys lower-cased)."""
        found: dict[str, str] = self.head(key, version_id=version_id).get("Metadata", {})
        return found


def _chunks(body: Any, chunk_size: int) -> Generator[bytes, None, None]:
    try:
        yield from body.iter_chunks(chunk_size)
    finally:
        body.close()
