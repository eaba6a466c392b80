"""The four row formats and their order."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from benchgen.finetune.formats import (
    MESSAGES,
    PREFERENCE,
    PROMPT_COMPLETION,
    ROWS,
    full_row,
    messages_row,
    preference_row,
    prompt_completion_row,
    write_formats,
)
from benchgen.finetune.seed import Example, Source, VerdictSummary
from benchgen.finetune.split import Split
from benchgen.finetune.store import OrderedExamples, scratch_db


def example(
    case_id: str = "q1", *, variant: int = 0, system: str = "", rejected: str | None = "68"
) -> Example:
    return Example(
        example_id=f"{case_id}~{variant:02d}",
        case_id=case_id,
        run_id="run-1",
        source=Source.SEED if variant == 0 else Source.AUGMENTED,
        variant=variant,
        input=f"Question {case_id}?",
        target="Reasoning.\n\nFinal answer: 72",
        system=system,
        rejected=rejected,
        verdict=VerdictSummary(passed=False, answered=True, prediction="68"),
        criteria=["arithmetic"],
    )


def read(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_messages_row_has_system_user_and_assistant() -> None:
    assert messages_row(example(system="Be careful."), Split.TRAIN) == {
        "messages": [
            {"role": "system", "content": "Be careful."},
            {"role": "user", "content": "Question q1?"},
            {"role": "assistant", "content": "Reasoning.\n\nFinal answer: 72"},
        ]
    }


def test_messages_row_leaves_out_an_empty_system_prompt() -> None:
    roles = [m["role"] for m in messages_row(example(), Split.TRAIN)["messages"]]
    assert roles == ["user", "assistant"]


def test_prompt_completion_row() -> None:
    assert prompt_completion_row(example(), Split.TRAIN) == {
        "prompt": "Question q1?",
        "completion": "Reasoning.\n\nFinal answer: 72",
    }


def test_preference_row_rejects_the_model_answer() -> None:
    assert preference_row(example(rejected="It is 68."), Split.TRAIN) == {
        "prompt": "Question q1?",
        "chosen": "Reasoning.\n\nFinal answer: 72",
        "rejected": "It is 68.",
    }


def test_no_preference_row_without_a_model_answer() -> None:
    assert preference_row(example(rejected=None), Split.TRAIN) is None


def test_full_row_keeps_the_context() -> None:
    assert full_row(example(variant=2), Split.VALIDATION) == {
        "id": "q1~02",
        "split": "validation",
        "prompt": "Question q1?",
        "answer": "Reasoning.\n\nFinal answer: 72",
        "system": "",
        "rejected": "68",
        "case_id": "q1",
        "run_id": "run-1",
        "source": "augmented",
        "variant": 2,
        "verdict": {"passed": False, "answered": True, "prediction": "68"},
        "criteria": ["arithmetic"],
    }


def test_examples_come_back_by_split_then_id(tmp_path: Path) -> None:
    # given examples added in a scrambled order
    with scratch_db(tmp_path / "scratch.sqlite") as db:
        store = OrderedExamples(db)
        store.add(example("b"), Split.TEST)
        store.add(example("c"), Split.TRAIN)
        store.add(example("a", variant=1), Split.VALIDATION)
        store.add(example("a"), Split.TRAIN)
        # when they are read back
        order = [(split.value, e.example_id) for split, e in store.ordered()]
    # then train comes first, then validation, then test, each by example id
    assert order == [("train", "a~00"), ("train", "c~00"), ("validation", "a~01"), ("test", "b~00")]


def test_write_formats_counts_rows_per_file_and_split(tmp_path: Path) -> None:
    # given two train rows (one without a model answer) and one test row
    rows = [
        (Split.TRAIN, example("a")),
        (Split.TRAIN, example("b", rejected=None)),
        (Split.TEST, example("c")),
    ]
    # when the formats are written
    stats = write_formats(rows, tmp_path)
    # then each file holds its rows and the stats describe them exactly
    assert {name: s.rows for name, s in stats.items()} == {
        MESSAGES: 3,
        PROMPT_COMPLETION: 3,
        PREFERENCE: 2,
        ROWS: 3,
    }
    assert stats[PREFERENCE].split_rows == {"train": 1, "validation": 0, "test": 1}
    data = (tmp_path / ROWS).read_bytes()
    assert stats[ROWS].as_dict()["sha256"] == hashlib.sha256(data).hexdigest()
    assert stats[ROWS].as_dict()["bytes"] == len(data)
    assert [r["id"] for r in read(tmp_path / ROWS)] == ["a~00", "b~00", "c~00"]


def test_non_ascii_text_is_written_as_utf8(tmp_path: Path) -> None:
    turkish = example("ş").model_copy(update={"input": "Ardından kaç elma kaldı?"})
    write_formats([(Split.TRAIN, turkish)], tmp_path)
    assert "Ardından kaç elma kaldı?" in (tmp_path / PROMPT_COMPLETION).read_text(encoding="utf-8")
