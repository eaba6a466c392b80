"""Seed and pool examples: the question in, reasoning plus the benchmark's answer out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchgen.bundle.spec import SelectionCriterion
from benchgen.cases import CaseText
from benchgen.finetune.seed import (
    Example,
    Source,
    case_text,
    example_id,
    pool_example,
    pool_rows,
    seed_example,
    select,
    short_reasoning,
    source_case_id,
    target_template,
)
from benchgen.finetune.store import choose_pool_rows, scratch_db
from benchgen.verdicts import CriterionResult, Verdict

EN = target_template({}, "en")


def wrong(case_id: str = "q1", **fields: object) -> Verdict:
    values: dict[str, object] = {
        "case_id": case_id,
        "question": "How many?",
        "gold": "72",
        "prediction": "68",
        "raw_prediction": "I think it is 68.",
        "passed": False,
        "answered": True,
    }
    values.update(fields)
    return Verdict.model_validate(values)


def build(verdict: Verdict, text: CaseText, *, template: str = EN, language: str = "en") -> Example:
    return seed_example(
        verdict,
        text,
        source=Source.SEED,
        run_id="run-1",
        template=template,
        language=language,
        system="You solve math.",
        default_criteria=["arithmetic"],
    )


TEXT = CaseText(
    question="Natalia sold 48 clips in April and half as many in May. How many in total?",
    answer="72",
    solution=(
        "Natalia sold 48/2 = <<48/2=24>>24 clips in May. She sold 48+24 = <<48+24=72>>72 clips.\n#### 72"
    ),
)


@pytest.mark.parametrize(
    ("passed", "near_miss", "criterion", "expected"),
    [
        (False, False, SelectionCriterion.WRONG_PLUS_AUGMENTED, Source.SEED),
        (True, False, SelectionCriterion.WRONG_PLUS_AUGMENTED, None),
        (True, True, SelectionCriterion.WRONG_PLUS_AUGMENTED, None),
        (True, False, SelectionCriterion.ALL_ITEMS, Source.PASSED),
        (False, False, SelectionCriterion.ALL_ITEMS, Source.SEED),
        (True, True, SelectionCriterion.FAILED_AND_NEAR_MISS, Source.NEAR_MISS),
        (True, False, SelectionCriterion.FAILED_AND_NEAR_MISS, None),
        (False, True, SelectionCriterion.FAILED_AND_NEAR_MISS, Source.SEED),
    ],
)
def test_selection_criterion_decides_each_case_layer(
    passed: bool, near_miss: bool, criterion: SelectionCriterion, expected: Source | None
) -> None:
    assert select(wrong(passed=passed, near_miss=near_miss), criterion) is expected


def test_seed_target_is_solution_reasoning_and_gold_answer() -> None:
    example = build(wrong(), TEXT)
    assert example.target == (
        "Natalia sold 48/2 = 24 clips in May. She sold 48+24 = 72 clips.\n\nFinal answer: 72"
    )


def test_seed_target_never_holds_the_model_prediction() -> None:
    example = build(wrong(prediction="68", raw_prediction="The total is 68."), TEXT)
    assert "68" not in example.target
    assert example.rejected == "The total is 68."


def test_seed_keeps_question_context_and_criteria() -> None:
    verdict = wrong(criteria=[CriterionResult(id="units", passed=False)])
    example = build(verdict, TEXT)
    assert example.model_dump() == {
        "example_id": "q1~00",
        "case_id": "q1",
        "run_id": "run-1",
        "source": Source.SEED,
        "variant": 0,
        "input": TEXT.question,
        "target": example.target,
        "system": "You solve math.",
        "rejected": "I think it is 68.",
        "verdict": {"passed": False, "answered": True, "prediction": "68"},
        "criteria": ["units"],
    }


def test_seed_without_judged_criteria_takes_the_benchmark_criteria() -> None:
    assert build(wrong(), TEXT).criteria == ["arithmetic"]


def test_unanswered_case_has_no_rejected_output() -> None:
    example = build(wrong(prediction=None, raw_prediction="", answered=False), TEXT)
    assert example.rejected is None


def test_turkish_default_target_ends_with_cevap() -> None:
    text = CaseText(question="5 elma ve 3 armut kaç meyve eder?", answer="8")
    example = build(wrong(gold="8"), text, template=target_template({}, "tr"), language="tr")
    assert example.target == "Soruyu adım adım çözünce aşağıdaki sonuca ulaşılır.\n\nCevap: 8"


def test_bundle_template_may_hold_its_own_braces() -> None:
    template = target_template({"en": "{reasoning} So the answer is $\\boxed{{answer}}$."}, "en")
    example = build(wrong(), CaseText(question="q?", answer="72", solution="Add them."), template=template)
    assert example.target == "Add them. So the answer is $\\boxed{72}$."


def test_long_solutions_are_trimmed_to_four_sentences() -> None:
    solution = "One. Two. Three. Four. Five. Six."
    assert short_reasoning(solution, "en") == "One. Two. Three. Four."


def test_missing_solution_gives_a_neutral_reasoning_sentence() -> None:
    assert short_reasoning(None, "en") == "Working through the question step by step gives the result below."


def test_reference_text_wins_over_the_verdict_copy() -> None:
    reference = CaseText(question="Reference question?", answer="72", solution="Because.")
    assert case_text(wrong(question="Verdict question?"), reference) == reference


def test_verdict_text_is_used_when_the_reference_has_none() -> None:
    text = case_text(wrong(question="Verdict question?", solution="Work."), None)
    assert text == CaseText(question="Verdict question?", answer="72", solution="Work.")


def test_case_without_any_question_is_left_out() -> None:
    assert case_text(wrong(question=""), None) is None


def write_pool(path: Path, rows: int) -> Path:
    with path.open("w", encoding="utf-8") as out:
        for i in range(rows):
            out.write(
                json.dumps({"id": f"p{i}", "question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n"
            )
    return path


def pool_examples(path: Path, count: int) -> list[Example]:
    """The pool examples a build would add: ``count`` rows chosen on disk, each made an example."""
    with scratch_db(path.with_suffix(".sqlite")) as db:
        return [
            pool_example(row_id, row, run_id="r", template=EN, language="en", system="")
            for row_id, row in choose_pool_rows(db, pool_rows(path), count)
        ]


def test_pool_gives_the_requested_number_of_rows(tmp_path: Path) -> None:
    pool = write_pool(tmp_path / "pool.jsonl", 50)
    rows = pool_examples(pool, 7)
    assert len(rows) == 7
    assert {row.source for row in rows} == {Source.POOL}
    assert all(row.target.endswith(f"Final answer: {int(row.case_id[1:]) + 1}") for row in rows)


def test_pool_choice_is_stable_and_independent_of_row_order(tmp_path: Path) -> None:
    pool = write_pool(tmp_path / "pool.jsonl", 50)
    lines = pool.read_text(encoding="utf-8").splitlines()
    reversed_pool = tmp_path / "reversed.jsonl"
    reversed_pool.write_text("\n".join(reversed(lines)) + "\n", encoding="utf-8")
    first = pool_examples(pool, 10)
    second = pool_examples(reversed_pool, 10)
    assert sorted(e.case_id for e in first) == sorted(e.case_id for e in second)


def test_pool_request_is_capped_at_the_pool_size(tmp_path: Path) -> None:
    pool = write_pool(tmp_path / "pool.jsonl", 3)
    assert len(pool_examples(pool, 10)) == 3


def test_pool_keeps_the_first_row_of_a_repeated_id(tmp_path: Path) -> None:
    # given a pool where one id appears twice, and a row without a question before the first of them
    pool = tmp_path / "pool.jsonl"
    rows = [
        {"id": "p1", "question": ""},
        {"id": "p1", "question": "First?"},
        {"id": "p1", "question": "Later?"},
    ]
    pool.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    # when the pool is chosen from
    chosen = pool_examples(pool, 5)
    # then the id is chosen once, with the first row that has a question
    assert [(e.case_id, e.input) for e in chosen] == [("p1", "First?")]


def test_a_count_of_zero_chooses_nothing_and_reads_no_pool(tmp_path: Path) -> None:
    broken = tmp_path / "pool.jsonl"
    broken.write_text("not json\n", encoding="utf-8")
    assert pool_examples(broken, 0) == []


def test_an_example_id_leads_back_to_its_source_case() -> None:
    assert source_case_id(example_id("gsm-001", 0)) == "gsm-001"
    assert source_case_id(example_id("gsm~7", 12)) == "gsm~7"
    assert source_case_id("tr-000004") == "tr-000004"  # a plain case id is its own source
