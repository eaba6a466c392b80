"""What a program's ending means for its run: a removed numpy name fails it only where the image had it."""

from __future__ import annotations

from benchgen.bundle.runtime import Reason, RuntimeChoice
from benchgen.program_outcomes import outcome_of, removed_names_problem
from benchgen.records.programs import TAIL_CHARS, stderr_tail
from benchgen.sandbox.job import ProgramResult

USED_NP_FLOAT = ProgramResult(
    returncode=0,
    stdout="",
    stderr="",
    timed_out=False,
    duration_s=0.1,
    removed_names=("np.float",),
    numpy_version="2.1.3",
)


def _choice(image: str, reason: Reason = Reason.IMAGE) -> RuntimeChoice:
    return RuntimeChoice(runtime="scientific", reason=reason, image=image)


def test_a_removed_name_the_image_had_fails_the_run_naming_both_numpys() -> None:
    problem = removed_names_problem("scoring program", USED_NP_FLOAT, _choice("codalab/codalab-legacy:py39"))

    assert problem is not None
    assert problem.startswith(
        "the scoring program used np.float, which numpy removed in 1.24: the scientific runtime has numpy "
        "2.1.3, where the program met an AttributeError, while numpy 1.22.4 in the bundle's image "
        "(codalab/codalab-legacy:py39) has it"
    )


def test_a_removed_name_the_image_lacks_too_changes_nothing() -> None:
    # the py312 image's numpy (1.26) gives the program the same AttributeError on Codabench
    assert (
        removed_names_problem("scoring program", USED_NP_FLOAT, _choice("codalab/codalab-legacy:py312"))
        is None
    )


def test_an_image_whose_numpy_is_unknown_fails_the_run_saying_so() -> None:
    problem = removed_names_problem(
        "ingestion program", USED_NP_FLOAT, _choice("team/own:1", Reason.FALLBACK)
    )

    assert problem is not None
    assert "numpy before 1.24, as in the bundle's image (team/own:1) if it is that old, has it" in problem


def test_a_program_that_asked_for_no_removed_name_is_fine() -> None:
    result = USED_NP_FLOAT.model_copy(update={"removed_names": ()})

    assert removed_names_problem("scoring program", result, _choice("codalab/codalab-legacy:py37")) is None


def test_an_outcome_keeps_a_bounded_tail_of_stderr() -> None:
    stderr = "\n".join(f"line {number} " + "x" * 200 for number in range(100))
    result = USED_NP_FLOAT.model_copy(update={"returncode": 1, "stderr": stderr})

    outcome = outcome_of("scoring program", result, time_limit=60)

    assert outcome.stderr_tail == stderr_tail(stderr)
    assert outcome.stderr_tail.endswith("line 99 " + "x" * 200)
    assert len(outcome.stderr_tail) == len("[...] ") + TAIL_CHARS
    assert outcome.problem() == f"the scoring program exited with code 1:\n{outcome.stderr_tail}"
