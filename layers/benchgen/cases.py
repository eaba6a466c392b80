"""Benchmark cases (one line of ``cases.jsonl``) and the predictions made for them.

Each exists twice: a pydantic model that validates what comes in (a bundle's line, a submission's record)
and says what is wrong, and a plain record (a msgspec Struct) that the per-case loop carries, a million
times over, at a fraction of a model's cost. :func:`case_record` and :func:`prediction_record` go from one
to the other; a line that decodes straight into a record is one the model accepts with the same values.
"""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from pydantic import BaseModel, ConfigDict, Field


class CaseModel(BaseModel):
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


class Case(msgspec.Struct, kw_only=True):
    """A validated case, as the templates read it; ``criteria`` is the case's own list of criterion ids."""

    id: str
    question: str = ""
    answer: str = ""
    solution: str | None = None
    difficulty: str | None = None
    domain: str | None = None
    context: str | None = None
    answers: list[str] | None = None
    route: str | None = None
    costs: dict[str, float] | None = None
    files: dict[str, str] | None = None
    test_command: str | None = None
    criteria: Any = None


def case_record(model: CaseModel) -> Case:
    return Case(
        id=model.id,
        question=model.question,
        answer=model.answer,
        solution=model.solution,
        difficulty=model.difficulty,
        domain=model.domain,
        context=model.context,
        answers=model.answers,
        route=model.route,
        costs=model.costs,
        files=model.files,
        test_command=model.test_command,
        criteria=(model.model_extra or {}).get("criteria"),
    )


class PredictionModel(BaseModel):
    """One record of ``predictions.json`` / ``predictions.jsonl``."""

    model_config = ConfigDict(extra="ignore")

    id: str
    prediction_text: str = ""
    no_answer_probability: float | None = Field(default=None, ge=0.0, le=1.0)
    route: str | None = None
    cost_usd: float | None = Field(default=None, ge=0.0)


class Prediction(msgspec.Struct, kw_only=True):
    """A validated prediction, as the templates read it."""

    id: str
    prediction_text: str = ""
    no_answer_probability: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] | None = None
    route: str | None = None
    cost_usd: Annotated[float, msgspec.Meta(ge=0.0)] | None = None


def prediction_record(model: PredictionModel) -> Prediction:
    return Prediction(
        id=model.id,
        prediction_text=model.prediction_text,
        no_answer_probability=model.no_answer_probability,
        route=model.route,
        cost_usd=model.cost_usd,
    )


# msgspec writes floats from 1e16 up as 1e16 where pydantic writes 1e+16 (a cost can be that large).
_EXPONENT_FROM = 1e16


def prediction_json(prediction: Prediction) -> str:
    """The record as ingest writes it into the prediction output: ``PredictionModel.model_dump_json(
    exclude_none=True)``, byte for byte."""
    if prediction.cost_usd is not None and prediction.cost_usd >= _EXPONENT_FROM:
        model = PredictionModel.model_validate(msgspec.structs.asdict(prediction))
        return model.model_dump_json(exclude_none=True)
    record: dict[str, object] = {"id": prediction.id, "prediction_text": prediction.prediction_text}
    for name in ("no_answer_probability", "route", "cost_usd"):
        value = getattr(prediction, name)
        if value is not None:
            record[name] = value
    return msgspec.json.encode(record).decode("utf-8")
