"""A benchmark's programs and a submitted program, wrong in ways their authors can fix: each is answered on
the record (the environment version, or the run) with the file, the entry and what to do."""

from __future__ import annotations

import zipfile
from pathlib import Path

from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.records.environments import EnvironmentStatus
from benchgen.records.runs import RunStatus
from localcloud.cloud import LocalCloud
from tests.codabench_bundles import code_submission, write_bundle
from tests.integration.test_pipeline import get_run, table, upload_bundle, upload_submission


def test_a_program_whose_command_leaves_a_quote_open_is_rejected_at_registration(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a bundle whose scoring program's command opens a quote it never closes (valid YAML)
    bundle = write_bundle(tmp_path / "quote" / "bundle")
    (bundle / "scoring_program" / "metadata.yaml").write_text(
        'command: python3 "$program/score.py $input $output\n', encoding="utf-8"
    )

    # when it is uploaded
    upload_bundle(cloud, bundle, tmp_path, "quote")

    # then the version is rejected, naming the file, the field and the quoting error
    record = EnvironmentsRepo(table(cloud, "Environments")).get("quote", "v1")
    assert record is not None and record.status is EnvironmentStatus.REJECTED
    assert record.problems == [
        "scoring_program/metadata.yaml: command: cannot be split into words (No closing quotation); "
        "close the quote, or escape it with a backslash"
    ]


def test_a_submitted_program_with_an_entry_climbing_out_fails_its_run_naming_the_zip_and_entry(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given a code-submission benchmark, and a submitted program whose zip holds an entry under '../'
    upload_bundle(cloud, write_bundle(tmp_path / "iris" / "bundle", ingestion=True), tmp_path, "iris")
    submission = code_submission(tmp_path / "model.zip", "setosa")
    with zipfile.ZipFile(submission, "a") as archive:
        archive.writestr("../escape.py", "print('outside')\n")

    # when it is uploaded
    upload_submission(cloud, "run-escape", submission, "iris")

    # then the run fails, saying which zip and which entry, and where it may not go
    run = get_run(cloud, "run-escape")
    assert run.status is RunStatus.FAILED
    assert run.failure_reason == (
        "the submission model.zip: entry '../escape.py' climbs out with '..' and would land outside the "
        "folder it is unpacked into; rebuild the zip with paths inside it"
    )
