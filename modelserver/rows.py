"""The training rows this server takes: JSON Lines of conversations, ``{"messages": [system?, user,
assistant, ...]}`` ending with the assistant's turn, as BenchGen's openai-chat and together-sft packages
write them. A row that is not one is refused by its line number, before any training starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROLES = ("system", "user", "assistant")


class BadRows(ValueError):
    """A training file with a row the trainer cannot use; the message names the file and the line."""


def read_rows(path: Path, name: str) -> list[dict[str, Any]]:
    """The conversations of the JSONL file at ``path`` (uploaded as ``name``)."""
    rows = []
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            rows.append({"messages": _messages(raw, f"line {number} of {name}")})
    if not rows:
        raise BadRows(f"{name} holds no rows: upload one JSON object a line, each with a messages list")
    return rows


def _messages(raw: bytes, where: str) -> list[dict[str, str]]:
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
    if messages[-1]["role"] != "assistant":
        raise BadRows(f"{where} ends with a {messages[-1]['role']} turn: end each row with the assistant's")
    return [{"role": m["role"], "content": m["content"]} for m in messages]
