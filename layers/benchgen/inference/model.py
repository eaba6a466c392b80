"""What every inference path shares: the sampling parameters, an answer, and a failed call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from benchgen.errors import BenchGenError


class Sampling(BaseModel):
    """Sampling parameters, named once here and translated to each provider's own names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=32768)
    top_p: float | None = Field(default=None, gt=0, le=1)
    stop: list[str] | None = Field(default=None, max_length=4)


@dataclass(frozen=True)
class Answer:
    """The model's text and the raw response it came in (kept for the inference log)."""

    text: str
    raw: str


class ModelCallError(BenchGenError):
    """A call to the model did not give an answer.

    ``retryable`` is true for throttling, 5xx and network failures, where the same call may succeed
    later; ``retry_after`` is the wait the provider asked for, in seconds, when it said one.
    """

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class Model(Protocol):
    """One configured model (provider, model id, sampling): answers one prompt."""

    def complete(self, prompt: str) -> Answer: ...
