"""What the evaluation tests set up on the local cloud: users (in the evaluators group or not), a package
in the bucket with the environment's real held-out cases, and a training run that produced it."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from pathlib import Path

from benchgen.aws.tables.training_runs import TrainingRunsRepo
from benchgen.bucket_layout import package_key
from benchgen.finetune.split import in_test_bucket
from benchgen.records.training_runs import TrainingRunRecord, TrainingStatus
from benchgen.vocabulary import Method
from examplegen.writing import write_bundle_zip
from localcloud.cloud import LocalCloud

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The demo's environment.
ENVIRONMENT = "gsm8k-tr"
PACKAGE_ID = "pkg-evaluation-test"


def subject(token: str) -> str:
    """The user id (claims.sub) of an ID token."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


def user(cloud: LocalCloud, email: str, *, group: str | None = None) -> str:
    """A signed-in user's ID token; in ``group`` (created if the pool lacks it) when one is named."""
    password = "Evaluat0r-Passw0rd!x"
    token = cloud.create_user(email, password)
    if group is None:
        return token
    cognito = cloud.client("cognito-idp")
    groups = cognito.list_groups(UserPoolId=cloud.user_pool_id)["Groups"]
    if group not in {found["GroupName"] for found in groups}:
        cognito.create_group(UserPoolId=cloud.user_pool_id, GroupName=group)
    cognito.admin_add_user_to_group(UserPoolId=cloud.user_pool_id, Username=email, GroupName=group)
    # Signed in again, so that the token carries the group (cognito:groups), as Cognito's would.
    answer = cognito.initiate_auth(
        ClientId=cloud.client_id,
        AuthFlow="USER_PASSWORD_AUTH",
        AuthParameters={"USERNAME": email, "PASSWORD": password},
    )
    return str(answer["AuthenticationResult"]["IdToken"])


def register(cloud: LocalCloud, tmp_path: Path) -> None:
    archive = write_bundle_zip(EXAMPLES / ENVIRONMENT / "bundle", tmp_path / f"{ENVIRONMENT}.zip")
    cloud.client("s3").put_object(
        Bucket=cloud.bucket, Key=f"environments/{ENVIRONMENT}/v1/bundle.zip", Body=archive.read_bytes()
    )
    cloud.settle()


def held_out_ids() -> list[str]:
    """The environment's cases whose ids fall in the test bucket: what a package holds out."""
    lines = (EXAMPLES / ENVIRONMENT / "bundle" / "reference" / "cases.jsonl").read_text().splitlines()
    return [case["id"] for case in map(json.loads, lines) if in_test_bucket(case["id"])]


def put_package(cloud: LocalCloud) -> str:
    """A package zip in the bucket whose manifest holds out ``held_out_ids()``; its sha256."""
    manifest = {
        "package_id": PACKAGE_ID,
        "held_out": {"cases": [{"case_id": case_id, "text_hash": "0" * 64} for case_id in held_out_ids()]},
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
    body = buffer.getvalue()
    cloud.client("s3").put_object(Bucket=cloud.bucket, Key=package_key(PACKAGE_ID), Body=body)
    return hashlib.sha256(body).hexdigest()


def put_training_run(
    cloud: LocalCloud,
    training_run_id: str,
    *,
    owner: str,
    connection_id: str,
    package_sha256: str,
    provider: str = "openai-compatible",
    status: TrainingStatus = TrainingStatus.SUCCEEDED,
) -> TrainingRunRecord:
    record = TrainingRunRecord(
        training_run_id=training_run_id,
        owner=owner,
        connection_id=connection_id,
        provider=provider,
        package_id=PACKAGE_ID,
        package_sha256=package_sha256,
        package_profile="openai-chat",
        preparation_id="prep-evaluation-test",
        environment_id=ENVIRONMENT,
        environment_version="v1",
        method=Method.DEMONSTRATION,
        base_model="example-base",
        base_model_source="package",
        status=status,
        job_name=training_run_id,
        result_model="example-tuned" if status is TrainingStatus.SUCCEEDED else None,
    )
    table = next(name for lid, name in cloud.table_names.items() if lid.startswith("TrainingRuns"))
    assert TrainingRunsRepo(table).put_if_absent(record)
    return record
