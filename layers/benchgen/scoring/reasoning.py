"""What of a model's completion is its answer: the text after its reasoning block.

A reasoning model writes ``<think> ... </think>`` before answering; only the text after the last
``</think>`` is judged (a chat template may open the block in the prompt, so the completion can hold the
closing tag alone). A completion that opens a block and never closes it was cut off while reasoning: it has
no answer at all, which the reward scores 0 whatever the template would make of an empty answer.

Standard library only: the standalone grader is built from this module's source.
"""

from __future__ import annotations

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"


def split_completion(completion: str) -> tuple[str | None, str | None]:
    """``(reasoning, answer)`` of a completion: the reasoning None when it has no block; the answer None
    when it was cut off inside its block. The reasoning is the block's text without its tags."""
    closed = completion.rfind(THINK_CLOSE)
    opened = completion.find(THINK_OPEN)
    if closed >= 0:
        start = opened + len(THINK_OPEN) if 0 <= opened < closed else 0
        return completion[start:closed].strip(), completion[closed + len(THINK_CLOSE) :]
    if opened >= 0:
        return completion[opened + len(THINK_OPEN) :].strip(), None
    return None, completion


def answer_text(completion: str | None) -> str | None:
    """The part of ``completion`` that is judged; None when there is no answer to judge (no completion, or
    one cut off inside its reasoning block)."""
    if completion is None:
        return None
    if not isinstance(completion, str):
        raise TypeError(
            f"a completion is a string of the model's output, not {type(completion).__name__}: "
            "pass the generated text (for a chat message, its content)"
        )
    return split_completion(completion)[1]
