"""Untrusted code as deployed: score -> presigned URLs on the local S3 -> the sandbox function -> runner.

Presigned URLs are plain HTTP requests, so this runs the local cloud in server mode, where moto answers
them as S3 would.
"""

from __future__ import annotations

import io
import json
import shutil
import socket
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchgen.aws.tables.runs import RunsRepo
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunStatus
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud
from tests.program_runs import PROGRAM_VARIABLES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# Prepended to a real scoring program: it reports what it could see, then scores as usual.
SNOOP = """
import json as _json, os as _os, sys as _sys
_seen = {"cwd": _os.getcwd(), "env": dict(_os.environ), "args": _sys.argv[1:]}
with open(_os.path.join(_sys.argv[2], "seen.json"), "w") as _note:
    _json.dump(_seen, _note)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def server(
    stack_templates: dict[str, dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[LocalCloud]:
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    with LocalCloud(stack_templates, mode="server", port=_free_port()) as started:
        yield started


def _read(cloud: LocalCloud, key: str) -> bytes:
    body: bytes = cloud.client("s3").get_object(Bucket=cloud.bucket, Key=key)["Body"].read()
    return body


def test_a_scoring_program_runs_in_the_sandbox_function_through_presigned_urls(
    server: LocalCloud, tmp_path: Path
) -> None:
    # Given an environment whose scoring program also notes what it can see
    bundle = tmp_path / "snoop" / "bundle"
    shutil.copytree(EXAMPLES / "custom-program" / "bundle", bundle)
    script = bundle / "scoring_program" / "score.py"
    script.write_text(SNOOP + script.read_text(encoding="utf-8"), encoding="utf-8")
    s3 = server.client("s3")
    archive = write_bundle_zip(bundle, tmp_path / "bundle.zip")
    s3.put_object(Bucket=server.bucket, Key="environments/intents/v1/bundle.zip", Body=archive.read_bytes())
    server.settle()
    submission = next(iter(sorted((EXAMPLES / "custom-program" / "submission").glob("predictions.*"))))

    # When a submission is uploaded
    s3.put_object(
        Bucket=server.bucket,
        Key=f"submissions/run-sandboxed/{submission.name}",
        Body=submission.read_bytes(),
        Metadata={"environment": "intents", "version": "v1", "model": "m"},
    )
    server.settle()

    # Then the run completed with the program's scores
    runs_table = next(name for lid, name in server.table_names.items() if lid.startswith("Runs"))
    run = RunsRepo(runs_table).get("run-sandboxed")
    assert run is not None
    assert run.status is RunStatus.COMPLETED, run.failure_reason
    assert run.overall_score is not None
    # and the program went through the scratch prefix: a job archive in, an outputs archive out
    listing = s3.list_objects_v2(Bucket=server.bucket, Prefix="sandbox/")
    scratch = [item["Key"] for item in listing.get("Contents", [])]
    assert sorted(key.rsplit("/", 1)[1] for key in scratch) == ["job.zip", "outputs.zip"]
    with zipfile.ZipFile(io.BytesIO(_read(server, run.files[RunOutput.SCORING_OUTPUT]))) as output:
        seen = json.loads(output.read("seen.json"))
    # and the program saw its copied folders and an environment that names no resource of the stack
    assert Path(seen["cwd"]).name == "program"
    assert sorted(seen["env"]) == PROGRAM_VARIABLES
    assert server.bucket not in json.dumps(seen)
