"""The ``code`` template (SWE-style): a prediction is a unified diff against the case's files.

- A prediction is a *patch* when it parses as a unified diff: at least one file section (``---``/``+++``)
  with at least one hunk whose line counts agree with its ``@@`` header. A diff wrapped in a markdown
  code fence is accepted.
- A case is *resolved* when the patch applies to the case's ``files`` the way GNU ``patch`` applies it
  (same search for each hunk, same offsets and fuzz, same bytes out; what it would not apply whole, and
  an insertion past the end of the file, are refused) and the case's ``test_command`` then exits with 0. The
  command runs like a bundle's program (no shell, ``python`` is BenchGen's interpreter, a clean
  environment without credentials, the phase time limit).
- Near miss: the patch applied but the tests failed.

Criteria it judges, by id (any other criterion id is recorded unjudged): ``patch-applies``, the diff is
well formed and applies to the case's files; ``tests-pass``, the tests pass after it (the case's pass).

Metrics: ``patches_generated`` (count), ``patch_generated_rate``, ``resolved_rate``, ``total_tasks``.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from benchgen.bundle.runtime import MINIMAL
from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.programs import run_program
from benchgen.records.programs import last_lines
from benchgen.sandbox.job import Sandbox
from benchgen.scoring.patch import TEST_TIME_LIMIT, patch_and_test
from benchgen.scoring.templates import (
    Aggregator,
    Judge,
    ScoringOptions,
    TemplateDefinition,
    case_verdict,
    rate,
)
from benchgen.verdicts import VerdictRecord

PATCH_APPLIES = "patch-applies"
TESTS_GREEN = "tests-pass"
JUDGED = (PATCH_APPLIES, TESTS_GREEN)


def run_tests(
    case: Case, root: Path, time_limit: int, sandbox: Sandbox | None = None, runtime: str = MINIMAL.name
) -> tuple[bool, str]:
    """Run the case's test command in ``root`` the way a bundle program runs; (passed, what happened)."""
    if not case.test_command:
        return False, "the case has no test_command"
    try:
        shlex.split(case.test_command)
    except ValueError as exc:
        # One case's broken command fails that case, not the whole run.
        return False, f"the case's test_command cannot be split into words ({exc}); check the quotes"
    output = root.parent / "output"
    result = run_program(
        root,
        input_dir=root,
        output_dir=output,
        shared_dir=output,
        ref_dir=root,
        res_dir=root,
        time_limit=time_limit,
        command=case.test_command,
        sandbox=sandbox,
        runtime=runtime,
    )
    if result.timed_out:
        return False, f"tests timed out after {time_limit} s"
    if result.returncode != 0:
        tail = "\n".join(filter(None, (last_lines(result.stdout, 5), last_lines(result.stderr, 5))))
        return False, f"tests failed (exit {result.returncode}):\n{tail}"
    return True, "tests passed"


def make_judge(
    *,
    time_limit: int = TEST_TIME_LIMIT,
    workdir: Path | None = None,
    sandbox: Sandbox | None = None,
    runtime: str = MINIMAL.name,
) -> Judge:
    def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> VerdictRecord:
        raw = prediction.prediction_text if prediction is not None else ""
        outcome = patch_and_test(
            case.files or {}, raw, lambda root: run_tests(case, root, time_limit, sandbox, runtime), workdir
        )
        return case_verdict(
            case,
            criteria,
            gold=case.answer or "tests pass",
            prediction=raw if outcome.is_patch else None,
            raw_prediction=raw,
            passed=outcome.passed,
            answered=outcome.is_patch,
            near_miss=outcome.applied and not outcome.passed,
            detail=outcome.detail,
            judged=(JUDGED, (outcome.applied, outcome.passed)),
        )

    return judge


class CodeAggregator(Aggregator):
    def scores(self) -> dict[str, float]:
        return {
            "resolved_rate": rate(self.passed, self.total),
            "patch_generated_rate": rate(self.answered, self.total),
            "patches_generated": float(self.answered),
            "resolved": float(self.passed),
            "total_tasks": float(self.total),
        }


def _build(options: ScoringOptions) -> Judge:
    return make_judge(
        time_limit=options.time_limit,
        workdir=options.workdir,
        sandbox=options.sandbox,
        runtime=options.runtime,
    )


TEMPLATE = TemplateDefinition(
    "code",
    _build,
    CodeAggregator,
    case_fields=("files", "test_command"),
    judged=JUDGED,
    runs_tests=True,
)
