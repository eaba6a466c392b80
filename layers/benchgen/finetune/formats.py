"""The four row formats of the artifact, written side by side from one ordered stream of examples.

- ``data/messages.jsonl``: ``{"messages": [system?, user, assistant]}`` (OpenAI-compatible chat, TRL SFT).
- ``data/prompt_completion.jsonl``: ``{"prompt", "completion"}`` (Bedrock text models, TRL prompt-completion).
- ``data/preference.jsonl``: ``{"prompt", "chosen", "rejected"}``, only where the model gave a wrong answer.
- ``data/rows.jsonl``: prompt/answer rows with full context (split, source case, run, verdict, criteria).
Every file lists train rows first, then validation, then test; ``rows.jsonl`` names each row's split.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from benchgen.finetune.seed import Example
from benchgen.finetune.split import SPLITS, Split

MESSAGES = "data/messages.jsonl"
PROMPT_COMPLETION = "data/prompt_completion.jsonl"
PREFERENCE = "data/preference.jsonl"
ROWS = "data/rows.jsonl"


def messages_row(example: Example, split: Split) -> dict[str, Any]:
    messages = [{"role": "system", "content": example.system}] if example.system else []
    messages += [
        {"role": "user", "content": example.input},
        {"role": "assistant", "content": example.target},
    ]
    return {"messages": messages}


def prompt_completion_row(example: Example, split: Split) -> dict[str, Any]:
    return {"prompt": example.input, "completion": example.target}


def preference_row(example: Example, split: Split) -> dict[str, Any] | None:
    if example.rejected is None:
        return None
    return {"prompt": example.input, "chosen": example.target, "rejected": example.rejected}


def full_row(example: Example, split: Split) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": example.example_id,
        "split": split.value,
        "prompt": example.input,
        "answer": example.target,
        "system": example.system,
    }
    if example.rejected is not None:
        row["rejected"] = example.rejected
    row |= {
        "case_id": example.case_id,
        "run_id": example.run_id,
        "source": example.source.value,
        "variant": example.variant,
        "verdict": example.verdict.model_dump() if example.verdict else None,
        "criteria": list(example.criteria),
    }
    return row


Renderer = Callable[[Example, Split], dict[str, Any] | None]
FORMATS: dict[str, Renderer] = {
    MESSAGES: messages_row,
    PROMPT_COMPLETION: prompt_completion_row,
    PREFERENCE: preference_row,
    ROWS: full_row,
}


def encode(row: dict[str, Any]) -> bytes:
    return (json.dumps(row, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


@dataclass
class FileStats:
    """What the manifest records about one data file."""

    rows: int = 0
    size: int = 0
    split_rows: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in SPLITS})
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)

    def add(self, line: bytes, split: Split) -> None:
        self.rows += 1
        self.size += len(line)
        self.split_rows[split.value] += 1
        self.digest.update(line)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sha256": self.digest.hexdigest(),
            "rows": self.rows,
            "bytes": self.size,
            "split_rows": dict(self.split_rows),
        }


def write_formats(ordered: Iterable[tuple[Split, Example]], root: Path) -> dict[str, FileStats]:
    """Write every format under ``root`` (``root/data/messages.jsonl``, ...) from examples in order."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    stats = {name: FileStats() for name in FORMATS}
    handles: dict[str, BinaryIO] = {}
    try:
        for name in FORMATS:
            handles[name] = (root / name).open("wb")
        for split, example in ordered:
            for name, render in FORMATS.items():
                row = render(example, split)
                if row is None:
                    continue
                line = encode(row)
                handles[name].write(line)
                stats[name].add(line, split)
    finally:
        for handle in handles.values():
            handle.close()
    return stats
