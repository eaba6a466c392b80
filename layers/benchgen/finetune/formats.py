"""The four row formats of the artifact, written side by side from one ordered stream of examples.

- ``data/messages.jsonl``: ``{"messages": [system?, user, assistant]}`` (OpenAI-compatible chat, TRL SFT).
- ``data/prompt_completion.jsonl``: ``{"prompt", "completion"}`` (Bedrock text models, TRL prompt-completion).
- ``data/preference.jsonl``: ``{"prompt", "chosen", "rejected"}``, only where the model gave a wrong answer.
- ``data/rows.jsonl``: prompt/answer rows with full context (split, source case, run, verdict, criteria).
Every file lists train rows first, then validation, then test; ``rows.jsonl`` names each row's split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from benchgen.finetune.seed import Source
from benchgen.finetune.split import SPLITS, Split

MESSAGES = "data/messages.jsonl"
PROMPT_COMPLETION = "data/prompt_completion.jsonl"
PREFERENCE = "data/preference.jsonl"
ROWS = "data/rows.jsonl"


class Summary(Protocol):
    @property
    def passed(self) -> bool: ...
    @property
    def answered(self) -> bool: ...
    @property
    def prediction(self) -> str | None: ...


class Renderable(Protocol):
    """What the formats read of an example: ``seed.Example`` or the lean ``records.ExampleRecord``."""

    @property
    def example_id(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def source(self) -> Source: ...
    @property
    def variant(self) -> int: ...
    @property
    def input(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def rejected(self) -> str | None: ...
    @property
    def verdict(self) -> Summary | None: ...
    @property
    def criteria(self) -> Sequence[str]: ...


def messages_row(example: Renderable, split: Split) -> dict[str, Any]:
    messages = [{"role": "system", "content": example.system}] if example.system else []
    messages += [
        {"role": "user", "content": example.input},
        {"role": "assistant", "content": example.target},
    ]
    return {"messages": messages}


def prompt_completion_row(example: Renderable, split: Split) -> dict[str, Any]:
    return {"prompt": example.input, "completion": example.target}


def preference_row(example: Renderable, split: Split) -> dict[str, Any] | None:
    if example.rejected is None:
        return None
    return {"prompt": example.input, "chosen": example.target, "rejected": example.rejected}


def full_row(example: Renderable, split: Split) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": example.example_id,
        "split": split.value,
        "prompt": example.input,
        "answer": example.target,
        "system": example.system,
    }
    if example.rejected is not None:
        row["rejected"] = example.rejected
    verdict = example.verdict
    row |= {
        "case_id": example.case_id,
        "run_id": example.run_id,
        "source": example.source.value,
        "variant": example.variant,
        "verdict": None
        if verdict is None
        else {"passed": verdict.passed, "answered": verdict.answered, "prediction": verdict.prediction},
        "criteria": list(example.criteria),
    }
    return row


Renderer = Callable[[Renderable, Split], dict[str, Any] | None]
# In the zip's (sorted) member order, which is also the order of ``render``'s lines.
FORMATS: dict[str, Renderer] = {
    MESSAGES: messages_row,
    PREFERENCE: preference_row,
    PROMPT_COMPLETION: prompt_completion_row,
    ROWS: full_row,
}
_ENCODE = msgspec.json.Encoder().encode


def encode(row: dict[str, Any]) -> bytes:
    """Compact JSON, non-ASCII kept as UTF-8: the bytes ``json.dumps(row, ensure_ascii=False,
    separators=(",", ":"))`` gives, written by msgspec at a fraction of the cost."""
    return _ENCODE(row) + b"\n"


def render(example: Renderable, split: Split) -> list[bytes]:
    """The example's line in each format, in ``FORMATS`` order; b"" where a format has no row for it."""
    lines = []
    for make in FORMATS.values():
        row = make(example, split)
        lines.append(b"" if row is None else encode(row))
    return lines


@dataclass
class FileStats:
    """What the manifest records about one data file."""

    rows: int = 0
    size: int = 0
    split_rows: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in SPLITS})
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)

    def add(self, chunk: bytes, split: Split, rows: int) -> None:
        """``rows`` lines of ``split``, joined in ``chunk``."""
        self.rows += rows
        self.size += len(chunk)
        self.split_rows[split.value] += rows
        self.digest.update(chunk)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sha256": self.digest.hexdigest(),
            "rows": self.rows,
            "bytes": self.size,
            "split_rows": dict(self.split_rows),
        }
