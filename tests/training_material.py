"""Rows of a training package as the tests build them: train, validation, and the held-out case's row that a
package carries and that must never be uploaded."""

from __future__ import annotations

import json

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
