"""Errors a user can act on: each names what was wrong and what to do about it."""

from __future__ import annotations

from typing import Any


class BenchGenError(Exception):
    """Base of every error whose message is meant for the user."""

    # How each program that ran before the error ended (benchgen.records.programs.ProgramOutcome, which
    # this ground module does not know), for the run record: the traceback that explains a run's failure
    # is most often in one of them.
    programs: tuple[Any, ...] = ()


class BundleError(BenchGenError):
    """An environment bundle is unusable; names the file and, where known, the field."""

    def __init__(self, file: str, message: str, field: str | None = None) -> None:
        self.file = file
        self.field = field
        where = f"{file}: {field}" if field else file
        super().__init__(f"{where}: {message}")


class SubmissionError(BenchGenError):
    """A submission cannot be turned into a prediction output."""


class ScoringError(BenchGenError):
    """Scoring could not produce scores (the run fails with this message)."""


class Unsupported(BenchGenError):
    """A request a connection (or its provider) cannot serve; says what would be accepted instead."""


def too_deep() -> str:
    """How every parser words a document nested past what Python can decode (it raises RecursionError).

    Real data is never nested that deep; a document that is was made to break the reader.
    """
    return (
        "is nested too deeply (lists or objects inside each other about a thousand levels or more); "
        "write it with less nesting"
    )
