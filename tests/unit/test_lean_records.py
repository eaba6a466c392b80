"""The per-case loop's plain records write exactly what the pydantic models wrote.

Verdict lines, detailed-results records and prediction records are encoded with msgspec instead of
pydantic or the stdlib encoder; cases and predictions are decoded straight into records. These properties
hold the bytes and values to those of the models, over generated text and numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from benchgen.cases import (
    Case,
    Prediction,
    PredictionModel,
    prediction_json,
    validate_case,
    validate_prediction,
)
from benchgen.errors import BundleError
from benchgen.report.detailed import case_json
from benchgen.scoring.join import iter_cases
from benchgen.verdicts import CriterionMark, Verdict, VerdictRecord, append_verdict

TEXT = st.text(max_size=40)  # every code point but surrogates: control characters, U+2028, emoji
OPTIONAL_TEXT = st.none() | TEXT
SCORES = st.floats(min_value=0.0, max_value=1.0) | st.sampled_from([1e-05, 1e-7, 5e-324, 0.1, 1.0])
ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True)
MARKS = st.lists(st.builds(CriterionMark, TEXT, st.booleans()), max_size=3)


def _verdicts(scores: st.SearchStrategy[float]) -> st.SearchStrategy[VerdictRecord]:
    return st.builds(
        VerdictRecord,
        case_id=TEXT,
        question=TEXT,
        gold=TEXT,
        prediction=OPTIONAL_TEXT,
        raw_prediction=TEXT,
        passed=st.booleans(),
        answered=st.booleans(),
        near_miss=st.booleans(),
        score=scores,
        criteria=MARKS,
        difficulty=OPTIONAL_TEXT,
        domain=OPTIONAL_TEXT,
        route=OPTIONAL_TEXT,
        solution=OPTIONAL_TEXT,
        detail=TEXT,
    )


@settings(max_examples=300)
@given(_verdicts(SCORES | ANY_FLOAT))
def test_a_verdict_line_is_what_the_model_writes(record: VerdictRecord) -> None:
    model = Verdict.model_validate(msgspec.to_builtins(record))
    line = bytearray(b"previous line\n")
    append_verdict(record, msgspec.json.Encoder(), line)
    assert line == b"previous line\n" + model.model_dump_json().encode("utf-8") + b"\n"


@settings(max_examples=300)
@given(_verdicts(SCORES | ANY_FLOAT))
def test_a_detailed_record_is_what_json_dumps_writes(record: VerdictRecord) -> None:
    expected = {
        "case_id": record.case_id,
        "gold": record.gold,
        "prediction": record.prediction,
        "passed": record.passed,
        "answered": record.answered,
        "difficulty": record.difficulty,
        "domain": record.domain,
        "route": record.route,
        "score": record.score,
    }
    assert case_json(record) == json.dumps(expected, ensure_ascii=False).encode("utf-8")


@settings(max_examples=300)
@given(
    TEXT,
    TEXT,
    st.none() | st.floats(min_value=0.0, max_value=1.0),
    OPTIONAL_TEXT,
    st.none() | st.floats(min_value=0.0, allow_infinity=False) | st.sampled_from([1e16, 2.5e20, 1e-9]),
)
def test_a_prediction_record_is_written_as_the_model_writes_it(
    ident: str, text: str, probability: float | None, route: str | None, cost: float | None
) -> None:
    model = PredictionModel(
        id=ident, prediction_text=text, no_answer_probability=probability, route=route, cost_usd=cost
    )
    record = Prediction(
        id=ident, prediction_text=text, no_answer_probability=probability, route=route, cost_usd=cost
    )
    assert prediction_json(record) == model.model_dump_json(exclude_none=True)


def _cases_file(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_case_line_only_the_model_accepts_reads_as_the_model_reads_it(tmp_path: Path) -> None:
    # given: an integer id, a boolean cost, a string cost and a byte-order mark: the model coerces them
    lines = [
        '\ufeff{"id": 7, "question": "q", "answer": "1", "costs": {"a": true, "b": "0.5"}, '
        '"criteria": ["c"]}',
        '{"id": "x", "answer": "2", "extra": {"deep": [1]}}',
        "   ",
    ]
    path = _cases_file(tmp_path, *lines)
    # when
    found = list(iter_cases(path))
    # then
    expected = [
        validate_case({**json.loads(lines[0][1:]), "id": "7"}),
        validate_case(json.loads(lines[1])),
    ]
    assert found == expected
    assert found[0].costs == {"a": 1.0, "b": 0.5}
    assert found[0].criteria == ["c"]


def test_a_bad_case_line_names_its_line_and_field(tmp_path: Path) -> None:
    path = _cases_file(tmp_path, '{"id": "a"}', '{"id": "b", "answers": "not a list"}')
    with pytest.raises(BundleError, match=r"line 2: answers: Input should be a valid list"):
        list(iter_cases(path))


def test_a_case_decoded_straight_into_a_record_equals_the_models(tmp_path: Path) -> None:
    line = (
        '{"id": "q", "question": "¿Cuánto?\\u2028", "answer": "12", "solution": null, "difficulty": "hard", '
        '"domain": "d", "context": "c", "answers": ["a"], "route": "r", "costs": {"r": 1}, '
        '"files": {"a.py": "x"}, "test_command": "t"}'
    )
    found = list(iter_cases(_cases_file(tmp_path, line)))
    assert found == [validate_case(json.loads(line))]
    assert isinstance(found[0], Case)


def test_a_bad_case_line_far_into_the_file_is_named_by_its_own_number(tmp_path: Path) -> None:
    # given: thousands of cases (the file is read in blocks of lines), blank lines, then a bad one
    good = [f'{{"id": "q{i}", "answer": "{i}"}}' for i in range(5000)]
    path = _cases_file(tmp_path, *good, "", "   ", '{"id": "bad", "question": 12}', '{"id": "after"}')
    # when / then
    with pytest.raises(BundleError, match=r"line 5003: question: Input should be a valid string"):
        list(iter_cases(path))
    assert [case.id for case in iter_cases(_cases_file(tmp_path, *good))] == [f"q{i}" for i in range(5000)]


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        (['{"id": "a"} {"id": "b"}', '{"id": "c", "question": "q"}'], "line 1 is not valid JSON: Extra data"),
        (['{"id": "a",', '"question": "q"}'], "line 1 is not valid JSON"),
    ],
)
def test_a_case_line_holds_exactly_one_object(tmp_path: Path, lines: list[str], problem: str) -> None:
    with pytest.raises(BundleError, match=problem):
        list(iter_cases(_cases_file(tmp_path, *lines)))


@pytest.mark.parametrize(
    ("record", "location", "message"),
    [
        ({"id": "a", "cost_usd": -1}, ("cost_usd",), "Input should be greater than or equal to 0"),
        ({"id": "a", "no_answer_probability": 1.5}, ("no_answer_probability",), "less than or equal to 1"),
        ({"id": "a", "route": 3}, ("route",), "Input should be a valid string"),
        ([], (), "Input should be a valid dictionary or instance of PredictionModel"),
    ],
)
def test_the_prediction_model_refuses_what_the_record_refuses_in_pydantic_s_words(
    record: object, location: tuple[str, ...], message: str
) -> None:
    # the record's own bounds, made pydantic's: a value the record refuses, the model refuses too
    if isinstance(record, dict):
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert(record, Prediction)
    with pytest.raises(ValidationError) as raised:
        validate_prediction(record)
    (problem,) = raised.value.errors()
    assert problem["loc"] == location
    assert message in problem["msg"]


def test_a_case_line_that_is_no_object_is_named_as_the_model_names_it(tmp_path: Path) -> None:
    with pytest.raises(
        BundleError, match=r"line 2: Input should be a valid dictionary or instance of CaseModel"
    ):
        list(iter_cases(_cases_file(tmp_path, '{"id": "a"}', "[1]")))
