"""The prompt a live model is asked for one reference case."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def prompt_for(case: Mapping[str, Any]) -> str:
    """The case's question, after its context when it has one (reading comprehension needs the passage)."""
    question = str(case.get("question") or "")
    context = case.get("context")
    if isinstance(context, str) and context:
        return f"{context}\n\nQuestion: {question}"
    return question
