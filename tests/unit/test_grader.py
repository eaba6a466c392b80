"""The reward at its edges, given alike by reward() and by the standalone grader file, and the grader's
entry points for OpenAI's python grader and TRL's reward functions."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case
from benchgen.scoring.reward import grader_source, grading_fields, reward
from benchgen.scoring.standalone import amalgamate
from benchgen.vocabulary import TemplateName

MATH = {"template": "math", "answer": "42"}
QA = {"template": "qa", "answer": "the Eiffel Tower"}
UNANSWERABLE = {"template": "qa", "answer": "", "answers": []}
ROUTING = {"template": "routing", "answer": "fast"}
FIX = (
    "--- a/ranges.py\n+++ b/ranges.py\n@@ -1,2 +1,2 @@\n"
    " def top(values):\n-    return min(values)\n+    return max(values)\n"
)
FILES = {
    "ranges.py": "def top(values):\n    return min(values)\n",
    "test_ranges.py": "from ranges import top\nassert top([1, 3, 2]) == 3\n",
}
CODE = {"template": "code", "files": FILES, "test_command": "python test_ranges.py"}
EDGES = [
    # (fields, completion, reward): what each edge is worth
    (MATH, "", 0.0),
    (MATH, "   \n", 0.0),
    (MATH, None, 0.0),
    (MATH, "6 times 7 is 42.\n#### 42", 1.0),
    (MATH, "#### 41", 0.0),
    (MATH, "The answer is either 41 or 42.", 0.0),  # hedged: wrong whatever the gold
    (MATH, "Final answer: 41\nFinal answer: 42", 0.0),  # two answers, no correction
    (MATH, "<think>Maybe 41? No: 6 * 7 = 42.</think>The answer is 42.", 1.0),
    (MATH, "<think>6 * 7 = 42, so the answer is 42", 0.0),  # cut off inside its reasoning
    (MATH, "<think>the answer is 42</think>", 0.0),  # reasoned, never answered
    (MATH, "<think>41</think><think>42</think> Answer: 42", 1.0),
    (QA, "Eiffel Tower", 1.0),
    (QA, "the tower", 2 / 3),  # token F1: one of one predicted word, one of two gold words
    (QA, "Big Ben", 0.0),
    (QA, "<think>It is in Paris</think> The Eiffel Tower.", 1.0),
    (UNANSWERABLE, "", 1.0),  # abstaining is the right answer
    (UNANSWERABLE, "<think>the context does not say", 0.0),  # cut off is not abstaining
    (UNANSWERABLE, "Paris", 0.0),
    (ROUTING, " FAST\n", 1.0),
    (ROUTING, "reasoning", 0.0),
    (ROUTING, "", 0.0),
    (CODE, FIX, 1.0),
    (CODE, f"<think>min should be max</think>\n```diff\n{FIX}```\n", 1.0),
    (CODE, FIX.replace("max(values)", "sorted(values)[0]"), 0.0),  # applies, tests fail
    (CODE, "Use max instead of min.", 0.0),  # not a diff
]


def _load_grader(folder: Path) -> ModuleType:
    path = folder / "grader.py"
    path.write_text(grader_source(), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("standalone_grader", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def grader(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return _load_grader(tmp_path_factory.mktemp("grader"))


@pytest.mark.parametrize(("fields", "completion", "expected"), EDGES)
def test_an_edge_is_worth_the_same_to_the_reward_and_to_the_grader(
    grader: ModuleType, fields: dict[str, Any], completion: str | None, expected: float
) -> None:
    assert reward(fields, completion) == pytest.approx(expected)
    assert grader.score(fields, completion) == reward(fields, completion)


@pytest.mark.parametrize("completion", [42, ["#### 42"], {"content": "#### 42"}, b"#### 42"])
def test_a_completion_that_is_not_text_is_refused_saying_what_to_pass(
    grader: ModuleType, completion: Any
) -> None:
    for score in (reward, grader.score):
        with pytest.raises(TypeError, match="a completion is a string of the model's output"):
            score(MATH, completion)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"answer": "42"}, "the grading fields name the template None"),
        ({"template": "essay", "answer": "42"}, "this grader scores math, qa, routing, code"),
        ({"template": "math"}, "math grading fields need 'answer', a str"),
        (
            {"template": "qa", "answer": "x", "answers": "x"},
            "qa grading field 'answers' is a list when given",
        ),
        ([MATH], "grading fields are a JSON object, not list"),
    ],
)
def test_malformed_grading_fields_are_refused_saying_what_is_wrong(
    grader: ModuleType, fields: Any, message: str
) -> None:
    for score in (reward, grader.score):
        with pytest.raises(ValueError, match=message):
            score(fields, "#### 42")


def test_a_case_scored_by_its_own_program_has_no_template_reward() -> None:
    fields = grading_fields(Case(id="c7", answer="billing"), None, [])
    assert fields == {"template": None, "case_id": "c7"}
    with pytest.raises(ValueError, match="program_reward"):
        reward(fields, "billing")


def test_grading_fields_hold_what_the_judge_reads_and_the_case_s_criteria() -> None:
    criteria = [Criterion(id="final-answer"), Criterion(id="answer-format")]
    case = Case(id="m1", question="6 * 7?", answer="42", solution="6 * 7 = 42", domain="arithmetic")
    assert grading_fields(case, TemplateName("math"), criteria) == {
        "template": "math",
        "answer": "42",
        "criteria": ["final-answer", "answer-format"],
    }
    qa = Case(
        id="q1", answer="Paris", answers=["Paris", "the city of Paris"], context="...", criteria=["exact"]
    )
    assert grading_fields(qa, TemplateName("qa"), criteria) == {
        "template": "qa",
        "answer": "Paris",
        "answers": ["Paris", "the city of Paris"],
        "criteria": ["exact"],
    }
    routed = Case(id="r1", answer="fast", route="fast", costs={"fast": 0.001, "slow": 0.01})
    assert grading_fields(routed, TemplateName("routing"), []) == {
        "template": "routing",
        "answer": "fast",
        "route": "fast",
        "criteria": [],
    }
    code = Case(id="c1", files=FILES, test_command="python test_ranges.py")
    assert grading_fields(code, TemplateName("code"), []) == {**CODE, "criteria": []}


def test_openai_s_python_grader_reads_the_output_text_and_the_row_s_grading_fields(
    grader: ModuleType,
) -> None:
    item = {"messages": [{"role": "user", "content": "6 * 7?"}], "grading": MATH}
    assert grader.grade({"output_text": "#### 42"}, item) == 1.0
    assert grader.grade({"output_text": "#### 41"}, item) == 0.0
    assert grader.grade({}, item) == 0.0  # no text output (a refusal, a tool call): no answer
    with pytest.raises(ValueError, match="the training row has no 'grading' field"):
        grader.grade({"output_text": "#### 42"}, {"messages": []})


def test_trl_s_reward_function_takes_text_or_conversations_and_a_grading_column(grader: ModuleType) -> None:
    completions = [
        "#### 42",
        [{"role": "assistant", "content": "<think>6 * 7</think>#### 42"}],
        [{"role": "assistant", "content": "#### 41"}],
        [{"role": "user", "content": "#### 42"}],  # no reply
        " fast ",
    ]
    # a dataset column of rows naming different fields holds them all, null where a row has none
    grading: list[Any] = [MATH, MATH, json.dumps(MATH), {**MATH, "answers": None}, {**ROUTING, "route": None}]
    assert grader.reward_func(completions, grading, prompts=["p"] * 5) == [1.0, 1.0, 0.0, 0.0, 1.0]
    with pytest.raises(ValueError, match="2 completions for 1 rows of grading fields"):
        grader.reward_func(["#### 42", "#### 42"], [MATH])


_TEXT = st.text(alphabet=st.sampled_from(list("0123456789 .,-/½$#:Answerisor\n<>thinkTHE")), max_size=40)


@settings(max_examples=300, deadline=None)
@given(gold=_TEXT, completion=_TEXT, template=st.sampled_from(["math", "qa", "routing"]))
def test_the_grader_and_the_reward_never_disagree(
    grader: ModuleType, gold: str, completion: str, template: str
) -> None:
    fields = {"template": template, "answer": gold}
    assert grader.score(fields, completion) == reward(fields, completion)


def test_the_grader_file_runs_as_text_under_a_name_the_import_system_does_not_know() -> None:
    namespace: dict[str, Any] = {"__name__": "uploaded_grader"}
    exec(compile(grader_source(), "grader.py", "exec"), namespace)
    assert namespace["grade"]({"output_text": "#### 42"}, {"grading": MATH}) == 1.0


def test_the_grader_file_imports_only_the_standard_library() -> None:
    source = grader_source()
    assert "benchgen" not in "\n".join(
        line for line in source.splitlines() if line.startswith(("import ", "from "))
    )
    assert source == grader_source()  # the same bytes every time


def _module(folder: Path, name: str, text: str) -> str:
    (folder / f"{name}.py").write_text(text, encoding="utf-8")
    return name


def test_a_module_that_would_not_survive_being_joined_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    _module(tmp_path, "uses_numpy", "import numpy\n")
    with pytest.raises(ValueError, match="uses_numpy line 1: numpy is not in the standard library"):
        amalgamate("uses_numpy", "")
    _module(tmp_path, "renames", "from benchgen.scoring.reasoning import answer_text as text\n")
    with pytest.raises(ValueError, match="renames line 1: join with a top-level"):
        amalgamate("renames", "")
    _module(tmp_path, "clashes", "from benchgen.scoring.reasoning import answer_text\nTHINK_OPEN = '['\n")
    with pytest.raises(
        ValueError, match=r"clashes and benchgen\.scoring\.reasoning both define 'THINK_OPEN'"
    ):
        amalgamate("clashes", "")
