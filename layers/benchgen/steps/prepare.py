"""The preparation state machine's tasks: Generate (examples and held-out cases) and Check (coverage),
which records the preparation Ready (or, sent the pipeline's caught failure, Failed).

The API validated the request and hands the execution everything the tasks need (the spec, each run's
model, the bundle's key and version), so the tasks read no table: only the objects named here. Check is
the preparation's one writer after the API created it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import Field

from benchgen.bucket_layout import COVERAGE, preparation_key, run_key
from benchgen.environment import open_environment
from benchgen.errors import BenchGenError
from benchgen.lazy_model import LazyModel
from benchgen.outputs import RunOutput
from benchgen.ports.preparations import PreparationsStore
from benchgen.ports.storage import ObjectStorage
from benchgen.records.bounds import clip_text
from benchgen.records.timestamps import utc_now
from benchgen.training.coverage import check_held_out, coverage
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME, HeldOutCase, PreparedExample
from benchgen.training.preparation import (
    GenerationReport,
    PreparationError,
    PreparationSpec,
    RunSource,
    criteria_scope,
    generate,
)

JSON_LINES = "application/x-ndjson"


class RunRef(LazyModel):
    """A run the API checked: the caller's, Completed, on the spec's environment version, with verdicts."""

    run_id: str
    model: str
    environment_id: str
    environment_version: str


class BundleRef(LazyModel):
    """The registered bundle: its key and the object version registration validated."""

    key: str
    version_id: str | None = None


class GenerateInput(LazyModel):
    """The execution's input, as the API starts it."""

    preparation_id: str
    spec: PreparationSpec
    runs: list[RunRef]
    bundle: BundleRef


class CheckInput(LazyModel):
    preparation_id: str
    scope: list[str]  # the criteria in scope, resolved by Generate ([] in the spec means all of them)
    report: GenerationReport  # what Generate found: recorded once the check passes


class Generation(LazyModel):
    """Generate's answer: the criteria in ``scope`` and the ``report`` of what generating found; or, when
    the spec cannot be prepared, only the sentence ``refused``. Handed on without its empty fields: the
    state machine branches on whether ``refused`` is there."""

    refused: str | None = None
    scope: list[str] = Field(default_factory=list)
    report: GenerationReport | None = None


class Checked(LazyModel):
    """Check's answer: how many under-represented areas coverage.json flags."""

    gap_count: int


class HeldOutLeak(BenchGenError):
    """Training rows derived from held-out cases: generation should have dropped them."""


class PreparationNotGenerating(BenchGenError):
    """The preparation has left Generating (the API failed it, or a step recorded it): it stays as it is."""


def generate_preparation(task: GenerateInput, *, store: ObjectStorage, workdir: Path) -> Generation:
    """Generate the examples and held-out cases and upload them; or why the spec cannot be prepared."""
    bundle = store.download(task.bundle.key, workdir / "bundle.zip", version_id=task.bundle.version_id)
    env = open_environment(bundle, workdir / "env")
    runs = [
        RunSource(
            run_id=run.run_id,
            model=run.model,
            environment_id=run.environment_id,
            environment_version=run.environment_version,
            scoring_output=store.download(
                run_key(run.run_id, RunOutput.SCORING_OUTPUT.file_name),
                RunOutput.SCORING_OUTPUT.path_in(workdir / "runs" / run.run_id),
            ),
        )
        for run in task.runs
    ]
    out = workdir / "out"
    try:
        report = generate(task.spec, env, runs, out)
    except PreparationError as error:
        return Generation(refused=str(error))
    for name in (EXAMPLES_NAME, HELD_OUT_NAME):
        store.upload(out / name, preparation_key(task.preparation_id, name), content_type=JSON_LINES)
    return Generation(scope=criteria_scope(task.spec, env), report=report)


def _examples(store: ObjectStorage, preparation_id: str) -> Iterator[PreparedExample]:
    for line in store.lines(preparation_key(preparation_id, EXAMPLES_NAME)):
        if line.strip():
            yield PreparedExample.model_validate_json(line)


def _held_out(store: ObjectStorage, preparation_id: str) -> Iterator[HeldOutCase]:
    for line in store.lines(preparation_key(preparation_id, HELD_OUT_NAME)):
        if line.strip():
            yield HeldOutCase.model_validate_json(line)


def check_preparation(
    task: CheckInput, *, store: ObjectStorage, preparations: PreparationsStore, workdir: Path
) -> Checked:
    """Write coverage.json and record the preparation Ready, once no held-out case reached training.

    Both files are streamed (twice for the examples), so memory holds counts and held-out hashes only.
    """
    problems = check_held_out(_examples(store, task.preparation_id), _held_out(store, task.preparation_id))
    if problems:
        # The message travels through the execution as the failure reason: bounded as the record bounds it.
        raise HeldOutLeak(
            clip_text(
                "this is a defect in generation, report it with the preparation id: training rows come "
                f"from held-out cases ({'; '.join(problems)})"
            )
        )
    found = coverage(_examples(store, task.preparation_id), scope=task.scope)
    path = workdir / COVERAGE
    path.write_text(found.model_dump_json(), encoding="utf-8")
    store.upload(path, preparation_key(task.preparation_id, COVERAGE), content_type="application/json")
    gap_count = len(found.gaps)
    if not preparations.ready(
        task.preparation_id, report=task.report, gap_count=gap_count, finished_at=utc_now()
    ):
        raise _not_generating(task.preparation_id, "Ready")
    return Checked(gap_count=gap_count)


def record_preparation_failure(preparation_id: str, reason: str, *, preparations: PreparationsStore) -> None:
    """The pipeline's caught failure (a refusal of Generate's among them): Generating -> Failed."""
    if not preparations.fail(preparation_id, reason=reason, finished_at=utc_now()):
        raise _not_generating(preparation_id, f"Failed ({reason})")


def _not_generating(preparation_id: str, outcome: str) -> PreparationNotGenerating:
    return PreparationNotGenerating(
        f"preparation {preparation_id} is no longer Generating, so it is not recorded {outcome}: it keeps "
        "what it was recorded with first"
    )
