"""A training run's record and its package's rows as the tests build them: train, validation, and the
held-out case's row that a package carries and that must never be uploaded."""

from __future__ import annotations

import json
from typing import Any

from benchgen.records.training_runs import TrainingRunRecord
from benchgen.vocabulary import Method

HELD_OUT_QUESTION = "A train has 3 cars with 12 seats each. How many seats are there?"


def conversation_row(prompt: str, answer: str) -> bytes:
    """One bedrock-conversation row of ``prompt`` answered with ``answer``, as a JSON line."""
    row = {
        "schemaVersion": "bedrock-conversation-2024",
        "messages": [
            {"role": "user", "content": [{"text": prompt}]},
            {"role": "assistant", "content": [{"text": answer}]},
        ],
    }
    return (json.dumps(row) + "\n").encode()


TRAIN = b"".join(conversation_row(f"What is {n} plus {n}?", f"{2 * n}") for n in range(1, 11))
VALIDATION = b"".join(conversation_row(f"What is {n} times 3?", f"{3 * n}") for n in range(1, 4))
TEST = conversation_row(HELD_OUT_QUESTION, "36")


def training_run(**changes: Any) -> TrainingRunRecord:
    """A demonstration training run of alice's on an openai-compatible connection, with ``changes``."""
    fields: dict[str, Any] = {
        "training_run_id": "train-1",
        "owner": "alice",
        "connection_id": "conn-1",
        "provider": "openai-compatible",
        "package_id": "pkg-1",
        "package_sha256": "ab" * 32,
        "package_profile": "openai-chat",
        "preparation_id": "prep-1",
        "environment_id": "gsm8k",
        "environment_version": "v1",
        "method": Method.DEMONSTRATION,
        "base_model": "base-7b",
        "base_model_source": "package",
        "job_name": "train-1",
    }
    return TrainingRunRecord(**(fields | changes))
