"""Find the final answer in a model's free-form math output.

Where the answer is:
1. Statements of an answer, the strongest kind present first: every ``\\boxed{...}`` (nested braces
   allowed); else the text after every ``####`` (GSM8K style); else the text after every answer
   marker: "Final answer:", "The answer is", "Answer:", "Cevap:", "Yanıt:", "Sonuç:", "Doğru cevap",
   "Sonuç olarak cevap", "Yani cevap" (case-insensitive, markdown emphasis allowed around it; the bare
   words "answer", "cevap", "yanıt", "sonuç" need a colon). Within a statement the first number is its
   answer, or the result when it opens a computation ("Answer: 3 × 4 = 12 apples"); a statement with no
   number is a textual answer (for non-numeric gold answers such as "B"), used only when no statement
   of its kind has a number.
2. The last statement of that kind is the answer. An earlier one with a different value is a
   *conflict*, unless the output corrects itself between the two ("wait", "actually", "let me
   recheck", "I made a mistake", "bekle", "aslında", "hata", "yanlış", "tekrar kontrol"...): "The
   answer is 12. Wait, ... so the answer is 15." is 15, while two "Final answer:" lines with 12 and 15
   are a conflict.
3. An answer that hedges between values ("either 12 or 15", "12 ya da 15") is *hedged*. A hedged or
   conflicting output is answered but wrong whatever the gold: :attr:`Extracted.hedged`.
4. With no statement at all, the answer is the last number of the main clauses: parenthesized asides
   and clauses opened by "since", "because", "çünkü", "zira" restate the inputs, so "9 apples are
   left, since Tom started with 15 and gave away 6." is 9 (when the asides hold every number, the last
   number anywhere). This is the *lenient* fallback.

How a number is read, including which separator is the decimal one, is :mod:`benchgen.scoring.numbers`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, NamedTuple

from benchgen.scoring.numbers import NUMBER, Style, format_decimal, read, written

Source = Literal["boxed", "hashes", "marker", "last_number"]

_MARKER = re.compile(
    r"(?:\b(?:final\s+answer(?:\s+is)?|answer\s+is|doğru\s+cevap(?:\s+ise)?"
    r"|(?:sonuç\s+olarak|yani|dolayısıyla|bu\s+yüzden|o\s+halde),?\s+(?:cevap|yanıt))\b"
    r"|\b(?:answer|cevap|cevab[ıi]|yanıt[ıi]?|sonuç)\s*(?:\*\*|__)?\s*[:：])"
    r"\s*(?:\*\*|__)?\s*[:：=]?",
    re.IGNORECASE,
)
# Every marker holds one of these stems, no more than _MARKER_LEAD characters after the marker starts
# ("dolayısıyla, cevap"): the full pattern only scans from there, which saves most of its time.
_MARKER_STEM = re.compile(r"[acsy](?:nswer|evap|evab|anıt|onuç)", re.IGNORECASE)
_MARKER_LEAD = 40
# Every hedge holds one of these words: a cheap test before the hedge pattern scans the text.
_HEDGE_WORDS = (" or ", "veya", " ya da", "yahut", "yoksa")
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
# Words with which an output takes back what it said before (English and Turkish).
_REVISION = re.compile(
    r"\b(?:wait|actually|oops|correction|corrected|on\s+second\s+thought|mistake|re-?check\w*"
    r"|double[-\s]check\w*|let\s+me\s+(?:check|verify|recalculate|recompute|redo|fix)"
    r"|bekle|dur\b|hayır|aslında|düzelt\w*|hata\w*|yanlış\w*|tekrar\s+(?:kontrol|hesapla)\w*)",
    re.IGNORECASE,
)
_ALTERNATIVE = r"[-−–]?[$€₺£]?\d[\d.,]*(?:\s?/\s?\d+)?"
_HEDGE = re.compile(
    rf"(?P<first>{_ALTERNATIVE})(?:\s*[^\W\d]+)?\s*,?\s+(?:or|veya|ya\s+da|yahut|yoksa)\s+"
    rf"(?:maybe\s+|perhaps\s+|possibly\s+|belki\s+(?:de\s+)?)?(?P<second>{_ALTERNATIVE})",
    re.IGNORECASE,
)
_ASIDE = re.compile(r"\([^()]*\)|\b(?:since|because|çünkü|zira)\b", re.IGNORECASE)
# A trailing aside runs to the end of its sentence, or to a conclusion that follows it
# ("He has saved since May, so he has 40").
_SENTENCE_END = re.compile(
    r"[.!?](?!\d)|\n|,?\s+(?:so|therefore|thus|hence|yani|bu\s+yüzden|dolayısıyla)\b", re.IGNORECASE
)
_CLAUSE_END = re.compile(r",(?!\d)|[.!?](?!\d)|\n")
# A number followed by an operator and another number, or by "=", opens a computation.
_COMPUTATION = re.compile(r"\s*(?:[-+×x*·÷/^]\s*[\d(]|=)")
_LINE = re.compile(r"\s*([^\n]*)")
_FRAC = re.compile(r"\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_LATEX_SPACE = re.compile(r"(?<=\d)\\[,;!]\s?(?=\d)")
_LATEX_TEXT = re.compile(r"\\(?:text|mathrm|mathbf|textbf)\s*\{([^{}]*)\}")


@dataclass(frozen=True)
class Extracted:
    """A final answer: ``text`` as written, ``value`` its number (None for a textual answer).

    ``values`` lists every admissible reading, the preferred one first (two for an ambiguous separator
    in a text that shows no decimal style). ``hedged`` is True when the output gives more than one
    different final answer (``text`` then lists them, and there is no value): it is wrong whatever the
    gold. ``lenient`` is True when no statement of an answer was found and a number was taken.
    """

    text: str
    value: Decimal | None
    values: tuple[Decimal, ...]
    source: Source
    hedged: bool = False

    @property
    def lenient(self) -> bool:
        return self.source == "last_number"


class _Statement(NamedTuple):
    """One place where the output states an answer: its marker starts at ``start``, its text at ``body``."""

    start: int
    body: int
    segment: str
    source: Source


class _Numeric(NamedTuple):
    said: _Statement
    match: re.Match[str]
    values: tuple[Decimal, ...]
    segment: str


def parse_number(text: str, *, context: str = "") -> tuple[Decimal, ...]:
    """Readings of the first number in ``text`` (empty when there is none); ``context`` sets the style."""
    style = Style(context or text)
    for match in NUMBER.finditer(_unlatex(text)):
        values = read(match, style)
        if values:
            return values
    return ()


def _unlatex(text: str) -> str:
    """Plain text from the bits of LaTeX that wrap answers: fractions, ``{,}``, ``\\,``, ``\\text{}``."""
    if "\\" not in text and "{" not in text:
        return text
    # The space keeps a mixed number apart: 1\frac{1}{2} is 1 1/2, not 11/2.
    text = _FRAC.sub(r" \1/\2", text)
    text = text.replace("{,}", ",").replace("{.}", ".")
    text = _LATEX_SPACE.sub("", text)
    return _LATEX_TEXT.sub(r"\1", text).replace("\\", "")


def _boxed(text: str) -> Iterator[_Statement]:
    for found in _BOXED.finditer(text):
        depth = 0
        for index in range(found.end() - 1, len(text)):
            if text[index] == "{":
                depth += 1
            elif text[index] == "}":
                depth -= 1
                if depth == 0:
                    yield _Statement(found.start(), found.end(), text[found.end() : index], "boxed")
                    break


def _statements(text: str) -> Iterator[list[_Statement]]:
    """The statements of an answer in ``text``, one list per kind in the order they are written.

    The strongest kind comes first (``\\boxed{}``, then ``####``, then markers), and each kind is only
    looked for when the stronger ones gave no answer.
    """
    yield list(_boxed(text)) if "\\" in text else []
    hashes: list[_Statement] = []
    index = text.find("####")
    while index >= 0:
        hashes.append(_Statement(index, index + 4, _line_after(text, index + 4), "hashes"))
        index = text.find("####", index + 4)
    yield hashes
    stem = _MARKER_STEM.search(text)
    if stem is not None:
        yield [
            _Statement(marker.start(), marker.end(), _line_after(text, marker.end()), "marker")
            for marker in _MARKER.finditer(text, max(0, stem.start() - _MARKER_LEAD))
        ]


def _line_after(text: str, start: int) -> str:
    """The first non-blank line from ``start`` on, stripped: where a marker's answer is written."""
    line = _LINE.match(text, start)
    return line.group(1).strip() if line else ""


def _clean_text_answer(segment: str) -> str:
    return segment.strip().strip("*_`$ ").rstrip(".").strip()


def _first_number(
    text: str, style: Style, start: int = 0
) -> tuple[re.Match[str], tuple[Decimal, ...]] | None:
    for match in NUMBER.finditer(text, start):
        values = read(match, style)
        if values:
            return match, values
    return None


def _stated_number(segment: str, style: Style) -> tuple[re.Match[str], tuple[Decimal, ...]] | None:
    """The number a statement gives: its first, or the result when it opens a computation (3 × 4 = 12)."""
    found = _first_number(segment, style)
    if found is not None and _COMPUTATION.match(segment, found[0].end()):
        equals = segment.rfind("=")
        if equals > found[0].end():
            return _first_number(segment, style, equals + 1) or found
    return found


def _hedge(text: str, answer: re.Match[str], style: Style) -> str | None:
    """The alternatives, as written, when ``answer`` is one of two different values offered in ``text``."""
    lowered = text.lower()
    if not any(word in lowered for word in _HEDGE_WORDS):
        return None
    last_char = answer.end() - 1
    for hedge in _HEDGE.finditer(text):
        if hedge.start() <= last_char < hedge.end():
            first = _first_number(hedge.group("first"), style)
            second = _first_number(hedge.group("second"), style)
            if first and second and not set(first[1]) & set(second[1]):
                return f"{written(first[0])} or {written(second[0])}"
    return None


def _hedged(alternatives: str, source: Source) -> Extracted:
    return Extracted(text=alternatives, value=None, values=(), source=source, hedged=True)


def _last_statement(text: str, numeric: list[_Numeric], style: Style) -> Extracted:
    """The last stated answer, or a hedge when it hedges or an uncorrected earlier one contradicts it."""
    last = numeric[-1]
    hedge = _hedge(last.segment, last.match, style)
    if hedge is not None:
        return _hedged(hedge, last.said.source)
    rivals = [
        written(earlier.match)
        for earlier in numeric[:-1]
        if not set(earlier.values) & set(last.values)
        and not _REVISION.search(text, earlier.said.body, last.said.start)
    ]
    if rivals:
        return _hedged(" or ".join(dict.fromkeys([*rivals, written(last.match)])), last.said.source)
    return _result(last.match, last.values, last.said.source)


def _main_clauses(text: str) -> str:
    """``text`` without parenthesized asides and "since" / "because" / "çünkü" / "zira" clauses.

    A clause that opens its sentence ("Because ..., 9 are left") runs to the first comma; one that
    follows the main clause ("9 are left, since ...") runs to the end of the sentence.
    """
    kept: list[str] = []
    position = 0
    for aside in _ASIDE.finditer(text):
        if aside.start() < position:
            continue
        end = aside.end()
        if not aside.group().startswith("("):
            before = aside.start() - 1
            while before >= 0 and text[before] in " \t":
                before -= 1
            opens_sentence = before < 0 or text[before] in ".!?:\n"
            stop = (_CLAUSE_END if opens_sentence else _SENTENCE_END).search(text, end)
            end = stop.start() if stop else len(text)
        kept.append(text[position : aside.start()])
        position = end
    if not kept:
        return text
    kept.append(text[position:])
    return " ".join(kept)


def _unmarked(plain: str, style: Style) -> Extracted | None:
    """The lenient answer of an output with no statement: the last number of its main clauses."""
    main = _main_clauses(plain)
    for text in (main, plain) if main is not plain else (plain,):
        for match in reversed(list(NUMBER.finditer(text))):
            values = read(match, style)
            if values:
                hedge = _hedge(text, match, style)
                if hedge is not None:
                    return _hedged(hedge, "last_number")
                return _result(match, values, "last_number")
    return None


def extract_answer(text: str) -> Extracted | None:
    """The final answer of a model output, or None when it gives none (the case counts as unanswered)."""
    plain = _unlatex(text)
    style = Style(plain)
    for statements in _statements(text):
        numeric: list[_Numeric] = []
        textual: Extracted | None = None
        for said in statements:
            segment = _unlatex(said.segment)
            found = _stated_number(segment, style)
            if found is not None:
                numeric.append(_Numeric(said, found[0], found[1], segment))
            elif answer := _clean_text_answer(segment):
                textual = Extracted(text=answer, value=None, values=(), source=said.source)
        if numeric:
            return _last_statement(text, numeric, style)
        if textual is not None:
            return textual
    return _unmarked(plain, style)


def _result(match: re.Match[str], values: tuple[Decimal, ...], source: Source) -> Extracted:
    """The answer as written, without currency or units (a unicode minus becomes ``-``)."""
    return Extracted(text=written(match), value=values[0], values=values, source=source)


__all__ = ["Extracted", "Source", "extract_answer", "format_decimal", "parse_number"]
