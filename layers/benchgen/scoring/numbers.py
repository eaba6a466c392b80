"""Read a number the way a careful reader of English or Turkish math answers does.

Signs ``-``, ``−`` (unicode minus) and ``–``; currency in front ($, €, ₺, £) is skipped. Fractions
``3/4`` are divided out, mixed numbers ``1 1/2`` and ``2 ½`` (or ``2½``) are added up.

Separators, as in English (``1,234.5``) and Turkish (``1.234,5``) writing:
- both ``.`` and ``,`` present: the one that comes last is the decimal separator;
- one kind repeated (``1.000.000``): thousands separators;
- one separator followed by anything but exactly three digits (``3,5``, ``3.14``), or after a ``0`` or
  more than three digits (``0,125``, ``1234.567``): decimal;
- one separator followed by exactly three digits (``1.730``, ``1,730``) is *ambiguous* on its own. The
  text around it settles it (:func:`decimal_style`): if the text writes decimals with that separator,
  it is a decimal (``2.50 ... 1.730`` is 1.73), if it writes decimals with the other one, or repeats
  this one as thousands, it is a thousands separator (``2,50 TL ... 1.730 TL`` is 1730). Only a text
  that shows no style at all keeps both readings, the thousands one first, and the gold answer decides.
"""

from __future__ import annotations

import re
from decimal import Decimal, DivisionByZero, InvalidOperation

_VULGAR = {
    "½": (1, 2),
    "⅓": (1, 3),
    "⅔": (2, 3),
    "¼": (1, 4),
    "¾": (3, 4),
    "⅕": (1, 5),
    "⅖": (2, 5),
    "⅗": (3, 5),
    "⅘": (4, 5),
    "⅙": (1, 6),
    "⅚": (5, 6),
    "⅛": (1, 8),
    "⅜": (3, 8),
    "⅝": (5, 8),
    "⅞": (7, 8),
}
_VULGAR_CLASS = "[" + "".join(_VULGAR) + "]"
NUMBER = re.compile(
    r"(?<![\w.,/])(?P<sign>(?<![\w)])[-−–])?\s?[$€₺£]?\s?"
    rf"(?:(?P<whole>\d+)(?:[ \t]+(?=\d+\s?/\s?\d)|[ \t]?(?={_VULGAR_CLASS})))?"
    r"(?:(?P<int>\d+(?:[.,\u00a0\u202f\u2009]\d+)*|[.,]\d+)(?:\s?/\s?(?P<den>\d+(?:[.,]\d+)?))?"
    rf"|(?P<vulgar>{_VULGAR_CLASS}))"
    r"(?![\d/])"
)
# The numbers that can tell a decimal style: those with a separator.
_SEPARATED = re.compile(r"(?<![\w.,/])(?:\d+(?:[.,\u00a0\u202f\u2009]\d+)*[.,]\d+|[.,]\d+)(?!\d)")
# Letters only Turkish uses among the two languages: the tie-breaker when a text's evidence conflicts.
_TURKISH = re.compile(r"[ğĞıİşŞçÇöÖüÜ₺]|\bTL\b")


def format_decimal(value: Decimal) -> str:
    """Plain notation without trailing zeros: ``Decimal("1E+3")`` -> ``1000``, ``3.50`` -> ``3.5``."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _evidence(digits: str) -> str | None:
    """The decimal separator one number proves the text uses, or None when it proves nothing."""
    dot, comma = digits.find("."), digits.find(",")
    if dot < 0 and comma < 0:
        return None
    if dot >= 0 and comma >= 0:
        return "." if digits.rfind(".") > digits.rfind(",") else ","
    sep, other = (".", ",") if dot >= 0 else (",", ".")
    head, *groups = digits.split(sep)
    if len(groups) > 1:
        # 1.000.000 repeats its thousands separator, so the other one is the decimal separator.
        return other if all(len(group) == 3 for group in groups) else None
    if len(groups[0]) != 3 or head in ("0", "") or len(head) > 3:
        return sep
    return None


def decimal_style(text: str) -> str | None:
    """The separator ``text`` uses as a decimal point, judged from its unambiguous numbers.

    Each number that can only be read one way is a vote; the majority wins. A tie is settled by the
    language's convention (a comma in Turkish, a point in English); no vote at all gives None.
    """
    votes = {".": 0, ",": 0}
    for match in _SEPARATED.finditer(text):
        sep = _evidence(match.group())
        if sep is not None:
            votes[sep] += 1
    if votes["."] == votes[","]:
        if not votes["."]:
            return None
        return "," if _TURKISH.search(text) else "."
    return "." if votes["."] > votes[","] else ","


class Style:
    """The decimal style of a text, judged the first time an ambiguous number asks for it (rarely)."""

    __slots__ = ("_separator", "_text")

    def __init__(self, text: str) -> None:
        self._text: str | None = text
        self._separator: str | None = None

    def separator(self) -> str | None:
        if self._text is not None:
            self._separator, self._text = decimal_style(self._text), None
        return self._separator


def readings(digits: str, style: Style) -> tuple[Decimal, ...]:
    """Every admissible value of a digit string with separators, the preferred reading first."""
    if digits.isdigit():
        return (Decimal(digits),)
    digits = digits.replace("\u00a0", "").replace("\u202f", "").replace("\u2009", "")
    if digits[0] in ".,":
        return (Decimal("0." + digits[1:]),)
    dots, commas = digits.count("."), digits.count(",")
    if dots and commas:
        decimal_sep = "." if digits.rfind(".") > digits.rfind(",") else ","
        thousands = "," if decimal_sep == "." else "."
        return (Decimal(digits.replace(thousands, "").replace(decimal_sep, ".")),)
    if not dots and not commas:
        return (Decimal(digits),)
    sep = "." if dots else ","
    head, *groups = digits.split(sep)
    if len(groups) > 1:
        if all(len(group) == 3 for group in groups) and len(head) <= 3:
            return (Decimal(digits.replace(sep, "")),)
        return ()
    tail = groups[0]
    as_decimal = Decimal(f"{head}.{tail}")
    if len(tail) != 3 or head == "0" or len(head) > 3:
        return (as_decimal,)
    as_thousands = Decimal(head + tail)
    separator = style.separator()
    if separator is None:
        return (as_thousands, as_decimal)
    return (as_decimal,) if separator == sep else (as_thousands,)


def read(match: re.Match[str], style: Style) -> tuple[Decimal, ...]:
    """The readings of one :data:`NUMBER` match, normalized, in a text of decimal ``style``."""
    sign, whole, digits, denominator, vulgar = match.group("sign", "whole", "int", "den", "vulgar")
    if vulgar is not None:
        top, bottom = _VULGAR[vulgar]
        values: tuple[Decimal, ...] = (Decimal(top) / Decimal(bottom),)
    else:
        values = _divided(readings(digits, style), denominator, style)
    if whole is not None:
        values = tuple(Decimal(whole) + value for value in values)
    if sign:
        values = tuple(-value for value in values)
    if len(values) == 1:
        return (values[0].normalize(),)
    return tuple(value.normalize() for value in values)


def _divided(numerators: tuple[Decimal, ...], denominator: str | None, style: Style) -> tuple[Decimal, ...]:
    if denominator is None:
        return numerators
    values: list[Decimal] = []
    for top in numerators:
        for bottom in readings(denominator, style):
            try:
                values.append(top / bottom)
            except (DivisionByZero, InvalidOperation):
                continue
    return tuple(values)


def written(match: re.Match[str]) -> str:
    """The number as written, without currency (a unicode minus becomes ``-``)."""
    text = "-" if match.group("sign") else ""
    if match.group("whole") is not None:
        text += match.group("whole") + ("" if match.group("vulgar") else " ")
    text += match.group("vulgar") or match.group("int")
    if match.group("den") is not None:
        text += "/" + match.group("den")
    return text
