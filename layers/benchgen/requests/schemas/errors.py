"""The body of every error answer."""

from __future__ import annotations

from pydantic import Field

from benchgen.lazy_model import LazyModel


class FieldProblem(LazyModel):
    """One field to fix: where it is (``body``, ``query``, ``path``), its name, and what is wrong."""

    location: str
    field: str
    message: str


class ErrorBody(LazyModel):
    """Every error answer: a sentence for people, and for invalid requests the fields to fix."""

    message: str
    # Field() rather than a bare [], which the linter takes for a class attribute shared by every instance.
    errors: list[FieldProblem] = Field(default=[])
