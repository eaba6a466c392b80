"""What every inference path shares: an answer, and a failed call (the sampling parameters are a shared
word: :class:`benchgen.vocabulary.Sampling`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from benchgen.errors import BenchGenError


@dataclass(frozen=True)
class Answer:
    """The model's text and the raw response it came in (kept for the inference log), with the tokens
    the provider counted for the request and the answer, when it said.

    ``reasoning`` is what a reasoning model's provider gave apart from the text (a ``<think>`` block in
    the text stays there, as the model wrote it: scoring sets it apart); ``reasoning_tokens`` are the part
    of ``output_tokens`` the provider counted as reasoning, when it said."""

    text: str
    raw: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning: str | None = None
    reasoning_tokens: int | None = None


class ModelCallError(BenchGenError):
    """A call to the model did not give an answer.

    ``retryable`` is true for throttling, 5xx and network failures, where the same call may succeed
    later; ``throttled`` says the provider refused it for the rate (a 429, a ThrottlingException), which
    slows the run rather than failing the case; ``retry_after`` is the wait the provider asked for, in
    seconds, when it said one.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        throttled: bool = False,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable or throttled
        self.retry_after = retry_after
        self.throttled = throttled


class Model(Protocol):
    """One configured model (provider, model id, sampling): answers one prompt."""

    def complete(self, prompt: str) -> Answer: ...
