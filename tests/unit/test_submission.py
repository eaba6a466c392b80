"""Reading submissions: formats, zips made by hand, and the message a user sees for each bad input."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

import benchgen.submission as submission_module
from benchgen.errors import SubmissionError
from benchgen.submission import open_predictions

RECORDS = [{"id": "q1", "prediction_text": "42"}, {"id": "q2", "prediction_text": "7"}]


def _read(path: Path) -> tuple[list[tuple[str, str]], dict[str, object]]:
    with open_predictions(path) as stream:
        predictions = [(p.id, p.prediction_text) for p in stream]
        return predictions, stream.metadata


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _zip(tmp_path: Path, members: dict[str, str], name: str = "submission.zip") -> Path:
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in members.items():
            archive.writestr(member, text)
    return path


def _message(path: Path) -> str:
    with pytest.raises(SubmissionError) as caught:
        _read(path)
    return str(caught.value)


def test_predictions_json_yields_records_and_metadata(tmp_path: Path) -> None:
    document = {"predictions": RECORDS, "metadata": {"model": "m"}}
    path = _write(tmp_path, "predictions.json", json.dumps(document))
    assert _read(path) == ([("q1", "42"), ("q2", "7")], {"model": "m"})


def test_metadata_may_come_before_the_predictions(tmp_path: Path) -> None:
    text = json.dumps({"metadata": {"execution_time": 3.5}, "predictions": RECORDS})
    assert _read(_write(tmp_path, "predictions.json", text))[1] == {"execution_time": 3.5}


def test_predictions_jsonl_yields_one_record_per_line(tmp_path: Path) -> None:
    text = "\n".join(json.dumps(r) for r in RECORDS) + "\n\n"
    assert _read(_write(tmp_path, "predictions.jsonl", text))[0] == [("q1", "42"), ("q2", "7")]


def test_integer_ids_are_read_as_strings(tmp_path: Path) -> None:
    path = _write(tmp_path, "predictions.json", '{"predictions": [{"id": 17, "prediction_text": "x"}]}')
    assert _read(path)[0] == [("17", "x")]


def test_a_long_document_is_read_across_many_buffer_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a tiny read window, records and numbers straddle window boundaries
    monkeypatch.setattr(submission_module, "_CHUNK", 7)
    records = [{"id": f"q{i}", "prediction_text": "x" * (i % 13), "cost_usd": 12345.678} for i in range(300)]
    path = _write(tmp_path, "predictions.json", json.dumps({"predictions": records}, indent=2))
    predictions, _ = _read(path)
    assert len(predictions) == 300
    assert predictions[-1] == ("q299", "x" * (299 % 13))


def test_an_error_deep_in_a_long_document_names_its_record_and_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(submission_module, "_CHUNK", 16)
    lines = [json.dumps({"id": f"q{i}", "prediction_text": "x"}) for i in range(2000)]
    lines[1500] = '{"id": "q1500", "prediction_text": x}'
    path = _write(tmp_path, "predictions.json", '{"predictions": [\n' + ",\n".join(lines) + "\n]}")
    assert _message(path) == (
        "predictions.json: invalid JSON in predictions[1500]: Expecting value (line 1502, column 36)"
    )


def test_a_bare_list_of_predictions_is_accepted(tmp_path: Path) -> None:
    assert _read(_write(tmp_path, "predictions.json", json.dumps(RECORDS)))[0] == [("q1", "42"), ("q2", "7")]


def test_a_zip_made_on_macos_with_an_enclosing_folder_is_accepted(tmp_path: Path) -> None:
    path = _zip(
        tmp_path,
        {
            "results/predictions.json": json.dumps({"predictions": RECORDS}),
            "__MACOSX/results/._predictions.json": "\x00\x05",
            "results/.DS_Store": "junk",
        },
    )
    assert _read(path)[0] == [("q1", "42"), ("q2", "7")]


def test_a_zip_without_a_predictions_file_lists_what_it_holds(tmp_path: Path) -> None:
    path = _zip(tmp_path, {"answers.csv": "id,answer", "readme.txt": "hi"})
    assert _message(path) == (
        "submission.zip holds no predictions.json or predictions.jsonl at its root "
        "(it holds: answers.csv, readme.txt)"
    )


def test_a_zip_with_two_predictions_files_is_refused(tmp_path: Path) -> None:
    path = _zip(tmp_path, {"predictions.json": "{}", "predictions.jsonl": ""})
    assert "holds more than one predictions file" in _message(path)


def test_a_broken_zip_says_so(tmp_path: Path) -> None:
    path = _write(tmp_path, "submission.zip", "not a zip")
    assert _message(path) == (
        "submission.zip is not a valid zip archive: zip predictions.json or upload it bare"
    )


def test_an_empty_json_file_says_what_to_write(tmp_path: Path) -> None:
    assert _message(_write(tmp_path, "predictions.json", "  \n")) == (
        'predictions.json is empty: write {"predictions": [{"id": ..., "prediction_text": ...}]}'
    )


def test_an_empty_jsonl_file_is_refused(tmp_path: Path) -> None:
    assert _message(_write(tmp_path, "predictions.jsonl", "\n")) == (
        "predictions.jsonl is empty: write one JSON prediction per line"
    )


def test_malformed_json_names_the_record_and_the_line(tmp_path: Path) -> None:
    text = (
        '{"predictions": [\n{"id": "q1", "prediction_text": "a"},\n'
        + '{"id": "q2", "prediction_text": "b",}\n]}'
    )
    assert _message(_write(tmp_path, "predictions.json", text)) == (
        "predictions.json: invalid JSON in predictions[1]: Expecting property name enclosed in double quotes "
        "(line 3, column 37)"
    )


def test_a_missing_comma_between_records_is_located(tmp_path: Path) -> None:
    text = '{"predictions": [{"id": "q1"}\n{"id": "q2"}]}'
    assert _message(_write(tmp_path, "predictions.json", text)) == (
        "predictions.json: expected ',' or ']' after predictions[0], found '{' (line 2, column 1)"
    )


def test_a_wrong_type_names_the_record_and_the_field(tmp_path: Path) -> None:
    records = [*RECORDS, {"id": "q3", "prediction_text": ["a", "list"]}]
    path = _write(tmp_path, "predictions.json", json.dumps({"predictions": records}))
    assert _message(path) == "predictions[2].prediction_text: Input should be a valid string"


def test_an_out_of_range_probability_is_explained(tmp_path: Path) -> None:
    path = _write(
        tmp_path, "predictions.jsonl", '{"id": "q1", "prediction_text": "", "no_answer_probability": 1.5}\n'
    )
    assert _message(path) == (
        "predictions.jsonl line 1: no_answer_probability: Input should be less than or equal to 1"
    )


def test_a_record_without_an_id_is_explained(tmp_path: Path) -> None:
    path = _write(tmp_path, "predictions.json", '{"predictions": [{"prediction_text": "x"}]}')
    assert _message(path) == "predictions[0].id: Field required"


def test_a_record_that_is_not_an_object_is_explained(tmp_path: Path) -> None:
    path = _write(tmp_path, "predictions.json", '{"predictions": ["42"]}')
    assert _message(path) == (
        'predictions[0]: expected an object like {"id": ..., "prediction_text": ...}, got str'
    )


def test_a_document_without_a_predictions_list_is_explained(tmp_path: Path) -> None:
    path = _write(tmp_path, "predictions.json", '{"results": []}')
    assert _message(path) == 'predictions.json has no "predictions" list'


def test_a_bad_jsonl_line_names_its_number(tmp_path: Path) -> None:
    path = _write(tmp_path, "predictions.jsonl", '{"id": "q1"}\n{"id": "q2"\n')
    expected = "predictions.jsonl: line 2 is not valid JSON: Expecting ',' delimiter (column 12)"
    assert _message(path) == expected


def test_a_truncated_document_is_explained(tmp_path: Path) -> None:
    path = _write(tmp_path, "predictions.json", '{"predictions": [{"id": "q1", "prediction_text": "4')
    assert _message(path).startswith("predictions.json: invalid JSON in predictions[0]: Unterminated string")


def test_an_unsupported_file_type_is_refused(tmp_path: Path) -> None:
    assert _message(_write(tmp_path, "predictions.csv", "id,text")) == (
        "predictions.csv: upload predictions.json, predictions.jsonl or a zip holding one of them"
    )


def test_text_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_bytes(b'{"id": "q1", "prediction_text": "caf\xe9"}\n')
    assert _message(path).startswith("the predictions file is not UTF-8 text")


# ---- bounded memory and nesting ----------------------------------------------------------------------------


def test_a_prediction_past_the_size_limit_is_refused_naming_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(submission_module, "MAX_RECORD_CHARS", 1000)
    huge = json.dumps({"predictions": [RECORDS[0], {"id": "q2", "prediction_text": "x" * 5000}]})

    message = _message(_zip(tmp_path, {"predictions.json": huge}))

    assert message.startswith("predictions.json: predictions[1] (line 1, column ")
    assert '(id "q2") is larger than the limit' in message


def test_a_jsonl_line_past_the_size_limit_is_refused_without_reading_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(submission_module, "MAX_RECORD_CHARS", 1000)
    lines = json.dumps(RECORDS[0]) + "\n" + json.dumps({"id": 7, "prediction_text": "x" * 5000}) + "\n"

    message = _message(_write(tmp_path, "predictions.jsonl", lines))

    assert message.startswith("predictions.jsonl: line 2 (id 7) is larger than the limit")


def test_a_zip_member_that_expands_past_the_limit_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(submission_module, "MAX_MEMBER_BYTES", 2048)
    document = json.dumps({"predictions": [{"id": f"q{i}", "prediction_text": "7"} for i in range(200)]})

    message = _message(_zip(tmp_path, {"predictions.json": document}))

    assert message.startswith("predictions.json in submission.zip expands to 0 MiB, more than the limit")


@pytest.mark.parametrize(
    ("name", "text", "where"),
    [
        ("predictions.json", '{"predictions": [' + "[" * 100_000 + "]" * 100_000 + "]}", "predictions[0]"),
        ("predictions.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", "line 1"),
        ("predictions.json", '{"metadata": ' + '{"a":' * 100_000 + "1" + "}" * 100_000 + "}", '"metadata"'),
    ],
    ids=["json-record", "jsonl-line", "json-metadata"],
)
def test_a_document_nested_100000_deep_gets_one_clear_message(
    tmp_path: Path, name: str, text: str, where: str
) -> None:
    message = _message(_write(tmp_path, name, text))

    assert message.startswith(f"{name}: {where}") and "is nested too deeply" in message
