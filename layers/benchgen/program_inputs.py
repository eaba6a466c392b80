"""What a bundle's programs are given: a submission staged in the Codabench scoring folders, and the
ingestion program's job with the folders it reads and writes.

Ingest and scoring both run bundle programs, so both start from here rather than from each other.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from benchgen.bundle.archive import Budget, extract_zip
from benchgen.errors import BundleError, SubmissionError
from benchgen.programs import INGESTION_APP, Layout, prepare_layout, program_job
from benchgen.sandbox.job import ProgramJob

if TYPE_CHECKING:
    from benchgen.environment import Environment


def extract_safely(submission: Path, target: Path) -> None:
    """Put the submission where a program reads it: a zip is unpacked under the same refusals and limits
    as a bundle (no entry escaping the folder, no links, no zip bomb), any other file is copied."""
    target.mkdir(parents=True, exist_ok=True)
    if not zipfile.is_zipfile(submission):
        shutil.copy2(submission, target / submission.name)
        return
    try:
        extract_zip(submission, target, label=f"the submission {submission.name}", budget=Budget())
    except BundleError as error:
        raise SubmissionError(str(error)) from None


def stage(env: Environment, submission: Path, root: Path) -> Layout:
    """The Codabench scoring folders under ``root``: the reference data in input/ref and the prediction
    output in input/res, ready for a scoring program."""
    layout = prepare_layout(root)
    if env.reference_dir is not None:
        shutil.copytree(env.reference_dir, layout.ref, dirs_exist_ok=True)
    extract_safely(submission, layout.res)
    return layout


def ingestion_job(
    env: Environment, program_dir: Path, submitted: Path, root: Path, *, shared: Path
) -> ProgramJob:
    """The ingestion program's job, the way Codabench's prediction step runs it: ``$input`` is the task's
    input data, ``$submission_program`` the submitted files, and the reference data is in none of its
    folders, since participant code runs there. It writes into ``root/output``.

    The program runs from a copy inside ``root``: in the bundle its folder sits beside the reference data.
    """
    program = root / "ingestion_program"
    shutil.copytree(program_dir, program)
    input_data = root / "input_data"
    if env.input_dir is not None:
        # A copy: the program may write where it reads, and the bundle's own folder must stay as uploaded.
        shutil.copytree(env.input_dir, input_data)
    input_data.mkdir(exist_ok=True)
    no_reference = root / "input" / "ref"
    for folder in (no_reference, shared):
        folder.mkdir(parents=True, exist_ok=True)
    return program_job(
        program,
        input_dir=input_data,
        output_dir=root / "output",
        shared_dir=shared,
        ref_dir=no_reference,
        res_dir=root / "output",
        time_limit=env.time_limit,
        extra={"submission_program": submitted, "ingestion_program": program},
        app=INGESTION_APP,
        runtime=env.runtime.runtime,
    )
