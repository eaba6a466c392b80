"""Per-case judgments: what scoring leaves behind for reports and for the finetune artifact."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CriterionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    passed: bool


class Verdict(BaseModel):
    """One case, judged. Written one per line to ``verdicts.jsonl`` inside ``scoring_output.zip``."""

    case_id: str
    question: str = ""
    gold: str
    prediction: str | None  # None: the model gave no (extractable) answer
    raw_prediction: str = ""
    passed: bool
    answered: bool
    near_miss: bool = False
    score: float = 0.0  # per-case credit in [0, 1] (F1 for qa, 1/0 elsewhere)
    criteria: list[CriterionResult] = Field(default_factory=list)
    difficulty: str | None = None
    domain: str | None = None
    route: str | None = None
    solution: str | None = None
    detail: str = ""
