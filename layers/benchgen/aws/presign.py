"""The data bucket as the API uses it: short-lived presigned URLs, object sizes and streamed reads."""

from __future__ import annotations

from collections.abc import Generator
from typing import IO, Any

from botocore.exceptions import ClientError

from benchgen.aws import clients


def presign_get_url(
    bucket: str, key: str, *, expires_in: int, download_name: str | None = None, s3: Any = None
) -> str:
    """A GET URL valid for ``expires_in`` seconds; ``download_name`` makes browsers save the file."""
    params: dict[str, str] = {"Bucket": bucket, "Key": key}
    if download_name:
        params["ResponseContentDisposition"] = f'attachment; filename="{download_name}"'
    url: str = (s3 or clients.s3()).generate_presigned_url(
        "get_object", Params=params, ExpiresIn=expires_in, HttpMethod="GET"
    )
    return url


def presign_put_url(bucket: str, key: str, *, expires_in: int, s3: Any = None) -> str:
    """A PUT URL valid for ``expires_in`` seconds (``curl -T file URL`` or ``requests.put``)."""
    url: str = (s3 or clients.s3()).generate_presigned_url(
        "put_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=expires_in, HttpMethod="PUT"
    )
    return url


def object_size(bucket: str, key: str, *, s3: Any = None) -> int | None:
    """The object's size in bytes, or ``None`` when there is no such object."""
    try:
        head = (s3 or clients.s3()).head_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in {"404", "NoSuchKey", "NotFound"}:
            return None
        raise
    size: int = head["ContentLength"]
    return size


def iter_object(
    bucket: str, key: str, *, chunk_size: int = 1 << 20, s3: Any = None
) -> Generator[bytes, None, None] | None:
    """The object's bytes in chunks (memory stays flat whatever its size), or ``None`` when it is absent.

    Closing the generator early (``contextlib.closing``) releases the connection at once.
    """
    try:
        body = (s3 or clients.s3()).get_object(Bucket=bucket, Key=key)["Body"]
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in {"404", "NoSuchKey"}:
            return None
        raise
    return _chunks(body, chunk_size)


def _chunks(body: Any, chunk_size: int) -> Generator[bytes, None, None]:
    try:
        yield from body.iter_chunks(chunk_size)
    finally:
        body.close()


def download_object(bucket: str, key: str, target: IO[bytes], *, s3: Any = None) -> bool:
    """Stream the object into ``target``; ``False`` (and nothing written) when it is absent."""
    chunks = iter_object(bucket, key, s3=s3)
    if chunks is None:
        return False
    for chunk in chunks:
        target.write(chunk)
    return True
