"""Final-answer extraction from realistic model outputs (English and Turkish)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.scoring.extract import extract_answer, format_decimal, parse_number

REALISTIC_OUTPUTS = [
    # (model output, expected value as plain text, where it was found)
    ("Natalia sold 48/2 = 24 clips in May.\nAltogether she sold 48+24 = 72 clips.\n#### 72", "72", "hashes"),
    ("#### 1,000", "1000", "hashes"),
    ("She pays 3 * $4 = $12.\n#### $18", "18", "hashes"),
    ("The answer is 42.", "42", "marker"),
    ("So the total is 5 + 7 = 12 apples. The answer is 12 apples.", "12", "marker"),
    ("Therefore, the answer is: 3.5", "3.5", "marker"),
    ("Final answer: -5", "-5", "marker"),
    ("**Final Answer:** $1,234.50", "1234.5", "marker"),
    ("Final Answer: The final answer is $42$. I hope it is correct.", "42", "marker"),
    ("Answer: 7 km", "7", "marker"),
    ("Cevap: 1.000.000 TL", "1000000", "marker"),
    ("Cevap: 15", "15", "marker"),
    ("CEVAP: 42", "42", "marker"),
    ("Ali'nin 3 elması var, 5 tane daha alıyor.\nYanıt: 8", "8", "marker"),
    ("Yanıt: 3,5 kg", "3.5", "marker"),
    ("Toplam fiyat 2.500 TL olur.\nCevap: 2.500 TL", "2500", "marker"),
    ("İşlem: 12 x 4 = 48\nSonuç: 48 öğrenci", "48", "marker"),
    ("Doğru cevap 36'dır.", "36", "marker"),
    ("Toplam: 252 + 52 = 304. Sonuç olarak cevap 304.", "304", "marker"),
    ("So the answer is 9 apples.", "9", "marker"),
    ("Cevap:\n\n120", "120", "marker"),
    ("Yani cevap: ₺1.250", "1250", "marker"),
    ("Thus \\boxed{72}.", "72", "boxed"),
    ("We get \\boxed{\\frac{3}{4}}", "0.75", "boxed"),
    ("The result is $\\boxed{1{,}234}$", "1234", "boxed"),
    ("\\boxed{\\text{42 apples}}", "42", "boxed"),
    ("First try \\boxed{5}, corrected: \\boxed{-12}", "-12", "boxed"),
    ("The temperature drops to −7 degrees.", "-7", "last_number"),
    ("We get 10-5=5", "5", "last_number"),
    ("He has 50% of the cake left", "50", "last_number"),
    ("It costs €3,99 per kilo", "3.99", "last_number"),
    ("Each box weighs 0,125 kg", "0.125", "last_number"),
    ("Total: 1,000,000 dollars.", "1000000", "last_number"),
    ("3/4 of the class passed", "0.75", "last_number"),
    ("x = -0.5.", "-0.5", "last_number"),
    ("pi is about 3.14 so the area is 2.125", "2.125", "last_number"),
    ("The distance is 1\u00a0234,5 km", "1234.5", "last_number"),
]


@pytest.mark.parametrize(("output", "expected", "source"), REALISTIC_OUTPUTS)
def test_the_final_answer_of_a_realistic_output_is_read_as_its_number(
    output: str, expected: str, source: str
) -> None:
    # given a model output / when its answer is extracted
    found = extract_answer(output)
    # then the number and where it came from are the ones a reader would pick
    assert found is not None
    assert found.value is not None
    assert format_decimal(found.value) == expected
    assert found.source == source


def test_an_output_without_any_number_or_marker_is_unanswered() -> None:
    assert extract_answer("I am not sure how to solve this.") is None


def test_a_marker_followed_by_words_gives_a_textual_answer() -> None:
    found = extract_answer("Answer: B")
    assert found is not None
    assert (found.text, found.value) == ("B", None)


def test_the_answer_text_drops_currency_and_keeps_the_written_digits() -> None:
    found = extract_answer("Final answer: $1,234.50")
    assert found is not None
    assert found.text == "1,234.50"


def test_a_unicode_minus_is_written_as_a_hyphen_in_the_answer_text() -> None:
    found = extract_answer("Cevap: −12")
    assert found is not None
    assert found.text == "-12"


def test_a_single_separator_before_three_digits_reads_as_thousands_first() -> None:
    # given "1.000" alone, the thousands reading is preferred and the decimal one kept as an alternative
    assert parse_number("1.000") == (Decimal("1000"), Decimal("1"))


def test_a_decimal_point_used_elsewhere_in_the_text_makes_three_digits_decimal() -> None:
    assert parse_number("2.125", context="half is 0.5 and 2.125")[0] == Decimal("2.125")


def test_a_repeated_separator_with_groups_of_three_is_unambiguous() -> None:
    assert parse_number("1.000.000") == (Decimal("1000000"),)


def test_a_lenient_answer_is_one_found_without_a_marker() -> None:
    found = extract_answer("so she has 12 left")
    assert found is not None
    assert found.lenient is True
    marked = extract_answer("#### 12")
    assert marked is not None
    assert marked.lenient is False


def test_a_turkish_verb_containing_yanıt_is_not_a_marker() -> None:
    # given "yanıtlamak" (to answer) early in the text, the last number still wins
    found = extract_answer("Soruyu yanıtlamak için 3 adım var. Sonunda 17 elma kalır.")
    assert found is not None
    assert (found.text, found.source) == ("17", "last_number")


@given(st.integers(min_value=-(10**12), max_value=10**12), st.sampled_from([",", "."]))
def test_any_integer_written_with_thousands_separators_is_read_back(number: int, separator: str) -> None:
    # given an integer written English style (1,234,567) or Turkish style (1.234.567) after a marker
    written = f"{abs(number):,}".replace(",", separator)
    text = f"Cevap: {'-' if number < 0 else ''}{written} TL"
    # then the extracted value is the integer (ambiguous forms keep it as their preferred reading)
    found = extract_answer(text)
    assert found is not None
    assert found.values[0] == number


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        # a decimal comma elsewhere makes the dot a thousands separator, and the reverse
        ("Tanesi 2,50 TL, toplam 692 tane.\nCevap: 1.730 TL", ("1730",)),
        ("Tanesi 2,50 TL.\nCevap: 1,730 TL", ("1.73",)),
        ("Each costs $2.50, so the total is $1,730.", ("1730",)),
        ("Each costs $2.50, so the total is $1.730.", ("1.73",)),
        # a leading zero and cents after a thousands separator are evidence too
        ("Her kutu 0,125 kg. Cevap: 1.250 kg", ("1250",)),
        ("He had $1,234.50 before. The answer is 2,125.", ("2125",)),
        # a repeated separator is a thousands separator, so the other one is the decimal point
        ("Nüfus 1.000.000 kişi. Cevap: 2,125", ("2.125",)),
        # with no evidence at all both readings stay, the thousands one first
        ("Cevap: 1.730 TL", ("1730", "1.73")),
    ],
)
def test_the_text_decides_an_ambiguous_separator_when_it_shows_its_decimal_style(
    output: str, expected: tuple[str, ...]
) -> None:
    found = extract_answer(output)
    assert found is not None
    assert tuple(format_decimal(value) for value in found.values) == expected


def test_conflicting_evidence_is_settled_by_the_language_convention() -> None:
    # given one decimal point and one decimal comma, a Turkish text reads the comma as decimal
    found = extract_answer("Hız 3.5 km/sa, yol 2,5 km. Cevap: 1.250 metre")
    assert found is not None
    assert found.values == (Decimal("1250"),)


@pytest.mark.parametrize(
    ("output", "alternatives"),
    [
        ("The answer is either 12 or 15.", "12 or 15"),
        ("Final answer: 12 apples or 15 apples", "12 or 15"),
        ("Cevap: 12 ya da 15", "12 or 15"),
        ("Sonuç 40 veya belki 45 olabilir.", "40 or 45"),
        ("Final answer: 12\n\nFinal answer: 15", "12 or 15"),
        ("#### 12\n#### 15", "12 or 15"),
    ],
)
def test_an_output_offering_different_final_answers_is_hedged(output: str, alternatives: str) -> None:
    found = extract_answer(output)
    assert found is not None
    assert (found.hedged, found.text, found.value) == (True, alternatives, None)


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("The answer is 12. Wait, he gave away 3, not 0, so the answer is 15.", "15"),
        ("Cevap: 40\nBekle, indirimi unuttum. Cevap: 36", "36"),
        ("First try \\boxed{5}, corrected: \\boxed{-12}", "-12"),
        ("The answer is 12 (or 12.0 in decimals). Final answer: 12", "12"),
    ],
)
def test_an_output_that_corrects_itself_is_judged_by_its_last_answer(output: str, expected: str) -> None:
    found = extract_answer(output)
    assert found is not None
    assert found.hedged is False
    assert found.value is not None
    assert format_decimal(found.value) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("9 apples are left, since Tom started with 15 and gave away 6.", "9"),
        ("Geriye 75 sayfa kaldı (120 sayfanın 45'i okundu).", "75"),
        ("Because he gave away 6 of his 15 apples, 9 are left.", "9"),
        ("Ali 30 yaşında, çünkü kardeşi 25 ve aralarında 5 yıl var.", "30"),
        ("She needs 4 boxes, zira 4 x 6 = 24.", "4"),
        ("All of it is an aside (15 - 6 = 9)", "9"),
    ],
)
def test_without_a_marker_the_main_clause_number_beats_the_restated_inputs(
    output: str, expected: str
) -> None:
    found = extract_answer(output)
    assert found is not None
    assert found.value is not None
    assert (format_decimal(found.value), found.source) == (expected, "last_number")


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Answer: 1 1/2 cups", "1.5"),
        ("Cevap: 3/4", "0.75"),
        ("Yemek 2 ½ saat sürer.", "2.5"),
        ("Final answer: 2½", "2.5"),
        ("Final answer: -1 3/4", "-1.75"),
        ("\\boxed{1\\frac{1}{2}}", "1.5"),
        ("Cevap: ¾ litre", "0.75"),
    ],
)
def test_mixed_numbers_and_fractions_are_read_as_their_value(output: str, expected: str) -> None:
    found = extract_answer(output)
    assert found is not None
    assert found.value is not None
    assert format_decimal(found.value) == expected


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Answer: 5 + 7 = 12 apples", "12"),
        ("Cevap: 12 × 4 = 48 öğrenci", "48"),
        ("Final answer: 48/2 = 24", "24"),
        ("The answer is 15 (= 3 × 5)", "15"),
    ],
)
def test_a_statement_that_opens_with_a_computation_gives_its_result(output: str, expected: str) -> None:
    found = extract_answer(output)
    assert found is not None
    assert found.value is not None
    assert format_decimal(found.value) == expected


def test_an_aside_stops_at_the_conclusion_that_follows_it() -> None:
    found = extract_answer("He has put $5 aside every week since March, so he now has 60 dollars.")
    assert found is not None
    assert (found.text, found.source) == ("60", "last_number")


@given(st.integers(min_value=1_000, max_value=999_999), st.sampled_from(["tr", "en"]))
def test_an_amount_after_a_decimal_price_has_exactly_one_reading(amount: int, language: str) -> None:
    # given a response that writes a price with decimals, then an amount with a thousands separator
    grouped = f"{amount:,}"
    if language == "tr":
        text = f"Tanesi 2,50 TL.\nCevap: {grouped.replace(',', '.')} TL"
    else:
        text = f"Each costs $2.50.\nThe answer is ${grouped}."
    # then the amount is read as the integer and nothing else
    found = extract_answer(text)
    assert found is not None
    assert found.values == (Decimal(amount),)


@given(st.integers(min_value=1, max_value=999_999), st.sampled_from([".", ","]))
def test_three_decimals_in_a_text_that_writes_decimals_that_way_are_a_decimal(
    thousandths: int, separator: str
) -> None:
    # given "0.5" (or "0,5") earlier, a number with three decimals is that decimal, whatever its size
    whole, fraction = divmod(thousandths, 1000)
    text = f"half is 0{separator}5, and the total is {whole}{separator}{fraction:03d}"
    found = extract_answer(text)
    assert found is not None
    assert found.values == (Decimal(thousandths) / 1000,)


@pytest.mark.parametrize(
    ("output", "expected", "source"),
    [
        ("To get the answer: we add 48 and 24.\n#### 72", "72", "hashes"),
        ("\\boxed{72}\n\nAnswer: we computed 48 + 24", "72", "boxed"),
    ],
)
def test_a_marker_in_the_reasoning_does_not_conflict_with_a_stronger_final_statement(
    output: str, expected: str, source: str
) -> None:
    found = extract_answer(output)
    assert found is not None
    assert (found.hedged, found.text, found.source) == (False, expected, source)
