"""The human name a generated dataset carries: ``<benchmark> · <model> · <score %> · <Mon YYYY>``."""

from __future__ import annotations

import math
from datetime import date
from decimal import ROUND_HALF_UP, Decimal

# Spelled out rather than taken from strftime("%b"), whose output follows the process locale.
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def format_percent(score: float | None) -> str:
    """A fraction in [0, 1] as a percentage with one decimal (``0.725`` -> ``72.5%``); ``None`` -> ``n/a``."""
    if score is None or math.isnan(score):
        return "n/a"
    if not 0.0 <= score <= 1.0:
        raise ValueError(f"an overall score must be a fraction between 0 and 1, got {score}")
    # Decimal of the shortest repr, so 0.725 rounds half up to 72.5 instead of binary-float 72.49999...
    percent = (Decimal(repr(score)) * 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{percent}%"


def month_label(when: date) -> str:
    """``Jun 2026``, the same in every locale."""
    return f"{_MONTHS[when.month - 1]} {when.year}"


def dataset_name(benchmark: str, model: str, score: float | None, when: date) -> str:
    """E.g. ``GSM8K · Qwen2.5-7B-LoRA · 72.5% · Jun 2026``."""
    return " · ".join((benchmark.strip(), model.strip(), format_percent(score), month_label(when)))
