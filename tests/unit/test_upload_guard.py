"""The last check before training files leave: any row of any export profile that carries a held-out case
is named, whatever its shape, case or spacing; clean rows pass."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.finetune.seed import Source
from benchgen.finetune.split import Split
from benchgen.training.examples import HeldOutCase, Kind, PreparedExample, SourceContext, text_hash
from benchgen.training.export_profiles import PROFILES
from benchgen.training.upload_guard import held_out_rows

QUESTION = "Ayşe has 3 boxes of 12 pencils. How many pencils does she have?"
HELD_OUT = [HeldOutCase(case_id="case-7", text_hash=text_hash(QUESTION))]


def _example(prompt: str, *, system: str = "Answer with a number.") -> PreparedExample:
    return PreparedExample(
        example_id="x-0",
        split=Split.TRAIN,
        kind=Kind.SEED,
        system=system,
        prompt=prompt,
        chosen="36",
        rejected="35",
        grading={"template": "math", "answer": "36", "criteria": []},  # read by the reinforcement profiles
        source=SourceContext(case_id="case-1", run_id="r1", layer=Source.SEED),
        source_text_hash=text_hash(prompt),
    )


def _line(row: object) -> bytes:
    return json.dumps(row, ensure_ascii=False).encode()


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_a_held_out_question_is_found_in_every_profiles_row_shape(profile: str) -> None:
    row = PROFILES[profile].render(_example(QUESTION))
    clean = PROFILES[profile].render(_example("What is 2 plus 2?"))

    problems = held_out_rows([("train.jsonl", [_line(clean), _line(row)])], HELD_OUT)

    assert problems == ["train.jsonl line 2 repeats the text of a held-out case"]


@settings(max_examples=50, deadline=None)
@given(
    question=st.text(
        alphabet=st.characters(categories=["L", "N", "Zs", "P"]), min_size=1, max_size=80
    ).filter(lambda text: text.strip() != ""),
    upper=st.booleans(),
    padding=st.integers(min_value=0, max_value=3),
)
def test_no_held_out_question_passes_whatever_its_case_and_spacing(
    question: str, upper: bool, padding: int
) -> None:
    held_out = [HeldOutCase(case_id="c", text_hash=text_hash(question))]
    variant = " " * padding + (question.upper() if upper else question).replace(" ", "  ") + "\n" * padding
    row = PROFILES["openai-chat"].render(_example(variant, system=""))
    if text_hash(variant) != text_hash(question):
        return  # upper-casing changed the text itself (e.g. a German sharp s): not the same question
    assert held_out_rows([("validation.jsonl", [_line(row)])], held_out) == [
        "validation.jsonl line 1 repeats the text of a held-out case"
    ]


def test_a_row_naming_a_held_out_case_id_is_found() -> None:
    row = {"messages": [{"role": "user", "content": "other"}], "metadata": {"case_id": "case-7"}}
    assert held_out_rows([("train.jsonl", [_line(row)])], HELD_OUT) == [
        "train.jsonl line 1 comes from held-out case 'case-7'"
    ]


def test_a_line_that_cannot_be_checked_is_not_sent() -> None:
    assert held_out_rows([("train.jsonl", [b"not json", b"[1, 2]", b"  "])], HELD_OUT) == [
        "train.jsonl line 1 is not JSON",
        "train.jsonl line 2 is not a JSON object",
    ]


def test_clean_files_pass_and_many_leaks_are_counted_after_the_first_fifty() -> None:
    clean = [_line(PROFILES["bedrock-conversation"].render(_example(f"What is {n} + 1?"))) for n in range(30)]
    assert held_out_rows([("train.jsonl", clean)], HELD_OUT) == []
    leaked = [_line(PROFILES["bedrock-conversation"].render(_example(QUESTION)))] * 60
    problems = held_out_rows([("train.jsonl", leaked)], HELD_OUT)
    assert len(problems) == 51
    assert problems[-1] == "and 10 more rows like these"
