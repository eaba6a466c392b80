"""The four row formats and their order."""

from __future__ import annotations

import hashlib
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.finetune.formats import (
    FORMATS,
    MESSAGES,
    PREFERENCE,
    PROMPT_COMPLETION,
    ROWS,
    FileStats,
    full_row,
    messages_row,
    preference_row,
    prompt_completion_row,
    render,
)
from benchgen.finetune.seed import Example, Source, VerdictSummary
from benchgen.finetune.split import Split


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


def test_render_gives_each_format_its_line_and_no_preference_line_without_a_model_answer() -> None:
    # given a case the model answered and one it did not
    answered, silent = example("a"), example("b", rejected=None)
    # when each is rendered
    lines = dict(zip(FORMATS, render(answered, Split.TRAIN), strict=True))
    silent_lines = dict(zip(FORMATS, render(silent, Split.TEST), strict=True))
    # then every format holds its row as one compact JSON line, and the silent case has no preference row
    assert {name: json.loads(line) for name, line in lines.items()} == {
        MESSAGES: messages_row(answered, Split.TRAIN),
        PROMPT_COMPLETION: prompt_completion_row(answered, Split.TRAIN),
        PREFERENCE: preference_row(answered, Split.TRAIN),
        ROWS: full_row(answered, Split.TRAIN),
    }
    assert silent_lines[PREFERENCE] == b""
    assert json.loads(silent_lines[ROWS])["split"] == "test"


@settings(max_examples=200, deadline=None)
@given(text=st.text(), system=st.text(), rejected=st.none() | st.text())
def test_lines_are_the_bytes_the_stdlib_encoder_writes(text: str, system: str, rejected: str | None) -> None:
    # given an example whose texts hold anything (control characters, quotes, non-ASCII, astral planes)
    row = example(system=system, rejected=rejected).model_copy(update={"input": text, "target": text[::-1]})
    # when it is rendered
    lines = render(row, Split.VALIDATION)
    # then each line is exactly what json.dumps writes: compact, UTF-8, one line
    for make, line in zip(FORMATS.values(), lines, strict=True):
        expected = make(row, Split.VALIDATION)
        assert line == (
            b""
            if expected is None
            else (json.dumps(expected, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        )


def test_non_ascii_text_is_written_as_utf8() -> None:
    turkish = example("ş").model_copy(update={"input": "Ardından kaç elma kaldı?"})
    line = dict(zip(FORMATS, render(turkish, Split.TRAIN), strict=True))[PROMPT_COMPLETION]
    assert "Ardından kaç elma kaldı?".encode() in line


def test_file_stats_describe_the_bytes_they_were_given() -> None:
    # given two chunks of train rows and one of test rows
    stats = FileStats()
    chunks = [
        (b'{"a":1}\n{"a":2}\n', Split.TRAIN, 2),
        (b'{"a":3}\n', Split.TRAIN, 1),
        (b'{"b":1}\n', Split.TEST, 1),
    ]
    # when they are added
    for chunk, split, rows in chunks:
        stats.add(chunk, split, rows)
    # then the manifest entry counts them and hashes them as one file
    data = b"".join(chunk for chunk, _, _ in chunks)
    assert stats.as_dict() == {
        "sha256": hashlib.sha256(data).hexdigest(),
        "rows": 4,
        "bytes": len(data),
        "split_rows": {"train": 3, "validation": 0, "test": 1},
    }
