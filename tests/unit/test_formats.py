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
    family_pieces,
    format_lines,
    pieces,
    sizes,
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


def line_of(name: str, row: Example, split: Split) -> bytes:
    return b"".join(format_lines(FORMATS.index(name), [pieces(row)], split))


def row_of(name: str, row: Example, split: Split) -> dict[str, object] | None:
    line = line_of(name, row, split)
    return json.loads(line) if line else None


def messages_row(row: Example, split: Split) -> dict[str, object] | None:
    return row_of(MESSAGES, row, split)


def prompt_completion_row(row: Example, split: Split) -> dict[str, object] | None:
    return row_of(PROMPT_COMPLETION, row, split)


def preference_row(row: Example, split: Split) -> dict[str, object] | None:
    return row_of(PREFERENCE, row, split)


def full_row(row: Example, split: Split) -> dict[str, object] | None:
    return row_of(ROWS, row, split)


def test_messages_row_has_system_user_and_assistant() -> None:
    assert messages_row(example(system="Be careful."), Split.TRAIN) == {
        "messages": [
            {"role": "system", "content": "Be careful."},
            {"role": "user", "content": "Question q1?"},
            {"role": "assistant", "content": "Reasoning.\n\nFinal answer: 72"},
        ]
    }


def test_messages_row_leaves_out_an_empty_system_prompt() -> None:
    row = messages_row(example(), Split.TRAIN)
    assert row is not None
    roles = [m["role"] for m in row["messages"]]  # type: ignore[attr-defined]
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


def expected_rows(row: Example, split: Split) -> list[dict[str, object] | None]:
    """Each format's row as a dict, in ``FORMATS`` order: what the lines must say."""
    system = [{"role": "system", "content": row.system}] if row.system else []
    user = [{"role": "user", "content": row.input}, {"role": "assistant", "content": row.target}]
    full: dict[str, object] = {
        "id": row.example_id,
        "split": split.value,
        "prompt": row.input,
        "answer": row.target,
        "system": row.system,
    }
    if row.rejected is not None:
        full["rejected"] = row.rejected
    full |= {
        "case_id": row.case_id,
        "run_id": row.run_id,
        "source": row.source.value,
        "variant": row.variant,
        "verdict": row.verdict.model_dump() if row.verdict else None,
        "criteria": row.criteria,
    }
    return [
        {"messages": system + user},
        None
        if row.rejected is None
        else {"prompt": row.input, "chosen": row.target, "rejected": row.rejected},
        {"prompt": row.input, "completion": row.target},
        full,
    ]


def lines_and_stdlib_lines(parts: list[bytes], row: Example, split: Split) -> tuple[list[bytes], list[bytes]]:
    """Each format's line put together from ``parts``, and what json.dumps writes of ``row`` in it
    (compact, UTF-8, one line; empty where the format has no row)."""
    lines = [b"".join(format_lines(which, [parts], split)) for which in range(len(FORMATS))]
    expected = [
        b""
        if shown is None
        else (json.dumps(shown, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        for shown in expected_rows(row, split)
    ]
    return lines, expected


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(),
    system=st.text(),
    rejected=st.none() | st.text(),
    split=st.sampled_from(list(Split)),
    pool=st.booleans(),
)
def test_lines_are_the_bytes_the_stdlib_encoder_writes(
    text: str, system: str, rejected: str | None, split: Split, pool: bool
) -> None:
    # given an example whose texts hold anything (control characters, quotes, non-ASCII, astral planes)
    row = example(system=system, rejected=rejected).model_copy(update={"input": text, "target": text[::-1]})
    if pool:
        row = row.model_copy(update={"source": Source.POOL, "verdict": None, "rejected": None})
    # when each format's line is put together from its pieces
    parts = pieces(row)
    lines, expected = lines_and_stdlib_lines(parts, row, split)
    # then each is exactly what json.dumps writes of the row (compact, UTF-8, one line), and its length
    # is known beforehand
    assert lines == expected
    assert sizes([parts], split) == ([1 if line else 0 for line in lines], list(map(len, lines)))


@settings(max_examples=200, deadline=None)
@given(
    case_id=st.text(min_size=1),
    variants=st.lists(st.tuples(st.text(), st.text()), max_size=4),
    rejected=st.none() | st.text(),
    criteria=st.lists(st.text(), max_size=2),
    split=st.sampled_from(list(Split)),
)
def test_a_seed_and_its_variants_encoded_together_are_each_the_bytes_the_stdlib_encoder_writes(
    case_id: str,
    variants: list[tuple[str, str]],
    rejected: str | None,
    criteria: list[str],
    split: Split,
) -> None:
    # given a seed whose ids and texts hold anything, and variants with their own input and system prompt
    seed = example(case_id, rejected=rejected).model_copy(update={"criteria": criteria})
    # when the family's pieces are encoded at once, sharing what the variants share
    family = family_pieces(seed, variants)
    # then each member's lines are what json.dumps writes of that example on its own
    rows = [seed] + [
        seed.model_copy(
            update={
                "example_id": f"{case_id}~{n:02d}",
                "source": Source.AUGMENTED,
                "variant": n,
                "input": text,
                "system": system,
            }
        )
        for n, (text, system) in enumerate(variants, start=1)
    ]
    assert len(family) == len(rows)
    written = [0] * len(FORMATS)
    for parts, row in zip(family, rows, strict=True):
        lines, expected = lines_and_stdlib_lines(parts, row, split)
        assert lines == expected
        written = [total + len(line) for total, line in zip(written, lines, strict=True)]
    # and the family's rows and bytes per format are known without building its lines
    counted = [len(family), len(family) if rejected is not None else 0, len(family), len(family)]
    assert sizes(family, split) == (counted, written)


def test_non_ascii_text_is_written_as_utf8() -> None:
    turkish = example("ş").model_copy(update={"input": "Ardından kaç elma kaldı?"})
    assert "Ardından kaç elma kaldı?".encode() in line_of(PROMPT_COMPLETION, turkish, Split.TRAIN)


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
