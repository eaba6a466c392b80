"""The training rows this server takes, JSON Lines refused by their line number before any training starts.

- Demonstration (SFT): ``{"messages": [system?, user, assistant, ...]}`` ending with the assistant's turn, as
  BenchGen's openai-chat and together-sft packages write them.
- Reinforcement (GRPO): OpenAI's reinforcement fine-tuning rows, ``{"messages": [system?, user, ...]}``
  ending with the user's turn (the model writes the answer), every other key of the row being the *item*
  the grader reads (``item["grading"]`` in BenchGen's openai-rft package).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROLES = ("system", "user", "assistant")
SFT = "sft"
REINFORCEMENT = "reinforcement"
# The turn each method's rows end with: SFT learns the assistant's, reinforcement samples it.
_LAST = {SFT: "assistant", REINFORCEMENT: "user"}


class BadRows(ValueError):
    """A training file with a row the trainer cannot use; the message names the file and the line."""


def read_rows(path: Path, name: str, method: str = SFT) -> list[dict[str, Any]]:
    """The rows of the JSONL file at ``path`` (uploaded as ``name``) for ``method``: ``{"messages"}`` for
    SFT; ``{"prompt", "item"}`` for reinforcement, ``item`` being the whole row as JSON text (the grader's
    ``item``; text, so that rows whose items differ in shape make one dataset column)."""
    rows = []
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            row, messages = _messages(raw, f"line {number} of {name}", method)
            if method == REINFORCEMENT:
                rows.append({"prompt": messages, "item": json.dumps(row)})
            else:
                rows.append({"messages": messages})
    if not rows:
        raise BadRows(f"{name} holds no rows: upload one JSON object a line, each with a messages list")
    return rows


def _messages(raw: bytes, where: str, method: str) -> tuple[dict[str, Any], list[dict[str, str]]]:
    try:
        row = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise BadRows(f"{where} is not JSON ({error}): write one JSON object a line") from None
    if isinstance(row, dict) and "preferred_output" in row:
        raise BadRows(
            f"{where} is a preference row: preference (dpo) training is not supported by this server; "
            "send demonstration (sft) rows with a messages list"
        )
    messages = row.get("messages") if isinstance(row, dict) else None
    if not isinstance(messages, list) or not messages:
        raise BadRows(f'{where} has no messages list: write {{"messages": [{{"role", "content"}}, ...]}}')
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise BadRows(f"{where}: messages[{index}] needs a role, one of {', '.join(ROLES)}")
        if not isinstance(message.get("content"), str):
            raise BadRows(f"{where}: messages[{index}] needs its content as a string")
    last = messages[-1]["role"]
    if last != _LAST[method]:
        if method == REINFORCEMENT:
            raise BadRows(
                f"{where} ends with the {last}'s turn: end each reinforcement row with the user's (the "
                "model writes the answer the grader scores)"
            )
        raise BadRows(f"{where} ends with a {last} turn: end each row with the assistant's")
    return row, [{"role": m["role"], "content": m["content"]} for m in messages]
