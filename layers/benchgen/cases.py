"""Benchmark cases (one line of ``cases.jsonl``) and the predictions made for them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Case(BaseModel):
    """One reference case. Template-specific fields are optional here and checked by the template."""

    model_config = ConfigDict(extra="allow")

    id: str
    question: str = ""
    answer: str = ""
    solution: str | None = None
    difficulty: str | None = None
    domain: str | None = None
    # qa
    context: str | None = None
    answers: list[str] | None = None
    # routing
    route: str | None = None
    costs: dict[str, float] | None = None
    # code
    files: dict[str, str] | None = None
    test_command: str | None = None


class Prediction(BaseModel):
    """One record of ``predictions.json`` / ``predictions.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    prediction_text: str = ""
    no_answer_probability: float | None = Field(default=None, ge=0.0, le=1.0)
    route: str | None = None
    cost_usd: float | None = Field(default=None, ge=0.0)
