"""The library's log lines, in-process, written under the function that is running.

On AWS, POWERTOOLS_SERVICE_NAME names the function, and the library's child loggers
(``Logger(child=True)``, named ``<service>.<module>``) write through that function's logger: its JSON
format, service, function name and correlation id. In-process that variable is unset (the functions
share one environment), so the child loggers hang under ``service_undefined``, where no function's logger
is, and their lines (a run's transitions among them) vanish. While ``FunctionLogs`` is active, their
records are handed to the logger of the function running on the same thread.
"""

from __future__ import annotations

import logging
import os
from types import TracebackType

from localcloud.callers import running_service

# What powertools names a logger when POWERTOOLS_SERVICE_NAME is unset.
UNNAMED_SERVICE = "service_undefined"


def library_logger() -> logging.Logger:
    """The logger the library's child loggers hang under in-process."""
    return logging.getLogger(os.environ.get("POWERTOOLS_SERVICE_NAME", UNNAMED_SERVICE))


class FunctionLogs(logging.Handler):
    """Context manager: forwards the library's records to the running function's logger."""

    def __init__(self) -> None:
        super().__init__()
        self._library = library_logger()

    def __enter__(self) -> FunctionLogs:
        self._library.addHandler(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._library.removeHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        service = running_service()
        if service is None:
            return
        function = logging.getLogger(service)
        if not function.isEnabledFor(record.levelno):
            return
        for handler in function.handlers:
            if record.levelno >= handler.level:
                handler.handle(record)
