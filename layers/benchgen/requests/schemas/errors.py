"""The body of every error answer."""

from __future__ import annotations

from pydantic import BaseModel


class FieldProblem(BaseModel):
    """One field to fix: where it is (``body``, ``query``, ``path``), its name, and what is wrong."""

    location: str
    field: str
    message: str


class ErrorBody(BaseModel):
    """Every error answer: a sentence for people, and for invalid requests the fields to fix."""

    message: str
    errors: list[FieldProblem] = []
