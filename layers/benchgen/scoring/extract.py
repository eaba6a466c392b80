"""Find the final answer in a model's free-form math output and read it as a number.

Where the answer is (first rule that applies wins):
1. the last ``\\boxed{...}`` (nested braces allowed);
2. the text after the last ``####`` (GSM8K style);
3. the text after the last answer marker: "Final answer:", "The answer is", "Answer:", "Cevap:",
   "Yanıt:", "Sonuç:", "Doğru cevap", "Sonuç olarak cevap", "Yani cevap" (case-insensitive, markdown
   emphasis allowed around it; the bare words "answer", "cevap", "yanıt", "sonuç" need a colon);
4. otherwise the last number anywhere in the text. This is the *lenient* fallback.
Within a boxed, ``####`` or marker segment the first number is the answer; a segment with no number is a
textual answer (for non-numeric gold answers such as "B").

How a number is read: signs ``-``, ``−`` (unicode minus) and ``–``; currency and units around it ($, €, ₺,
TL, %, "dollars", "km") are ignored; fractions ``3/4`` and LaTeX ``\\frac{3}{4}`` are divided out.
Separators, as in English (``1,234.5``) and Turkish (``1.234,5``) writing:
- both ``.`` and ``,`` present: the one that comes last is the decimal separator;
- one kind repeated (``1.000.000``): thousands separators;
- one separator followed by anything but exactly three digits (``3,5``, ``3.14``): decimal;
- one separator followed by exactly three digits (``1.000``, ``2,125``) is *ambiguous*. It is read as
  thousands, unless the integer part is ``0`` or longer than three digits (then decimal), or the rest
  of the text uses that separator as a decimal point elsewhere (e.g. ``3.5`` next to ``2.125``). The
  other reading is kept in :attr:`Extracted.values` so a comparison with the gold answer can accept it:
  the gold answer decides what an ambiguous answer meant.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, DivisionByZero, InvalidOperation
from typing import Literal

Source = Literal["boxed", "hashes", "marker", "last_number"]

_SEPARATORS = ".,\u00a0\u202f\u2009"
_NUMBER = re.compile(
    r"(?<![\w.,/])(?P<sign>(?<![\w)])[-−–])?\s?[$€₺£]?\s?"
    r"(?P<int>\d+(?:[.,\u00a0\u202f\u2009]\d+)*|[.,]\d+)"
    r"(?:\s?/\s?(?P<den>\d+(?:[.,]\d+)?))?"
    r"(?![\d/])"
)
_MARKER = re.compile(
    r"(?:\b(?:final\s+answer(?:\s+is)?|answer\s+is|doğru\s+cevap(?:\s+ise)?"
    r"|(?:sonuç\s+olarak|yani|dolayısıyla|bu\s+yüzden|o\s+halde),?\s+(?:cevap|yanıt))\b"
    r"|\b(?:answer|cevap|cevab[ıi]|yanıt[ıi]?|sonuç)\s*(?:\*\*|__)?\s*[:：])"
    r"\s*(?:\*\*|__)?\s*[:：=]?",
    re.IGNORECASE,
)
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SPACE = re.compile(r"(?<=\d)\\[,;!]\s?(?=\d)")
_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|mathbf|textbf)\s*\{([^{}]*)\}")


@dataclass(frozen=True)
class Extracted:
    """A final answer: ``text`` as written, ``value`` its number (None for a textual answer).

    ``values`` lists every admissible reading, the preferred one first (two for an ambiguous separator).
    ``lenient`` is True when no final-answer marker was found and the last number was taken.
    """

    text: str
    value: Decimal | None
    values: tuple[Decimal, ...]
    source: Source

    @property
    def lenient(self) -> bool:
        return self.source == "last_number"


def format_decimal(value: Decimal) -> str:
    """Plain notation without trailing zeros: ``Decimal("1E+3")`` -> ``1000``, ``3.50`` -> ``3.5``."""
    text = format(value.normalize(), "f")
    return "0" if text in ("-0", "") else text


def _decimal_style(text: str) -> str | None:
    """The separator the text itself uses as a decimal point, judged from unambiguous numbers."""
    for match in _NUMBER.finditer(text):
        digits = match.group("int")
        if "." in digits and "," in digits:
            return "." if digits.rfind(".") > digits.rfind(",") else ","
        for sep in ".,":
            parts = digits.split(sep)
            if len(parts) == 2 and len(parts[1]) != 3:
                return sep
    return None


def _readings(digits: str, style: str | None) -> tuple[Decimal, ...]:
    """Every admissible value of a digit string with separators, the preferred reading first."""
    for space in "\u00a0\u202f\u2009":
        digits = digits.replace(space, "")
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
    if style == sep:
        return (as_decimal, as_thousands)
    return (as_thousands, as_decimal)


def _read(match: re.Match[str], style: str | None) -> tuple[Decimal, ...]:
    negative = -1 if match.group("sign") else 1
    numerators = _readings(match.group("int"), style)
    denominator = match.group("den")
    if denominator is None:
        return tuple(negative * value for value in numerators)
    values: list[Decimal] = []
    for top in numerators:
        for bottom in _readings(denominator, style):
            try:
                values.append(negative * top / bottom)
            except (DivisionByZero, InvalidOperation):
                continue
    return tuple(values)


def parse_number(text: str, *, context: str = "") -> tuple[Decimal, ...]:
    """Readings of the first number in ``text`` (empty when there is none); ``context`` sets the style."""
    style = _decimal_style(context or text)
    for match in _NUMBER.finditer(_unlatex(text)):
        values = _read(match, style)
        if values:
            return tuple(value.normalize() for value in values)
    return ()


def _unlatex(text: str) -> str:
    """Plain text from the bits of LaTeX that wrap answers: fractions, ``{,}``, ``\\,``, ``\\text{}``."""
    if "\\" not in text and "{" not in text:
        return text
    text = _FRAC.sub(r"\1/\2", text)
    text = text.replace("{,}", ",").replace("{.}", ".")
    text = _LATEX_SPACE.sub("", text)
    return _LATEX_TEXT.sub(r"\1", text).replace("\\", "")


def _last_boxed(text: str) -> str | None:
    start = max(text.rfind("\\boxed"), text.rfind("\\fbox"))
    if start < 0:
        return None
    opening = text.find("{", start)
    if opening < 0:
        return None
    depth = 0
    for index in range(opening, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[opening + 1 : index]
    return None


def _segment(text: str) -> tuple[str, Source] | None:
    boxed = _last_boxed(text)
    if boxed is not None:
        return boxed, "boxed"
    if "####" in text:
        return _first_line(text[text.rfind("####") + 4 :]), "hashes"
    markers = list(_MARKER.finditer(text))
    if markers:
        return _first_line(text[markers[-1].end() :]), "marker"
    return None


def _first_line(text: str) -> str:
    stripped = text.lstrip()
    return stripped.split("\n", 1)[0].strip()


def _clean_text_answer(segment: str) -> str:
    return segment.strip().strip("*_`$ ").rstrip(".").strip()


def extract_answer(text: str) -> Extracted | None:
    """The final answer of a model output, or None when it gives none (the case counts as unanswered)."""
    plain = _unlatex(text)
    style = _decimal_style(plain)
    found = _segment(text)
    if found is not None:
        segment, source = found
        cleaned = _unlatex(segment)
        for match in _NUMBER.finditer(cleaned):
            values = _read(match, style)
            if values:
                return _result(match, values, source)
        answer = _clean_text_answer(cleaned)
        if answer:
            return Extracted(text=answer, value=None, values=(), source=source)
    for match in reversed(list(_NUMBER.finditer(plain))):
        values = _read(match, style)
        if values:
            return _result(match, values, "last_number")
    return None


def _result(match: re.Match[str], values: tuple[Decimal, ...], source: Source) -> Extracted:
    """The answer as written, without currency or units (a unicode minus becomes ``-``)."""
    written = ("-" if match.group("sign") else "") + match.group("int")
    if match.group("den") is not None:
        written += "/" + match.group("den")
    normalized = tuple(value.normalize() for value in values)
    return Extracted(text=written, value=normalized[0], values=normalized, source=source)
