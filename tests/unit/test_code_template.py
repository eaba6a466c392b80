"""The code template: unified diffs parsed and applied in pure Python, then the case's tests run."""

from __future__ import annotations

import difflib
from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.scoring.code import CodeAggregator, make_judge
from benchgen.scoring.patch import PatchError, apply_patch, parse_diff
from benchgen.scoring.templates import Judge

SOURCE = "def add(a, b):\n    return a - b\n\n\ndef twice(x):\n    return 2 * x\n"
TEST = "from calc import add\n\nassert add(2, 3) == 5\nprint('ok')\n"
GOOD_DIFF = """diff --git a/calc.py b/calc.py
--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""
WRONG_FIX = GOOD_DIFF.replace("return a + b", "return a * b")
STALE_DIFF = GOOD_DIFF.replace("return a - b", "return b - a")


@pytest.fixture
def case() -> Case:
    return Case(
        id="fix-add",
        question="add() subtracts",
        files={"calc.py": SOURCE, "test_calc.py": TEST},
        test_command="python test_calc.py",
    )


@pytest.fixture
def judge(tmp_path: Path) -> Judge:
    return make_judge(time_limit=30, workdir=tmp_path)


def test_a_good_diff_applies_and_resolves_the_case(case: Case, judge: Judge) -> None:
    verdict = judge(case, Prediction(id="fix-add", prediction_text=GOOD_DIFF), [])
    assert (verdict.answered, verdict.passed, verdict.detail) == (True, True, "tests passed")


def test_a_diff_in_a_markdown_fence_is_accepted(case: Case, judge: Judge) -> None:
    text = f"Here is the fix:\n```diff\n{GOOD_DIFF}```\n"
    assert judge(case, Prediction(id="fix-add", prediction_text=text), []).passed


def test_a_diff_that_applies_but_fails_the_tests_is_a_near_miss(case: Case, judge: Judge) -> None:
    verdict = judge(case, Prediction(id="fix-add", prediction_text=WRONG_FIX), [])
    assert (verdict.answered, verdict.passed, verdict.near_miss) == (True, False, True)
    assert verdict.detail.startswith("tests failed (exit 1)")


def test_a_case_whose_test_command_has_unbalanced_quotes_fails_alone(case: Case, judge: Judge) -> None:
    broken = msgspec.structs.replace(case, test_command="python -c 'import calc")
    verdict = judge(broken, Prediction(id="fix-add", prediction_text=GOOD_DIFF), [])
    assert (verdict.answered, verdict.passed) == (True, False)
    assert verdict.detail.startswith("the case's test_command cannot be split into words")


def test_a_diff_that_does_not_apply_is_a_patch_but_not_resolved(case: Case, judge: Judge) -> None:
    verdict = judge(case, Prediction(id="fix-add", prediction_text=STALE_DIFF), [])
    assert (verdict.answered, verdict.passed) == (True, False)
    assert verdict.detail == "patch does not apply: calc.py: hunk 1 does not match the file"


def test_prose_is_not_a_patch(case: Case, judge: Judge) -> None:
    verdict = judge(case, Prediction(id="fix-add", prediction_text="Change minus to plus in add()."), [])
    assert (verdict.answered, verdict.passed) == (False, False)
    assert verdict.detail == "not a unified diff: no ---/+++ file header found"


def test_a_hunk_with_wrong_line_counts_is_malformed() -> None:
    broken = GOOD_DIFF.replace("@@ -1,2 +1,2 @@", "@@ -1,5 +1,2 @@")
    with pytest.raises(PatchError, match="promises 5 old and 2 new lines"):
        parse_diff(broken)


def test_a_diff_with_a_parent_directory_path_is_refused() -> None:
    with pytest.raises(PatchError, match="unsafe"):
        parse_diff(GOOD_DIFF.replace("b/calc.py", "b/../etc/passwd"))


def test_a_hunk_shifted_by_inserted_lines_still_applies() -> None:
    (patch,) = parse_diff(GOOD_DIFF)
    assert apply_patch(patch, "# header\n\n" + SOURCE) == "# header\n\n" + SOURCE.replace("a - b", "a + b")


def test_a_new_file_is_created_from_dev_null() -> None:
    (patch,) = parse_diff("--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n")
    assert apply_patch(patch, None) == "one\ntwo\n"


def test_a_deleted_file_has_no_content_afterwards() -> None:
    (patch,) = parse_diff("--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n")
    assert apply_patch(patch, "bye\n") is None


def test_the_aggregate_counts_patches_and_resolutions(case: Case, judge: Judge) -> None:
    aggregator = CodeAggregator()
    for text in (GOOD_DIFF, STALE_DIFF, "no idea"):
        prediction = Prediction(id="fix-add", prediction_text=text)
        aggregator.add(judge(case, prediction, []), case, prediction)
    assert aggregator.scores() == {
        "resolved_rate": pytest.approx(1 / 3),
        "patch_generated_rate": pytest.approx(2 / 3),
        "patches_generated": 2.0,
        "resolved": 1.0,
        "total_tasks": 3.0,
    }


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(["a", "b", "c", "", "def f():", "    pass"]), min_size=1, max_size=40),
    st.lists(st.sampled_from(["a", "b", "x", "", "    return 1"]), min_size=0, max_size=40),
)
def test_a_difflib_diff_applied_to_the_old_file_gives_the_new_file(old: list[str], new: list[str]) -> None:
    # given two versions of a file and the unified diff between them, as difflib writes it
    before = "".join(line + "\n" for line in old)
    after = "".join(line + "\n" for line in new)
    diff = "".join(
        difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a/f.txt", "b/f.txt")
    )
    if not diff:
        return
    # when it is parsed and applied
    (patch,) = parse_diff(diff)
    # then the result is the new version exactly
    assert apply_patch(patch, before) == after


@pytest.mark.parametrize(
    ("diff", "applies", "green"),
    [
        (GOOD_DIFF, True, True),
        (WRONG_FIX, True, False),
        (STALE_DIFF, False, False),
        ("Use plus.", False, False),
    ],
)
def test_each_criterion_judges_what_it_names(
    case: Case, judge: Judge, diff: str, applies: bool, green: bool
) -> None:
    criteria = [Criterion(id="patch-applies"), Criterion(id="tests-pass"), Criterion(id="readable")]

    verdict = judge(case, Prediction(id="fix-add", prediction_text=diff), criteria)

    # a wrong fix still applies; a criterion the template does not know is recorded unjudged
    assert [(c.id, c.passed) for c in verdict.criteria] == [
        ("patch-applies", applies),
        ("tests-pass", green),
        ("readable", None),
    ]
