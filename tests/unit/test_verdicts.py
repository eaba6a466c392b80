"""Verdict lines read as the model reads them, by every reader alike."""

from __future__ import annotations

import json

import msgspec
import pytest

from benchgen.errors import ScoringError
from benchgen.verdicts import Verdict, append_verdict, decode_verdict, read_verdicts

VERDICT = {"case_id": "q1", "gold": "72", "prediction": "68", "passed": False, "answered": True}


def test_a_verdict_line_reads_as_the_model_reads_it() -> None:
    # given a verdict with criteria and one with the model's lax values (1 for true, a float as text)
    plain = json.dumps({**VERDICT, "criteria": [{"id": "arithmetic", "passed": False}]}).encode()
    lax = json.dumps({**VERDICT, "passed": 1, "score": "0.5"}).encode()
    for line in (plain, lax):
        # when each is decoded
        record = decode_verdict(line)
        # then every field holds what the pydantic model reads
        model = Verdict.model_validate_json(line)
        # (a field the line leaves out is UNSET in the record, None in the model: absent in both)
        read = {name: getattr(record, name) for name in Verdict.model_fields if name != "criteria"}
        assert {name: None if value is msgspec.UNSET else value for name, value in read.items()} == {
            name: getattr(model, name) for name in Verdict.model_fields if name != "criteria"
        }
        assert [(c.id, c.passed) for c in record.criteria] == [(c.id, c.passed) for c in model.criteria]


def test_a_line_that_is_not_a_verdict_is_refused_with_the_model_s_reason() -> None:
    line = json.dumps({k: v for k, v in VERDICT.items() if k != "gold"}).encode()
    with pytest.raises(ValueError, match="gold"):
        decode_verdict(line)


def test_verdicts_are_read_past_blank_lines_with_their_own_lines() -> None:
    line = json.dumps(VERDICT).encode() + b"\n"
    found = list(read_verdicts([b"\n", line, b"  \n"], decode_verdict))
    assert [(verdict.case_id, read) for verdict, read in found] == [("q1", line)]


def test_a_line_that_is_not_a_verdict_is_named_by_its_number_where_it_was_read() -> None:
    lines = [json.dumps(VERDICT).encode(), b"", b'{"case_id": "q2"}']
    with pytest.raises(ScoringError, match=r"^the before run's verdicts\.jsonl line 3 is not a verdict: "):
        list(read_verdicts(lines, Verdict.model_validate_json, where="the before run's verdicts.jsonl"))


def test_a_verdict_with_reasoning_is_the_same_line_from_the_record_and_the_model() -> None:
    # given a verdict of a reasoning model's answer, and one without reasoning
    for extra in ({"reasoning": "6*7 is 42"}, {}):
        line = json.dumps({**VERDICT, **extra}).encode()
        record = decode_verdict(line)
        # when each is written back, by the record's encoder and by the model
        buffer = bytearray()
        append_verdict(record, msgspec.json.Encoder(), buffer)
        # then both write the same line, with the reasoning only where there was some
        assert bytes(buffer) == Verdict.model_validate_json(line).model_dump_json().encode() + b"\n"
        assert (b'"reasoning"' in buffer) == bool(extra)
