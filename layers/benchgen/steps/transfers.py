"""Many small objects moved at once: a live run writes one file per shard at Plan and reads one per shard
at Assemble, and one request after another (tens of milliseconds each on S3) would make those steps grow
with the run past their functions' time. A bounded number go at once, so the disk holds a bounded number
of them, and reads come back in order."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from benchgen.ports.storage import ObjectStorage

AT_ONCE = 16


class Uploads:
    """Context manager: ``put`` uploads a file in the background (then deletes it); at most ``at_once``
    wait at a time, and leaving waits for all of them, raising the first failure."""

    def __init__(self, store: ObjectStorage, *, at_once: int = AT_ONCE) -> None:
        self._store = store
        self._at_once = at_once
        self._pool = ThreadPoolExecutor(max_workers=at_once, thread_name_prefix="upload")
        self._pending: deque[Future[None]] = deque()

    def __enter__(self) -> Uploads:
        return self

    def put(self, path: Path, key: str, *, content_type: str) -> None:
        while len(self._pending) >= self._at_once:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(self._upload, path, key, content_type))

    def _upload(self, path: Path, key: str, content_type: str) -> None:
        self._store.upload(path, key, content_type=content_type)
        path.unlink()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            while self._pending:
                self._pending.popleft().result()
        finally:
            self._pool.shutdown(wait=True, cancel_futures=True)


def downloads(
    store: ObjectStorage, keys: Iterable[str], workdir: Path, *, ahead: int = AT_ONCE
) -> Iterator[Path]:
    """Each key's object as a file, in the keys' order, up to ``ahead`` fetched before they are wanted;
    a file is deleted once the caller asks for the next."""
    with ThreadPoolExecutor(max_workers=ahead, thread_name_prefix="download") as pool:
        pending: deque[Future[Path]] = deque()
        numbered = enumerate(keys)

        def fetch_more() -> None:
            for number, key in numbered:
                pending.append(pool.submit(store.download, key, workdir / f"download-{number:06d}"))
                if len(pending) >= ahead:
                    return

        fetch_more()
        while pending:
            path = pending.popleft().result()
            fetch_more()
            try:
                yield path
            finally:
                path.unlink(missing_ok=True)
