"""No held-out case reaches a train or validation file, by id or by text, under any mix of examples."""

from __future__ import annotations

import json
import tempfile
import zipfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from benchgen.finetune.split import Split
from benchgen.training.examples import Kind, PreparedExample, text_hash
from benchgen.training.package import PackageRefused
from tests.unit.preparations import example, held, info, package_of, question, write_preparation

CASES = [f"c{n:02d}" for n in range(12)]


def _respaced(text: str, style: int) -> str:
    """The same text as a user might paste it: in other case or spacing (equal under text_hash)."""
    return [text, text.upper(), "  " + text.replace(" ", "\t ") + "\n"][style]


@st.composite
def preparations(draw: st.DrawFn) -> tuple[list[PreparedExample], list[str]]:
    """Examples of any cases in any split, some copying a held-out question's text, and the held-out ids."""
    held_out = draw(st.lists(st.sampled_from(CASES), unique=True, max_size=6))
    examples = [example("anchor", Split.TRAIN)]  # one clean train row: the row minimum never decides
    for case_id in draw(st.lists(st.sampled_from(CASES), unique=True, max_size=10)):
        split = draw(st.sampled_from(list(Split)))
        for variant in range(draw(st.integers(1, 3))):
            copied = draw(st.none() | st.sampled_from(CASES))  # a prompt that is another case's question
            prompt = question(case_id) if copied is None else _respaced(question(copied), variant)
            kind = draw(st.sampled_from([Kind.SEED, Kind.AUGMENTED, Kind.POOL]))
            examples.append(example(case_id, split, variant=variant, kind=kind, prompt=prompt))
    return examples, held_out


def _leaks(examples: list[PreparedExample], held_out: list[str]) -> bool:
    hashes = {text_hash(question(case_id)) for case_id in held_out}
    return any(
        e.split is not Split.TEST
        and (
            (e.kind is not Kind.POOL and e.source.case_id in held_out)
            or text_hash(e.prompt) in hashes
            or e.source_text_hash in hashes
        )
        for e in examples
    )


@settings(max_examples=80, deadline=None)
@given(preparations())
def test_held_out_cases_never_reach_training_files(drawn: tuple[list[PreparedExample], list[str]]) -> None:
    examples, held_out = drawn
    planted = _leaks(examples, held_out)
    with tempfile.TemporaryDirectory() as tmp:
        prep = write_preparation(Path(tmp) / "prep", examples, [held(case_id) for case_id in held_out])
        try:
            report = package_of(prep, info(), "trl-sft", Path(tmp) / "out")
        except PackageRefused as refused:
            # packaging refuses exactly when a held-out case was planted in training
            assert planted, str(refused)
            event("refused")
            assert "come from the held-out test cases" in str(refused)
            return
        assert not planted
        event("built")
        with zipfile.ZipFile(report.path) as archive:
            trained = [
                json.loads(line)
                for name in ("train.jsonl", "validation.jsonl")
                for line in archive.read(name).decode("utf-8").splitlines()
            ]
    held_hashes = {text_hash(question(case_id)) for case_id in held_out}
    for row in trained:
        user = next(m["content"] for m in row["messages"] if m["role"] == "user")
        assert text_hash(user) not in held_hashes
        assert not any(f"Case {case_id}:" in user for case_id in held_out)
