"""Documented hyperparameters: their types and ranges, and the check that turns values into the strings a
provider job is sent."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from benchgen.errors import Unsupported


@dataclass(frozen=True)
class Hyperparameter:
    """One documented hyperparameter: its type, and the inclusive range the provider accepts."""

    kind: type[int] | type[float] | type[bool]
    low: float | None = None
    high: float | None = None

    def describe(self, name: str) -> str:
        if self.kind is bool:
            return f"{name} (true or false)"
        kind = "integer" if self.kind is int else "number"
        if self.low is not None and self.low == self.high:
            return f"{name} ({kind}, only {_number(self.low)})"
        if self.high is None:
            return f"{name} ({kind} from {_number(self.low)})"
        return f"{name} ({kind} from {_number(self.low)} to {_number(self.high)})"


def _number(value: float | None) -> str:
    return "any" if value is None else f"{value:g}"


Hyperparameters = Mapping[str, Hyperparameter]


def check_named(
    provider: str, base_model: str, accepted: Hyperparameters, values: Mapping[str, str | int | float]
) -> dict[str, str]:
    """``values`` checked against the names and ranges ``provider`` documents for ``base_model``, as
    strings. Raises :class:`Unsupported` naming every problem and the accepted names and ranges."""
    checked: dict[str, str] = {}
    problems: list[str] = []
    for name, value in values.items():
        spec = accepted.get(name)
        if spec is None:
            problems.append(f"{name} is not one of its hyperparameters")
            continue
        text = _checked_value(spec, value)
        if text is None:
            problems.append(f"{name}={value!r} is outside {spec.describe(name)}")
        else:
            checked[name] = text
    if problems:
        names = "; ".join(spec.describe(name) for name, spec in accepted.items())
        raise Unsupported(
            f"{'; '.join(problems)}. For base model {base_model} {provider} accepts: {names}: "
            "fix the hyperparameters, or leave them out to take the provider's defaults"
        )
    return checked


def _checked_value(spec: Hyperparameter, value: str | int | float) -> str | None:
    """``value`` written as the provider reads it, or None when it is not of ``spec``'s type and range."""
    if spec.kind is bool:
        if isinstance(value, bool):
            return "true" if value else "false"
        text = str(value).strip().lower()
        return text if text in ("true", "false") else None
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(number):
        return None
    if spec.kind is int:
        if not number.is_integer():
            return None
        number = int(number)
    if (spec.low is not None and number < spec.low) or (spec.high is not None and number > spec.high):
        return None
    return str(int(number)) if spec.kind is int else repr(float(number))


def typed(accepted: Hyperparameters, values: Mapping[str, str]) -> dict[str, object]:
    """Checked string hyperparameters back as JSON values, for providers that take typed fields."""
    result: dict[str, object] = {}
    for name, text in values.items():
        kind = accepted[name].kind
        if kind is bool:
            result[name] = text == "true"
        elif kind is int:
            result[name] = int(text)
        else:
            result[name] = float(text)
    return result
