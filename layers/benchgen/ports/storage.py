"""The data bucket: objects by key, with their versions and metadata, and what it says was uploaded."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Protocol

from benchgen.errors import BenchGenError
from benchgen.lazy_model import LazyModel


class MissingObject(BenchGenError):
    """An object a step needs is not in the bucket (or not at the version it expects)."""


class OutOfRange(BenchGenError):
    """A read asked to start past the end of the object."""


class UploadedObject(LazyModel):
    """An object the bucket announced as created."""

    bucket: str
    key: str  # decoded: S3 sends keys URL-encoded, with '+' for spaces
    version_id: str | None
    etag: str | None = None


class ObjectStorage(Protocol):
    """The bucket's objects; downloading an absent one, or reading its lines, raises MissingObject."""

    def download(self, key: str, path: Path, *, version_id: str | None = None) -> Path: ...
    def upload(self, path: Path, key: str, *, content_type: str = ...) -> None: ...
    def lines(self, key: str, *, start: int = ..., chunk_size: int = ...) -> Generator[bytes, None, None]: ...
    def metadata(self, key: str, *, version_id: str | None = None) -> dict[str, str]: ...

    def size(self, key: str) -> int | None:
        """The object's size in bytes, or ``None`` when there is no such object."""
        ...


class SharedStorage(ObjectStorage, Protocol):
    """The bucket as the API shares it: objects streamed whole, and short-lived URLs to get or put one."""

    def chunks(self, key: str, *, chunk_size: int = ...) -> Generator[bytes, None, None] | None:
        """The object's bytes in chunks, or ``None`` when it is absent; closing the generator early stops
        the read."""
        ...

    def presigned_get_url(self, key: str, *, expires_in: int, download_name: str | None = None) -> str:
        """A GET URL valid for ``expires_in`` seconds; ``download_name`` makes browsers save the file."""
        ...

    def presigned_put_url(
        self, key: str, *, expires_in: int, metadata: Mapping[str, str] | None = None
    ) -> str:
        """A PUT URL valid for ``expires_in`` seconds; ``metadata`` becomes headers the upload must send."""
        ...
