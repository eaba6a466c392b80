"""A CodaLab v1.5 bundle uploaded as published: registered converted, saying so, and scored per phase."""

from __future__ import annotations

import zipfile
from pathlib import Path

from benchgen.aws.tables.environments import EnvironmentsRepo
from benchgen.records.environments import EnvironmentStatus
from benchgen.records.runs import RunStatus
from benchgen.zipwrite import zip_folder
from localcloud.cloud import LocalCloud
from tests.integration.factories import EXAMPLES
from tests.integration.test_pipeline import get_run, table, upload_bundle

EXAMPLE = EXAMPLES / "codalab-v15"


def _final_numbers() -> list[int]:
    with zipfile.ZipFile(EXAMPLE / "bundle" / "input_data_final.zip") as archive:
        return [int(word) for word in archive.read("numbers.txt").split()]


def test_a_v15_bundle_is_registered_converted_and_its_final_phase_scored(
    cloud: LocalCloud, tmp_path: Path
) -> None:
    # given the CodaLab v1.5 example, uploaded as its organiser would, and its code submission for "Final"
    upload_bundle(cloud, EXAMPLE / "bundle", tmp_path, "primes")
    submission = tmp_path / "code.zip"
    zip_folder(EXAMPLE / "submission", submission)
    cloud.client("s3").put_object(
        Bucket=cloud.bucket,
        Key="submissions/run-final/code.zip",
        Body=submission.read_bytes(),
        Metadata={"environment": "primes", "version": "v1", "model": "odd-is-prime", "phase": "Final"},
    )
    cloud.settle()

    # then the version is registered, saying it was converted and how, with the phases by phasenumber
    record = EnvironmentsRepo(table(cloud, "Environments")).get("primes", "v1")
    assert record is not None and record.status is EnvironmentStatus.REGISTERED, record
    assert record.converted == (
        "converted from CodaLab competition.yaml v1.5 as Codabench imports it: 2 phases (Development, "
        "Final), each a task of its own; leaderboard columns from leaderboard.columns (accuracy, errors); "
        "no competition_docker_image: Codabench's default image"
    )
    assert [phase["name"] for phase in record.phases] == ["Development", "Final"]
    assert [column["key"] for column in record.columns] == ["accuracy", "errors"]
    # and the run is scored on the final numbers: the model calls every odd number prime
    numbers = _final_numbers()
    wrong = sum(n % 2 == 1 and any(n % d == 0 for d in range(3, n, 2)) for n in numbers)
    run = get_run(cloud, "run-final")
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert (run.phase, run.metrics) == (
        "Final",
        {"accuracy": (len(numbers) - wrong) / len(numbers), "errors": wrong},
    )
