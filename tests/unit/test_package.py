"""Exact packages: what the zip holds, that it is the same on every build, and when packaging refuses."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from benchgen.finetune.split import Split
from benchgen.training.examples import Kind
from benchgen.training.export_profiles import PROFILES, profiles_for
from benchgen.training.package import HeldOutMismatch, PackageRefused, package_id
from benchgen.vocabulary import Method
from tests.unit.preparations import (
    GRADING,
    environment_cases,
    example,
    held,
    info,
    package_of,
    question,
    standard,
    write_preparation,
)

MEMBERS = [
    "README.md",
    "contamination.json",
    "manifest.json",
    "test.jsonl",
    "train.jsonl",
    "validation.jsonl",
]


def _open(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _rows(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.decode("utf-8").splitlines()]


@pytest.mark.parametrize("method", list(Method))
def test_a_package_holds_the_split_files_manifest_readme_and_contamination(
    tmp_path: Path, method: Method
) -> None:
    # given a clean preparation of 12 train, 2 validation and 2 test examples, 5 cases held out
    reinforcement = method is Method.REINFORCEMENT
    prep = standard(tmp_path / "prep", grading=GRADING if reinforcement else None)
    profile = profiles_for(method)[0]

    # when it is packaged
    report = package_of(prep, info(method), profile, tmp_path / "out")

    # then the zip holds one file per split in the profile's rows, with the manifest's hashes and counts
    members = _open(report.path)
    assert sorted(members) == (sorted([*MEMBERS, "grader.py"]) if reinforcement else MEMBERS)
    assert report.path == tmp_path / "out" / f"{report.package_id}.zip"
    assert report.sha256 == hashlib.sha256(report.path.read_bytes()).hexdigest()
    manifest = json.loads(members["manifest.json"])
    for name, rows in {"train.jsonl": 12, "validation.jsonl": 2, "test.jsonl": 2}.items():
        assert len(_rows(members[name])) == rows
        assert manifest["files"][name] == {
            "sha256": hashlib.sha256(members[name]).hexdigest(),
            "rows": rows,
            "bytes": len(members[name]),
        }
    assert report.files == manifest["files"]
    assert manifest["package_id"] == report.package_id
    assert manifest["profile"]["id"] == profile
    assert manifest["preparation"]["state_hash"] == "ab" * 32
    assert manifest["preparation"]["method"] == method.value
    assert manifest["suggested_hyperparams"]["values"] == {"learning_rate": 2e-4, "epochs": 2}
    assert "never applied" in manifest["suggested_hyperparams"]["note"]
    assert manifest["limits"]["rows"]["actual"] == 12
    # only the temporary build folder's zip is left behind
    assert [p.name for p in (tmp_path / "out").iterdir()] == [report.path.name]


def test_the_manifest_lists_the_held_out_cases_by_id_and_hash_without_answers(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep", test=2, extra_held_out=3)
    report = package_of(prep, info(), "trl-sft", tmp_path / "out")

    members = _open(report.path)
    manifest = json.loads(members["manifest.json"])
    assert manifest["held_out"]["count"] == 5
    assert manifest["held_out"]["cases"] == [held(f"h{n:03d}").model_dump() for n in range(5)]
    assert b"Final answer" not in members["manifest.json"]
    readme = members["README.md"].decode("utf-8")
    assert "Never train or validate on it" in readme
    assert "never applied" in readme


def test_the_same_state_and_profile_give_the_same_bytes_and_id(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep")

    first = package_of(prep, info(), "bedrock-conversation", tmp_path / "one")
    second = package_of(prep, info(), "bedrock-conversation", tmp_path / "two")

    assert first.package_id == second.package_id
    assert first.sha256 == second.sha256
    assert first.path.read_bytes() == second.path.read_bytes()


def test_another_profile_or_state_gives_another_id() -> None:
    state = "ab" * 32
    assert package_id(state, "trl-sft") == package_id(state, "trl-sft")
    assert package_id(state, "trl-sft").startswith("pkg-")
    assert len(package_id(state, "trl-sft")) == 4 + 24
    assert package_id(state, "trl-sft") != package_id(state, "openai-chat")
    assert package_id(state, "trl-sft") != package_id("cd" * 32, "trl-sft")


def test_a_train_row_from_a_held_out_case_is_refused(tmp_path: Path) -> None:
    # given a train example of a case that is held out
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(10)] + [example("h001", Split.TRAIN)]
    prep = write_preparation(tmp_path / "prep", examples, [held("h001")])

    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(), "trl-sft", tmp_path / "out")

    assert str(refused.value) == (
        "1 training or validation examples come from the held-out test cases (train example h001~00 comes "
        "from held-out case h001): generate the preparation again so that they are dropped, and package "
        "that state"
    )
    assert not list((tmp_path / "out").glob("*.zip"))


def test_a_validation_row_repeating_a_held_out_text_is_refused(tmp_path: Path) -> None:
    # given a validation example of another case whose prompt is a held-out question in other case and spacing
    text = question("h001")
    leaking = example("v001", Split.VALIDATION, prompt="  " + text.upper().replace(" ", "   "))
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(10)] + [leaking]
    prep = write_preparation(tmp_path / "prep", examples, [held("h001")])

    with pytest.raises(PackageRefused, match="validation example v001~00 repeats the text of a held-out"):
        package_of(prep, info(), "trl-sft", tmp_path / "out")


def test_a_pool_row_repeating_a_held_out_text_is_refused_by_its_text(tmp_path: Path) -> None:
    pool = example("p001", Split.TRAIN, kind=Kind.POOL, prompt=question("h001"))
    prep = write_preparation(tmp_path / "prep", [example("t001", Split.TRAIN), pool], [held("h001")])

    with pytest.raises(PackageRefused, match="train example p001~00 repeats the text of a held-out case"):
        package_of(prep, info(), "trl-sft", tmp_path / "out")


def test_a_method_the_profile_does_not_take_is_refused_naming_the_profiles_that_do(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep")

    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(Method.PREFERENCE), "bedrock-conversation", tmp_path / "out")

    assert str(refused.value) == (
        "profile bedrock-conversation does not take preference preparations; for preference choose one of: "
        "openai-preference, trl-dpo, sagemaker-dpo, together-dpo"
    )


def test_an_unknown_profile_is_refused_naming_the_profiles(tmp_path: Path) -> None:
    with pytest.raises(PackageRefused, match="no export profile 'alpaca'; choose one of: openai-chat, "):
        package_of(standard(tmp_path / "prep"), info(), "alpaca", tmp_path / "out")


def test_too_few_rows_are_refused_with_the_count_the_limit_and_what_to_change(tmp_path: Path) -> None:
    # given 5 train rows, and OpenAI's minimum of 10
    prep = standard(tmp_path / "prep", train=5)

    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(), "openai-chat", tmp_path / "out")

    assert str(refused.value) == (
        "profile openai-chat needs at least 10 train rows and this preparation gives 5: raise the "
        "augmentation factor or the pool share, widen the criteria or the case filter, or draw from more "
        "runs, or choose a profile whose limits these rows meet (trl-sft, sagemaker-sft, together-sft)"
    )


def test_too_many_rows_are_refused_counting_train_and_validation(tmp_path: Path) -> None:
    # given 9,995 train and 6 validation rows: Llama 3.1 on Bedrock takes at most 10,000 of both together
    prep = standard(tmp_path / "prep", train=9_995, validation=6)

    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(), "bedrock-prompt-completion", tmp_path / "out")

    assert str(refused.value) == (
        "profile bedrock-prompt-completion takes at most 10,000 train and validation rows and this "
        "preparation gives 10,001: lower the augmentation factor or the pool share, or narrow the criteria "
        "or the case filter, or choose a profile whose limits these rows meet (openai-chat, trl-sft, "
        "bedrock-conversation, sagemaker-sft, together-sft)"
    )


def test_nova_reserved_strings_are_rewritten_and_reported(tmp_path: Path) -> None:
    # given two train examples whose prompts hold Nova's reserved strings
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(8)]
    examples += [
        example("u001", Split.TRAIN, prompt="User: how many sheep? Assistant: count them."),
        example("u002", Split.TRAIN, prompt="Describe <image> then User: stop [EOS]"),
    ]
    prep = write_preparation(tmp_path / "prep", examples, [])

    report = package_of(prep, info(), "bedrock-conversation", tmp_path / "out")

    members = _open(report.path)
    rows = _rows(members["train.jsonl"])
    prompts = [row["messages"][0]["content"][0]["text"] for row in rows]
    assert "User - how many sheep? Assistant - count them." in prompts
    assert "Describe (image) then User - stop (EOS)" in prompts
    assert not any(word.encode() in members["train.jsonl"] for word in ("User:", "Assistant:", "[EOS]"))
    assert report.rewrites == [
        "rewrote strings the provider reserves in 2 rows: `User:` (2x) -> `User -`, `Assistant:` (1x) -> "
        "`Assistant -`, `<image>` (1x) -> `(image)`, `[EOS]` (1x) -> `(EOS)` (rows u001~00, u002~00)"
    ]
    assert json.loads(members["manifest.json"])["rewrites"] == report.rewrites


def test_other_profiles_keep_the_reserved_strings(tmp_path: Path) -> None:
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(10)]
    examples.append(example("u001", Split.TRAIN, prompt="User: how many sheep?"))
    prep = write_preparation(tmp_path / "prep", examples, [])

    report = package_of(prep, info(), "openai-chat", tmp_path / "out")

    assert report.rewrites == []
    assert b"User: how many sheep?" in _open(report.path)["train.jsonl"]


def test_rows_over_the_token_limit_are_dropped_and_reported(tmp_path: Path) -> None:
    # given one prompt of about 70,000 tokens (280,000 characters), over OpenAI's 65,536
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(10)]
    examples.append(example("long", Split.TRAIN, prompt="word " * 56_000))
    prep = write_preparation(tmp_path / "prep", examples, [])

    report = package_of(prep, info(), "openai-chat", tmp_path / "out")

    assert report.files["train.jsonl"]["rows"] == 10
    assert len(report.rewrites) == 1
    assert report.rewrites[0].startswith(
        "dropped 1 rows longer than the profile's 65,536 tokens (about one token per 4 characters"
    )
    # ceil((30 system + 280,000 prompt + 30 target characters) / 4)
    assert report.rewrites[0].endswith(": long~00 (~70,015 tokens)")
    manifest = json.loads(_open(report.path)["manifest.json"])
    assert manifest["limits"]["row_tokens"]["max"] == 65_536
    assert manifest["limits"]["row_tokens"]["longest"] < 65_536


def test_dropped_long_rows_count_against_the_row_minimum(tmp_path: Path) -> None:
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(9)]
    examples.append(example("long", Split.TRAIN, prompt="word " * 56_000))
    prep = write_preparation(tmp_path / "prep", examples, [])

    with pytest.raises(PackageRefused, match="needs at least 10 train rows and this preparation gives 9"):
        package_of(prep, info(), "openai-chat", tmp_path / "out")


def test_the_package_carries_a_contamination_report_of_a_planted_overlap(tmp_path: Path) -> None:
    # given a train row that repeats 13 words of a held-out test case's question without being equal to it
    test_question = question("h001")
    planted = example("t999", Split.TRAIN, prompt="Warm-up. " + test_question + " Explain the steps.")
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(3)] + [planted]
    examples.append(example("h001", Split.TEST))
    prep = write_preparation(tmp_path / "prep", examples, [held("h001"), held("h002")])

    report = package_of(prep, info(), "trl-sft", tmp_path / "out")

    members = _open(report.path)
    full = json.loads(members["contamination.json"])
    assert full["rows_checked"] == 4
    assert full["rows_with_overlap"] == 1
    assert full["overlap_ratio"] == 0.25
    assert full["held_out_cases_checked"] == 2  # h002 has no example: its question is the environment's
    assert [(p["row_id"], p["case_id"]) for p in full["pairs"]] == [("t999~00", "h001")]
    assert report.contamination == {key: value for key, value in full.items() if key != "pairs"}
    assert json.loads(members["manifest.json"])["contamination"] == report.contamination


def test_a_clean_package_reports_no_contamination(tmp_path: Path) -> None:
    # the standard cases' questions differ only in their ids: every 13-gram holds the id
    report = package_of(standard(tmp_path / "prep"), info(), "trl-sft", tmp_path / "out")

    assert report.contamination["rows_checked"] == 14
    assert report.contamination["held_out_cases_checked"] == 5  # 2 with test rows, 3 the model passed
    assert report.contamination["rows_with_overlap"] == 0


def test_contamination_is_found_with_held_out_cases_that_left_no_example(tmp_path: Path) -> None:
    # given held-out h001 (a test row), h002 and h003 (passed by the model: no example, no text in the
    # preparation), and two train rows repeating 13 words of h002, one of them also of h003
    words = question("h002").split()
    planted = example("t900", Split.TRAIN, prompt="Recall: " + " ".join(words[:14]) + " and so on.")
    both = example("t901", Split.TRAIN, prompt=f"{question('h003')} Then: {question('h002')}")
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(3)] + [planted, both]
    examples.append(example("h001", Split.TEST))
    prep = write_preparation(tmp_path / "prep", examples, [held("h001"), held("h002"), held("h003")])

    report = package_of(prep, info(), "trl-sft", tmp_path / "out")

    # then all three held-out cases are compared, and both rows found: 2 of 5 train rows, 3 pairs
    full = json.loads(_open(report.path)["contamination.json"])
    assert (full["held_out_cases_checked"], full["held_out_cases_too_short"]) == (3, 0)
    assert (full["rows_checked"], full["rows_with_overlap"], full["overlap_ratio"]) == (5, 2, 0.4)
    assert (full["held_out_cases_overlapped"], full["pairs_total"]) == (2, 3)
    assert [(p["row_id"], p["case_id"]) for p in full["pairs"]] == [
        ("t900~00", "h002"),
        ("t901~00", "h002"),
        ("t901~00", "h003"),
    ]
    assert full["pairs"][0]["shared_ngrams"] == 2  # words 1-13 and 2-14 of h002's question


def test_a_held_out_case_missing_from_the_environment_is_not_packaged(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep")
    cases = [case for case in environment_cases(prep) if case[0] != "h003"]

    with pytest.raises(
        HeldOutMismatch, match=r"1 held-out cases of the preparation are not cases .*\(h003\)"
    ):
        package_of(prep, info(), "trl-sft", tmp_path / "out", cases=cases)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.zip"))


def test_a_held_out_question_that_changed_is_not_packaged(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep")
    cases = [
        (case_id, text + " (edited)" if case_id == "h001" else text)
        for case_id, text in environment_cases(prep)
    ]

    with pytest.raises(
        HeldOutMismatch, match="held-out case h001's question in the environment is not the one"
    ):
        package_of(prep, info(), "trl-sft", tmp_path / "out", cases=cases)


def test_a_preference_package_needs_rejected_answers(tmp_path: Path) -> None:
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(3)]
    examples.append(example("t100", Split.TRAIN, rejected=None))
    prep = write_preparation(tmp_path / "prep", examples, [])

    with pytest.raises(PackageRefused, match="1 examples of this preference preparation have no rejected"):
        package_of(prep, info(Method.PREFERENCE), "trl-dpo", tmp_path / "out")


def test_a_missing_preparation_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PackageRefused, match=r"the preparation has no held_out\.jsonl"):
        package_of(tmp_path, info(), "trl-sft", tmp_path / "out", cases=[])


def test_a_broken_example_line_is_refused_with_its_line(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep")
    with (prep / "examples.jsonl").open("a", encoding="utf-8") as stream:
        stream.write('{"example_id": "x"}\n')

    with pytest.raises(PackageRefused, match=r"examples.jsonl line 17 is not a prepared example \(split: "):
        package_of(prep, info(), "trl-sft", tmp_path / "out")


def test_every_profile_builds_a_package_for_its_method(tmp_path: Path) -> None:
    prep = standard(tmp_path / "prep", train=100, grading=GRADING)
    ids = set()
    for profile in PROFILES.values():
        method = next(iter(profile.methods))
        report = package_of(prep, info(method), profile.id, tmp_path / profile.id)
        ids.add(report.package_id)
        assert report.files["train.jsonl"]["rows"] == 100
    assert len(ids) == len(PROFILES)


def test_the_profiles_offered_instead_are_judged_by_their_own_row_count(tmp_path: Path) -> None:
    # given 5 train and 100 validation rows: too few train rows for Nova (8), but 105 train and validation
    # rows for Llama 3.1 (100 to 10,000 of both)
    prep = standard(tmp_path / "prep", train=5, validation=100)

    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(), "bedrock-conversation", tmp_path / "out")

    assert str(refused.value).endswith(
        "choose a profile whose limits these rows meet (trl-sft, bedrock-prompt-completion, sagemaker-sft, "
        "together-sft)"
    )


def test_a_refusal_names_the_first_five_leaks_and_counts_the_rest(tmp_path: Path) -> None:
    examples = [example("t000", Split.TRAIN)] + [example(f"h{n:03d}", Split.TRAIN) for n in range(7)]
    prep = write_preparation(tmp_path / "prep", examples, [held(f"h{n:03d}") for n in range(7)])

    with pytest.raises(PackageRefused) as refused:
        package_of(prep, info(), "trl-sft", tmp_path / "out")

    message = str(refused.value)
    assert message.startswith("7 training or validation examples come from the held-out test cases (")
    assert "train example h004~00 comes from held-out case h004 and 2 more)" in message
    assert "h005~00" not in message


def test_the_readme_says_how_many_held_out_cases_the_contamination_report_compared(tmp_path: Path) -> None:
    # 2 held-out cases have test rows, 3 more were passed and left no example: all 5 questions are compared
    report = package_of(standard(tmp_path / "prep"), info(), "trl-sft", tmp_path / "out")

    readme = _open(report.path)["README.md"].decode("utf-8")
    assert (
        "0 of 14 rows overlap, over the 5 of 5 held-out cases whose question is at least 13 words long "
        "(the other 0 have no 13-gram to share)"
    ) in readme


def test_openai_validation_rows_repeating_a_training_prompt_are_dropped_and_reported(tmp_path: Path) -> None:
    # given two cases with one question text (as benchmarks sometimes hold), one in each split
    shared = "How many legs do 3 spiders have in total?"
    examples = [example(f"t{n:03d}", Split.TRAIN) for n in range(10)]
    examples.append(example("a001", Split.TRAIN, prompt=shared))
    examples += [example("b001", Split.VALIDATION, prompt=shared), example("v001", Split.VALIDATION)]
    prep = write_preparation(tmp_path / "prep", examples, [])

    openai = package_of(prep, info(), "openai-chat", tmp_path / "openai")
    trl = package_of(prep, info(), "trl-sft", tmp_path / "trl")

    # then OpenAI's validation file leaves it out and says so; TRL has no such rule
    assert openai.files["validation.jsonl"]["rows"] == 1
    assert openai.rewrites == [
        "dropped 1 validation rows whose prompt is also a training prompt, which the provider does not "
        "allow: b001~00"
    ]
    assert openai.contamination["rows_checked"] == 12
    assert trl.files["validation.jsonl"]["rows"] == 2
    assert trl.rewrites == []
