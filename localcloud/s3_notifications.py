"""S3 event notifications on moto, sent when and as S3 sends them.

moto sends them from inside the request, before it stores the object's metadata; S3 notifies about an
object once it is stored. While :class:`S3Notifications` is active, the notifications a request causes are
held back until that request has finished (``S3Response.key_response`` / ``bucket_response``), and the
events of a versioned bucket carry the ``versionId`` of the object version they announce. A multipart
upload is announced once, by ``ObjectCreated:CompleteMultipartUpload``, as S3 announces it: moto completes
it by storing the object through its ``put_object`` (which sends ``ObjectCreated:Put``) and tagging it
(``ObjectTagging:Put``), so every event but the completion's is dropped while moto completes the upload.
The methods replaced are private to moto (pinned for this reason).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from localcloud.patches import Patch, Patches


class S3Notifications(Patches):
    """Context manager: while active, moto's S3 notifies as S3 does."""

    def __init__(self) -> None:
        super().__init__()
        self._requests = _Requests()

    def declare(self) -> Iterator[Patch]:
        from moto.s3 import notifications
        from moto.s3.models import S3Backend
        from moto.s3.responses import S3Response

        requests = self._requests
        completion = notifications.S3NotificationEvent.OBJECT_CREATED_COMPLETE_MULTIPART_UPLOAD_EVENT

        def send_event(original: Callable[..., None]) -> Callable[..., None]:
            def held(account_id: str, event_name: Any, bucket: Any, key: Any) -> None:
                if requests.completing_multipart and event_name != completion:
                    return
                requests.defer(lambda: original(account_id, event_name, bucket, key))

            return held

        def complete_multipart_upload(original: Callable[..., Any]) -> Callable[..., Any]:
            def completing(backend: Any, *args: Any, **kwargs: Any) -> Any:
                with requests.multipart_completion():
                    return original(backend, *args, **kwargs)

            return completing

        def s3_event(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
            def versioned(event_name: str, bucket: Any, key: Any, notification_id: str) -> dict[str, Any]:
                event = original(event_name, bucket, key, notification_id)
                if bucket.is_versioned:
                    for record in event["Records"]:
                        record["s3"]["object"]["versionId"] = key.version_id
                return event

            return versioned

        def finishing_notifications(response: Callable[..., Any]) -> Callable[..., Any]:
            def respond(*args: Any, **kwargs: Any) -> Any:
                return requests.run(lambda: response(*args, **kwargs))

            return respond

        yield Patch.wrapping(notifications, "send_event", send_event)
        yield Patch.wrapping(S3Backend, "complete_multipart_upload", complete_multipart_upload)
        yield Patch.wrapping(notifications, "_get_s3_event", s3_event)
        yield Patch.wrapping(S3Response, "key_response", finishing_notifications)
        yield Patch.wrapping(S3Response, "bucket_response", finishing_notifications)


class _Requests:
    """Holds back the S3 notifications a request causes until that request has finished.

    Per thread, because moto serves concurrent requests on concurrent threads; nested calls (a
    bucket-or-key request delegating to the other) flush once, at the outermost.
    """

    def __init__(self) -> None:
        self._local = threading.local()

    def run(self, request: Callable[[], Any]) -> Any:
        state = self._local
        state.depth = getattr(state, "depth", 0) + 1
        if state.depth == 1:
            state.deferred = []
        try:
            return request()
        finally:
            state.depth -= 1
            if state.depth == 0:
                deferred, state.deferred = state.deferred, []
                for send in deferred:
                    send()

    @property
    def completing_multipart(self) -> bool:
        """This thread is inside moto's completion of a multipart upload."""
        return bool(getattr(self._local, "completing", False))

    @contextmanager
    def multipart_completion(self) -> Iterator[None]:
        self._local.completing = True
        try:
            yield
        finally:
            self._local.completing = False

    def defer(self, send: Callable[[], None]) -> None:
        if getattr(self._local, "depth", 0):
            self._local.deferred.append(send)
        else:
            send()
