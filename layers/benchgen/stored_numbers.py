"""The numbers a record can store: DynamoDB keeps 38 significant digits, magnitudes from 1e-130 to below
1e126, and 0. Requests are refused a number it cannot keep, rather than a write failing later."""

from __future__ import annotations

from pydantic import AfterValidator

SMALLEST_STORED_NUMBER = 1e-130


def storable(value: float) -> float:
    """``value`` if DynamoDB can store it: 0, or a magnitude of at least 1e-130 (floats never reach 1e126
    within the bounds requests keep to)."""
    if value != 0 and abs(value) < SMALLEST_STORED_NUMBER:
        raise ValueError(
            f"must be 0 or at least {SMALLEST_STORED_NUMBER:g} in magnitude, the smallest number that can be "
            "stored: send 0 instead"
        )
    return value


# Last in a float's Annotated, after its bounds: before them it would hide them from the JSON schema.
Storable = AfterValidator(storable)
