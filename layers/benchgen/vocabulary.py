"""The words every layer shares: small enums and value types that records, the domain, the steps and the
API all name. They sit on the ground floor and import nothing of BenchGen, so a record can name a training
method or a run's sampling without importing the training or inference code that uses them.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Method(StrEnum):
    """What the learner is taught: the correct answer (SFT), or to prefer it over its own wrong one."""

    DEMONSTRATION = "demonstration"
    PREFERENCE = "preference"


class Sampling(BaseModel):
    """Sampling parameters, named once here and translated to each provider's own names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: list[str] | None = Field(default=None, max_length=4)
