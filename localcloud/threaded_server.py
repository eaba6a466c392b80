"""An HTTP server on loopback that answers on a daemon thread of its own, started and stopped as a block."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


class _QueueingHTTPServer(ThreadingHTTPServer):
    """A ThreadingHTTPServer whose listen backlog holds a burst of connections.

    socketserver listens with a backlog of 5: a burst of more connections than that overflows the kernel's
    queues, and Linux answers the overflow with a reset (its SYN cookies fail against the full accept
    queue). API Gateway queues a burst or answers 429; it never resets one, so neither may this server."""

    request_queue_size = socket.SOMAXCONN


class ThreadedServer:
    """Serves ``handler_class`` on ``host:port`` (``port=0`` picks a free one) once started."""

    def __init__(
        self, handler_class: type[BaseHTTPRequestHandler], *, host: str, port: int, name: str
    ) -> None:
        self._httpd = _QueueingHTTPServer((host, port), handler_class)
        self._httpd.daemon_threads = True
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.1}, name=self._name, daemon=True
        )
        self._thread.start()

    def wait(self) -> None:
        """Block until the server stops (a command that serves until interrupted)."""
        if self._thread is not None:
            self._thread.join()

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
