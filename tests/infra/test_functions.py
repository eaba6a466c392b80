"""The functions: runtime, tracing, failure handling, environment, triggers and least privilege."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchgen.bundle.runtime import SCIENTIFIC
from infra.constructs.catalog import SPECS
from infra.constructs.functions import FUNCTIONS_ROOT
from infra.constructs.sandbox_image import image_build_args, stage_build_folder
from infra.references import render as render_value

Resource = dict[str, Any]
Statement = dict[str, Any]

# Every function the catalog declares: each per-function test below fails for one without its expected rows.
NAMES = [spec.name for spec in SPECS]
# One sandbox function per runtime, all running functions/sandbox.
SANDBOXES = {"minimal": "sandbox", "scientific": "sandbox_scientific", "legacy": "sandbox_legacy"}
LIVE_RUN_STEPS = ["deploy_model", "plan_inference", "infer_shard", "assemble_predictions"]
BATCH_STEPS = ["submit_batch", "poll_batch", "assemble_batch"]
TRAINING_STEPS = ["validate_training", "upload_training", "training_job"]
EVALUATION_STEPS = ["start_evaluation", "check_evaluation", "compare_evaluation"]
SHARD_STEPS = ["score_shard", "build_shard_artifact", "reduce_scores"]
JUDGING_STEPS = ["plan_judging", "judge_shard", "assemble_judgments"]
# The CalibrationPipeline's own step (its shards are the judging pass's judge_shard).
CALIBRATION_STEPS = ["assemble_calibration"]
# The sandbox runs untrusted code: it gets no logs, traces, queue or resource names, so it is checked apart.
PIPELINE = [name for name in NAMES if name not in SANDBOXES.values()]
# Invoked asynchronously (by S3, or by a state machine that may be retried); the dead-letter consumer is
# invoked synchronously by Lambda's queue poller.
ASYNCHRONOUS = [name for name in PIPELINE if name != "dead_letters"]
SANDBOX_ARNS = {"${SandboxFunction.Arn}", "${SandboxScientificFunction.Arn}", "${SandboxLegacyFunction.Arn}"}
BUCKET = "${DataBucket.Arn}"

# Every role can write its own logs, send failed asynchronous events to its queue and send traces.
BASELINE = {
    "logs:CreateLogStream",
    "logs:PutLogEvents",
    "sqs:SendMessage",
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
}
READ = {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan"}
READ_WRITE = READ | {"dynamodb:PutItem", "dynamodb:UpdateItem"}
IDEMPOTENCY = {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
CREATE_DELETE = READ | {"dynamodb:PutItem", "dynamodb:DeleteItem"}
# What Lambda's poller does with a queue on the consuming function's behalf.
CONSUME = {
    "sqs:ReceiveMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
}
# What a function that calls live models may do besides: invoke them, and read their API keys.
MODEL_CALLS = {"bedrock:InvokeModel", "sagemaker:InvokeEndpoint", "secretsmanager:GetSecretValue"}
# What the function that starts and follows provider training jobs may do besides.
TRAINING_JOBS = {
    "bedrock:CreateModelCustomizationJob",
    "bedrock:GetModelCustomizationJob",
    "bedrock:StopModelCustomizationJob",
    "sagemaker:CreateTrainingJob",
    "sagemaker:DescribeTrainingJob",
    "sagemaker:StopTrainingJob",
    "iam:PassRole",
    "secretsmanager:GetSecretValue",
}
# What the functions that submit and follow batch inference jobs may do besides: the jobs, and the keys.
BATCH_JOBS = {
    "bedrock:CreateModelInvocationJob",
    "bedrock:GetModelInvocationJob",
    "secretsmanager:GetSecretValue",
}
# The functions whose failed asynchronous events the dead-letter consumer settles.
DRAINED = ["register_environment", "ingest", "score"]

EXPECTED_ACTIONS = {
    # a judged environment's labelled answers are planned at registration for its CalibrationPipeline
    "register_environment": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "states:StartExecution"}
    | READ_WRITE
    | IDEMPOTENCY,
    "ingest": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "lambda:InvokeFunction", "events:PutEvents"}
    | READ_WRITE
    | IDEMPOTENCY,
    "score": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "events:PutEvents", "states:StartExecution"}
    | {"lambda:InvokeFunction"}
    | READ_WRITE
    | IDEMPOTENCY,
    "build_artifact": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}
    | READ_WRITE
    | IDEMPOTENCY,
    "build_package": BASELINE | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"} | READ_WRITE,
    "dead_letters": (BASELINE - {"sqs:SendMessage"}) | CONSUME | {"events:PutEvents"} | READ_WRITE,
    "api": BASELINE
    | {"s3:GetObject", "s3:PutObject", "states:StartExecution", "events:PutEvents"}
    | READ_WRITE
    | IDEMPOTENCY
    | CREATE_DELETE,
    **{name: set() for name in SANDBOXES.values()},
    # no table at all: the execution's input carries what the API checked
    "prepare_generate": BASELINE | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"},
    # records the preparation Ready, or the pipeline's failure
    "prepare_check": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ_WRITE,
    "deploy_model": BASELINE | READ_WRITE | MODEL_CALLS,
    "plan_inference": BASELINE | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"} | READ_WRITE,
    "infer_shard": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ_WRITE | MODEL_CALLS,
    "assemble_predictions": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ_WRITE,
    # plan asks the judge one call; it reads the owner's connection to reach it, and fails the run
    "plan_judging": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}
    | READ_WRITE
    | MODEL_CALLS,
    # a shard reads the run's (or the calibration's) status only: what it found goes to its file
    "judge_shard": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ | MODEL_CALLS,
    "assemble_judgments": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ_WRITE,
    # records a calibration's figures on its version
    "assemble_calibration": BASELINE | {"s3:GetObject"} | READ_WRITE,
    # submit hands the stack's Bedrock batch role to Bedrock (iam:PassRole on that role only)
    "submit_batch": BASELINE | {"s3:GetObject", "s3:PutObject", "iam:PassRole"} | READ_WRITE | BATCH_JOBS,
    "poll_batch": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ_WRITE | BATCH_JOBS,
    "assemble_batch": BASELINE | {"s3:GetObject", "s3:PutObject"} | READ_WRITE | IDEMPOTENCY,
    "validate_training": BASELINE | READ,
    "upload_training": BASELINE | {"s3:GetObject", "s3:PutObject", "secretsmanager:GetSecretValue"} | READ,
    "training_job": BASELINE | READ_WRITE | TRAINING_JOBS,
    # each shard step fails the run it works on, and announces it
    "score_shard": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "events:PutEvents"}
    | READ_WRITE,
    "build_shard_artifact": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "events:PutEvents"}
    | READ_WRITE,
    "reduce_scores": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject", "events:PutEvents", "states:StartExecution"}
    | READ_WRITE,
    # starts the InferencePipeline of each run it creates
    "start_evaluation": BASELINE | {"s3:GetObject", "s3:PutObject", "states:StartExecution"} | READ_WRITE,
    "check_evaluation": BASELINE | READ,
    # writes the report and records the evaluation (Completed, or the pipeline's caught failure)
    # asks an environment's judge which of the two answers is better, where its template asks one
    "compare_evaluation": BASELINE
    | {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"}
    | READ_WRITE
    | MODEL_CALLS,
}

EXPECTED_OBJECT_ACCESS = {
    "register_environment": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:PutObject", "case-shards/"),
        ("s3:GetObject", "calibrations/"),
        ("s3:PutObject", "calibrations/"),
    },
    "ingest": {
        ("s3:GetObject", "submissions/"),
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "runs/*/case_scope.json"),
        ("s3:PutObject", "predictions/"),
        ("s3:GetObject", "sandbox/"),
        ("s3:PutObject", "sandbox/"),
    },
    "score": {
        ("s3:GetObject", "predictions/"),
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "runs/*/case_scope.json"),
        # the judgments of a run whose template asks a judge
        ("s3:GetObject", "runs/*/judgments.jsonl"),
        ("s3:PutObject", "runs/"),
        ("s3:GetObject", "sandbox/"),
        ("s3:PutObject", "sandbox/"),
    },
    "build_artifact": {
        ("s3:GetObject", "runs/"),
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:PutObject", "runs/"),
    },
    "build_package": {
        # the registered bundle, for the held-out cases' questions the contamination report compares
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        # of a preparation, only what a package is built from
        ("s3:GetObject", "preparations/*/examples.jsonl"),
        ("s3:GetObject", "preparations/*/held_out.jsonl"),
        ("s3:PutObject", "packages/"),
    },
    "dead_letters": set(),
    "api": {
        ("s3:GetObject", "submissions/"),
        ("s3:GetObject", "predictions/"),
        ("s3:GetObject", "runs/"),
        ("s3:GetObject", "preparations/"),
        ("s3:GetObject", "packages/"),
        # an evaluation's report: its JSON read, its HTML handed out as a presigned url
        ("s3:GetObject", "evaluations/"),
        # whether a version's bundle was uploaded already
        ("s3:GetObject", "environments/*/bundle.zip"),
        ("s3:PutObject", "submissions/"),
        ("s3:PutObject", "environments/"),
    },
    **{name: set() for name in SANDBOXES.values()},
    "prepare_generate": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        # of a run, only its verdicts
        ("s3:GetObject", "runs/*/scoring_output.zip"),
        ("s3:PutObject", "preparations/"),
    },
    "prepare_check": {("s3:GetObject", "preparations/"), ("s3:PutObject", "preparations/")},
    "deploy_model": set(),
    "plan_inference": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "runs/*/case_scope.json"),
        ("s3:PutObject", "runs/"),
    },
    "infer_shard": {("s3:GetObject", "runs/"), ("s3:PutObject", "runs/")},
    "assemble_predictions": {
        ("s3:GetObject", "runs/"),
        # whether the generated submission is there already
        ("s3:GetObject", "submissions/*/predictions.json"),
        ("s3:PutObject", "runs/"),
        ("s3:PutObject", "submissions/"),
    },
    "plan_judging": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "runs/*/case_scope.json"),
        ("s3:GetObject", "predictions/*/prediction_output.zip"),
        ("s3:PutObject", "runs/*/judging/"),
    },
    "judge_shard": {
        ("s3:GetObject", "runs/*/judging/"),
        ("s3:PutObject", "runs/*/judging/"),
        ("s3:GetObject", "calibrations/"),
        ("s3:PutObject", "calibrations/"),
    },
    # and a judging pass's batch output read into its shards' first judgments
    "assemble_judgments": {
        ("s3:GetObject", "runs/*/judging/"),
        ("s3:PutObject", "runs/*/judgments.jsonl"),
        ("s3:PutObject", "runs/*/judging/"),
    },
    "assemble_calibration": {("s3:GetObject", "calibrations/")},
    "submit_batch": {("s3:GetObject", "runs/"), ("s3:PutObject", "runs/")},
    # and for a judging pass: its judge, and its jobs' output that a provider keeps
    "poll_batch": {
        ("s3:GetObject", "batch-output/"),
        ("s3:PutObject", "batch-output/"),
        ("s3:GetObject", "runs/*/judging/judge.json"),
        ("s3:GetObject", "runs/*/judging/batch-output/*/"),
        ("s3:PutObject", "runs/*/judging/batch-output/*/"),
    },
    "assemble_batch": {
        ("s3:GetObject", "batch-output/"),
        ("s3:GetObject", "runs/"),
        ("s3:GetObject", "submissions/*/predictions.json"),
        ("s3:PutObject", "runs/"),
        ("s3:PutObject", "submissions/"),
    },
    "score_shard": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "case-shards/"),
        ("s3:GetObject", "predictions/*/shards/"),
        # the judgments of a judged run, judged whole before its shards are scored
        ("s3:GetObject", "runs/*/judgments.jsonl"),
        ("s3:PutObject", "runs/*/parts/score/"),
        ("s3:PutObject", "runs/*/logs/failure.log"),
    },
    "build_shard_artifact": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "case-shards/"),
        ("s3:GetObject", "runs/*/parts/score/"),
        ("s3:PutObject", "runs/*/parts/artifact/"),
        ("s3:PutObject", "runs/*/logs/failure.log"),
    },
    "reduce_scores": {
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:GetObject", "runs/*/parts/score/"),
        ("s3:PutObject", "runs/"),
    },
    "validate_training": set(),
    # of the bucket, only packages in and training files out
    "upload_training": {("s3:GetObject", "packages/"), ("s3:PutObject", "training/")},
    "training_job": set(),
    # the package (its held-out list) in, each new run's case scope out
    "start_evaluation": {("s3:GetObject", "packages/"), ("s3:PutObject", "runs/*/case_scope.json")},
    "check_evaluation": set(),
    "compare_evaluation": {
        ("s3:GetObject", "packages/"),
        # of a run, only its verdicts and its case scope
        ("s3:GetObject", "runs/*/scoring_output.zip"),
        ("s3:GetObject", "runs/*/case_scope.json"),
        # the environment's bundle, for the held-out cases its judge is asked about
        ("s3:GetObject", "environments/"),
        ("s3:GetObjectVersion", "environments/"),
        ("s3:PutObject", "evaluations/"),
    },
}

EXPECTED_TABLE_ACCESS = {
    "register_environment": {
        "EnvironmentsTable": READ_WRITE,
        "IdempotencyTable": IDEMPOTENCY,
        "ConnectionsTable": READ,
    },
    "ingest": {"RunsTable": READ_WRITE, "EnvironmentsTable": READ, "IdempotencyTable": IDEMPOTENCY},
    "score": {"RunsTable": READ_WRITE, "EnvironmentsTable": READ, "IdempotencyTable": IDEMPOTENCY},
    "build_artifact": {
        "RunsTable": READ_WRITE,
        "EnvironmentsTable": READ,
        "DatasetsTable": READ_WRITE,
        "IdempotencyTable": IDEMPOTENCY,
    },
    "build_package": {"PackagesTable": READ_WRITE},
    "dead_letters": {"RunsTable": READ_WRITE, "EnvironmentsTable": READ_WRITE},
    "api": {
        "ConnectionsTable": CREATE_DELETE,
        "RunsTable": READ_WRITE,
        "DatasetsTable": READ_WRITE,
        "EnvironmentsTable": READ_WRITE,
        "PreparationsTable": READ_WRITE,
        "PackagesTable": READ_WRITE,
        "TrainingRunsTable": READ_WRITE,
        "EvaluationsTable": READ_WRITE,
        "IdempotencyTable": IDEMPOTENCY,
    },
    **{name: {} for name in SANDBOXES.values()},
    "prepare_generate": {},
    "prepare_check": {"PreparationsTable": READ_WRITE},
    "deploy_model": {"RunsTable": READ_WRITE},
    "plan_inference": {"RunsTable": READ_WRITE, "EnvironmentsTable": READ},
    "infer_shard": {"RunsTable": READ_WRITE},
    "assemble_predictions": {"RunsTable": READ_WRITE},
    "plan_judging": {"RunsTable": READ_WRITE, "EnvironmentsTable": READ, "ConnectionsTable": READ},
    "judge_shard": {"RunsTable": READ, "EnvironmentsTable": READ},
    "assemble_judgments": {"RunsTable": READ_WRITE},
    "assemble_calibration": {"EnvironmentsTable": READ_WRITE},
    "submit_batch": {"RunsTable": READ_WRITE},
    "poll_batch": {"RunsTable": READ_WRITE},
    "assemble_batch": {"RunsTable": READ_WRITE, "IdempotencyTable": IDEMPOTENCY},
    "validate_training": {"TrainingRunsTable": READ, "ConnectionsTable": READ, "PackagesTable": READ},
    "upload_training": {"TrainingRunsTable": READ, "ConnectionsTable": READ},
    "training_job": {"TrainingRunsTable": READ_WRITE, "ConnectionsTable": READ},
    "start_evaluation": {"RunsTable": READ_WRITE, "EvaluationsTable": READ_WRITE},
    **{name: {"RunsTable": READ_WRITE, "EnvironmentsTable": READ} for name in SHARD_STEPS},
    "check_evaluation": {"RunsTable": READ, "EvaluationsTable": READ},
    "compare_evaluation": {
        "RunsTable": READ,
        "EvaluationsTable": READ_WRITE,
        "EnvironmentsTable": READ,
        "ConnectionsTable": READ,
    },
}

RUNS_INDEXES = {"${RunsTable.Arn}/index/by_environment", "${RunsTable.Arn}/index/by_status"}
TRAINING_RUNS_INDEXES = {
    "${TrainingRunsTable.Arn}/index/by_owner",
    "${TrainingRunsTable.Arn}/index/by_preparation",
}
EXPECTED_INDEXES = {
    "register_environment": {"${ConnectionsTable.Arn}/index/by_owner"},
    "ingest": RUNS_INDEXES,
    "score": RUNS_INDEXES,
    "build_artifact": RUNS_INDEXES | {"${DatasetsTable.Arn}/index/by_kind"},
    "build_package": {"${PackagesTable.Arn}/index/by_preparation"},
    "dead_letters": RUNS_INDEXES,
    "api": RUNS_INDEXES
    | {
        "${DatasetsTable.Arn}/index/by_kind",
        "${ConnectionsTable.Arn}/index/by_owner",
        "${PreparationsTable.Arn}/index/by_owner",
        "${PackagesTable.Arn}/index/by_preparation",
        *TRAINING_RUNS_INDEXES,
        "${EvaluationsTable.Arn}/index/by_training_run",
    },
    **{name: set() for name in SANDBOXES.values()},
    "prepare_generate": set(),
    "prepare_check": {"${PreparationsTable.Arn}/index/by_owner"},
    **dict.fromkeys(LIVE_RUN_STEPS, RUNS_INDEXES),
    **dict.fromkeys(BATCH_STEPS, RUNS_INDEXES),
    "validate_training": {
        *TRAINING_RUNS_INDEXES,
        "${ConnectionsTable.Arn}/index/by_owner",
        "${PackagesTable.Arn}/index/by_preparation",
    },
    "upload_training": TRAINING_RUNS_INDEXES | {"${ConnectionsTable.Arn}/index/by_owner"},
    "training_job": TRAINING_RUNS_INDEXES | {"${ConnectionsTable.Arn}/index/by_owner"},
    **dict.fromkeys(EVALUATION_STEPS, RUNS_INDEXES | {"${EvaluationsTable.Arn}/index/by_training_run"}),
    # and the judge's connection, where the environment's template asks a judge
    "compare_evaluation": RUNS_INDEXES
    | {"${EvaluationsTable.Arn}/index/by_training_run", "${ConnectionsTable.Arn}/index/by_owner"},
    **dict.fromkeys(SHARD_STEPS, RUNS_INDEXES),
    **dict.fromkeys(JUDGING_STEPS, RUNS_INDEXES),
    "plan_judging": RUNS_INDEXES | {"${ConnectionsTable.Arn}/index/by_owner"},
    "assemble_calibration": set(),
}

EXPECTED_TRIGGERS = {
    "register_environment": {"prefix": "environments/", "suffix": ".zip"},
    "ingest": {"prefix": "submissions/"},
    "score": {"prefix": "predictions/", "suffix": "prediction_output.zip"},
    # the manifest a batch job's output ends with (Bedrock's, or the copy the poll step writes last)
    "assemble_batch": {"prefix": "batch-output/", "suffix": "manifest.json.out"},
}


def _pairs(statements: list[Statement]) -> set[tuple[str, str]]:
    return {
        (action, resource)
        for statement in statements
        if statement["Effect"] == "Allow"
        for action in statement["Action"]
        for resource in statement["Resource"]
    }


def _object_access(statements: list[Statement]) -> set[tuple[str, str]]:
    found = set()
    for action, resource in _pairs(statements):
        if action.startswith("s3:"):
            # a key prefix, or a pattern that ends in one file name
            assert resource.startswith(f"{BUCKET}/"), resource
            assert resource.endswith("/*") or "*" not in resource.rsplit("/", 1)[-1], resource
            found.add((action, resource.removeprefix(f"{BUCKET}/").removesuffix("*")))
    return found


@pytest.fixture(scope="session")
def triggers(of_type: Callable[[str], dict[str, Resource]], function_ids: dict[str, str]) -> dict[str, Any]:
    (notifications,) = of_type("Custom::S3BucketNotifications").values()
    names = {logical_id: name for name, logical_id in function_ids.items()}
    found = {}
    for target in notifications["Properties"]["NotificationConfiguration"]["LambdaFunctionConfigurations"]:
        assert target["Events"] == ["s3:ObjectCreated:*"]
        rules = target["Filter"]["Key"]["FilterRules"]
        found[names[target["LambdaFunctionArn"]["Fn::GetAtt"][0]]] = {r["Name"]: r["Value"] for r in rules}
    return found


def test_there_is_one_function_per_handler_folder(functions: dict[str, Resource]) -> None:
    folders = sorted(handler.parent.name for handler in FUNCTIONS_ROOT.glob("*/handler.py"))
    assert sorted({spec.folder for spec in SPECS}) == folders
    assert sorted(functions) == sorted(NAMES)


@pytest.mark.parametrize("name", PIPELINE)
def test_functions_run_python_313_on_arm64(functions: dict[str, Resource], name: str) -> None:
    properties = functions[name]["Properties"]
    assert properties["Runtime"] == "python3.13"
    assert properties["Architectures"] == ["arm64"]
    assert properties["Handler"] == "handler.handler"
    # The runtime, and the zlib that deflates the zips a run writes, change only with a deployment.
    assert properties["RuntimeManagementConfig"] == {"UpdateRuntimeOn": "FunctionUpdate"}


def test_the_sandbox_is_an_arm64_image_of_its_runtimes_python_where_app_links_into_tmp(
    functions: dict[str, Resource], tmp_path: Path
) -> None:
    # the function is a container image running the same handler on arm64
    properties = functions["sandbox"]["Properties"]
    assert properties["PackageType"] == "Image"
    assert properties["Architectures"] == ["arm64"]
    assert properties["ImageConfig"]["Command"] == ["handler.handler"]
    # and its build folder holds the handler, the library, the layer's packages and the runtime's pins, on
    # Lambda's base image of the runtime's Python, with /app a link to the one place Lambda lets it write
    folder = stage_build_folder(FUNCTIONS_ROOT / "sandbox", tmp_path, "scientific")
    dockerfile = (folder / "Dockerfile").read_text().splitlines()
    assert dockerfile.index("ARG PYTHON") < dockerfile.index("FROM public.ecr.aws/lambda/python:${PYTHON}")
    assert "RUN ln -s /tmp/app /app" in dockerfile
    assert "COPY task/ ${LAMBDA_TASK_ROOT}/" in dockerfile
    assert "COPY benchgen/ /opt/python/benchgen/" in dockerfile
    assert (folder / "task" / "handler.py").is_file() and not (folder / "task" / "Dockerfile").exists()
    assert (folder / "benchgen" / "sandbox" / "runner.py").is_file()
    packages = (folder / "requirements.txt").read_text().split()
    assert any(package.startswith("pydantic==") for package in packages)
    assert not any(package.startswith("boto3==") for package in packages)
    assert (folder / "runtime.txt").read_bytes() == SCIENTIFIC.requirements.read_bytes()
    assert "ENV BENCHGEN_RUNTIMES=/opt/runtimes" in dockerfile


def test_each_runtime_has_its_own_sandbox_image_running_the_sandbox_folder(
    functions: dict[str, Resource],
) -> None:
    images = {json.dumps(functions[name]["Properties"]["Code"]["ImageUri"]) for name in SANDBOXES.values()}

    assert len(images) == len(SANDBOXES)
    assert {functions[name]["Metadata"]["benchgen:folder"] for name in SANDBOXES.values()} == {"sandbox"}


def test_each_sandbox_image_is_built_from_lambdas_image_of_its_runtimes_python() -> None:
    assert [image_build_args(runtime) for runtime in SANDBOXES] == [
        {"RUNTIME": "minimal", "PYTHON": "3.13"},
        {"RUNTIME": "scientific", "PYTHON": "3.13"},
        {"RUNTIME": "legacy", "PYTHON": "3.11"},
    ]


@pytest.mark.parametrize("name", PIPELINE)
def test_functions_use_the_library_layer_built_for_the_same_platform(
    functions: dict[str, Resource], resources: dict[str, Resource], name: str
) -> None:
    (layer,) = functions[name]["Properties"]["Layers"]
    properties = resources[layer["Ref"]]["Properties"]
    assert properties["CompatibleRuntimes"] == ["python3.13"]
    assert properties["CompatibleArchitectures"] == ["arm64"]


@pytest.mark.parametrize("name", PIPELINE)
def test_functions_trace_actively(functions: dict[str, Resource], name: str) -> None:
    assert functions[name]["Properties"]["TracingConfig"] == {"Mode": "Active"}


@pytest.mark.parametrize("name", ASYNCHRONOUS)
def test_failed_async_events_land_in_an_encrypted_tls_only_queue(
    functions: dict[str, Resource],
    resources: dict[str, Resource],
    of_type: Callable[[str], dict[str, Resource]],
    name: str,
) -> None:
    queue_id = functions[name]["Properties"]["DeadLetterConfig"]["TargetArn"]["Fn::GetAtt"][0]
    assert resources[queue_id]["Properties"]["SqsManagedSseEnabled"] is True
    (policy,) = [
        p for p in of_type("AWS::SQS::QueuePolicy").values() if {"Ref": queue_id} in p["Properties"]["Queues"]
    ]
    (denial,) = policy["Properties"]["PolicyDocument"]["Statement"]
    assert denial["Effect"] == "Deny"
    assert denial["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@pytest.mark.parametrize("name", PIPELINE)
def test_functions_log_to_their_own_group_kept_one_month(
    functions: dict[str, Resource], resources: dict[str, Resource], name: str
) -> None:
    group_id = functions[name]["Properties"]["LoggingConfig"]["LogGroup"]["Ref"]
    assert resources[group_id]["Properties"]["RetentionInDays"] == 30


@pytest.mark.parametrize("name", PIPELINE)
def test_functions_share_the_contract_environment_variables(
    functions: dict[str, Resource], name: str
) -> None:
    variables = functions[name]["Properties"]["Environment"]["Variables"]
    assert variables["DATA_BUCKET"] == {"Ref": "DataBucket"}
    assert variables["ENVIRONMENTS_TABLE"] == {"Ref": "EnvironmentsTable"}
    assert variables["RUNS_TABLE"] == {"Ref": "RunsTable"}
    assert variables["DATASETS_TABLE"] == {"Ref": "DatasetsTable"}
    assert variables["IDEMPOTENCY_TABLE"] == {"Ref": "IdempotencyTable"}
    assert variables["PACKAGES_TABLE"] == {"Ref": "PackagesTable"}
    assert variables["EVENT_BUS_NAME"] == {"Ref": "EventBus"}
    assert variables["POWERTOOLS_SERVICE_NAME"] == name
    assert variables["POWERTOOLS_METRICS_NAMESPACE"] == "BenchGen"
    # the first delivery and Lambda's two retries of an asynchronous invocation
    assert variables["STEP_ATTEMPTS"] == "3"


def test_only_score_is_told_the_state_machine_arn(functions: dict[str, Resource]) -> None:
    holders = {
        name: f["Properties"]["Environment"]["Variables"]["STATE_MACHINE_ARN"]
        for name, f in functions.items()
        if "STATE_MACHINE_ARN" in f["Properties"]["Environment"]["Variables"]
    }
    # the reduce step of a sharded run completes it as score does, and starts the same pipeline
    assert holders == {"score": {"Ref": "ArtifactPipeline"}, "reduce_scores": {"Ref": "ArtifactPipeline"}}


def test_only_the_api_is_told_the_package_pipeline_and_may_start_it_and_nothing_else(
    functions: dict[str, Resource], role_statements: dict[str, list[Statement]]
) -> None:
    holders = {
        name: f["Properties"]["Environment"]["Variables"]["PACKAGE_STATE_MACHINE_ARN"]
        for name, f in functions.items()
        if "PACKAGE_STATE_MACHINE_ARN" in f["Properties"]["Environment"]["Variables"]
    }
    starters = {
        name
        for name, statements in role_statements.items()
        for action, resource in _pairs(statements)
        if action.startswith("states:") and resource == "${PackagePipeline}"
    }
    assert holders == {"api": {"Ref": "PackagePipeline"}}
    assert starters == {"api"}


def test_the_package_build_has_room_for_a_large_preparation(functions: dict[str, Resource]) -> None:
    properties = functions["build_package"]["Properties"]
    assert properties["Timeout"] == 900
    assert properties["MemorySize"] == 2048
    assert properties["EphemeralStorage"] == {"Size": 4096}


def test_score_has_room_for_a_full_scoring_program(functions: dict[str, Resource]) -> None:
    properties = functions["score"]["Properties"]
    assert properties["MemorySize"] == 2048
    assert properties["Timeout"] == 900
    assert properties["EphemeralStorage"]["Size"] >= 4096


def test_no_bundle_may_ask_a_program_to_run_longer_than_its_step_can_wait(
    functions: dict[str, Resource],
) -> None:
    # the longest execution_time_limit registration accepts leaves each run step two minutes of its own
    timeouts = [functions[name]["Properties"]["Timeout"] for name in ("ingest", "score")]
    for name in PIPELINE:
        variables = functions[name]["Properties"]["Environment"]["Variables"]
        assert variables["MAX_PROGRAM_SECONDS"] == str(min(timeouts) - 120) == "780"
    # and the sandboxes that run the programs on AWS let them run that long too
    assert all(functions[name]["Properties"]["Timeout"] > 780 for name in SANDBOXES.values())


def test_api_answers_within_api_gateways_timeout(functions: dict[str, Resource]) -> None:
    assert functions["api"]["Properties"]["Timeout"] <= 29


def test_every_function_has_a_role_of_its_own(functions: dict[str, Resource]) -> None:
    roles = [f["Properties"]["Role"]["Fn::GetAtt"][0] for f in functions.values()]
    assert len(set(roles)) == len(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_roles_carry_no_managed_policies(
    functions: dict[str, Resource], resources: dict[str, Resource], name: str
) -> None:
    role_id = functions[name]["Properties"]["Role"]["Fn::GetAtt"][0]
    assert "ManagedPolicyArns" not in resources[role_id]["Properties"]


@pytest.mark.parametrize("name", NAMES)
def test_roles_grant_exactly_the_actions_the_function_uses(
    role_statements: dict[str, list[Statement]], name: str
) -> None:
    granted = {action for action, _ in _pairs(role_statements[name])}
    assert granted == EXPECTED_ACTIONS[name]


@pytest.mark.parametrize("name", NAMES)
def test_object_access_is_scoped_to_key_prefixes(
    role_statements: dict[str, list[Statement]], name: str
) -> None:
    assert _object_access(role_statements[name]) == EXPECTED_OBJECT_ACCESS[name]


@pytest.mark.parametrize("name", NAMES)
def test_table_access_is_scoped_to_the_tables_the_function_uses(
    role_statements: dict[str, list[Statement]], name: str
) -> None:
    by_table: dict[str, set[str]] = {}
    for action, resource in _pairs(role_statements[name]):
        if action.startswith("dynamodb:"):
            table = resource.removeprefix("${").split(".Arn}", 1)[0]
            by_table.setdefault(table, set()).add(action)
    assert by_table == EXPECTED_TABLE_ACCESS[name]


@pytest.mark.parametrize("name", NAMES)
def test_index_queries_name_each_index(role_statements: dict[str, list[Statement]], name: str) -> None:
    indexes = {resource for _, resource in _pairs(role_statements[name]) if "/index/" in resource}
    assert all(not resource.endswith("*") for resource in indexes)
    # and the set is checked, so that losing the index grants cannot pass as "no wildcard"
    assert indexes == EXPECTED_INDEXES[name]


@pytest.mark.parametrize("name", PIPELINE)
def test_only_tracing_is_granted_on_every_resource(
    role_statements: dict[str, list[Statement]], name: str
) -> None:
    on_everything = {action for action, resource in _pairs(role_statements[name]) if resource == "*"}
    assert on_everything == {"xray:PutTraceSegments", "xray:PutTelemetryRecords"}


@pytest.mark.parametrize("name", SANDBOXES.values())
def test_each_sandbox_role_grants_nothing_at_all(
    functions: dict[str, Resource],
    resources: dict[str, Resource],
    role_statements: dict[str, list[Statement]],
    name: str,
) -> None:
    role = resources[functions[name]["Properties"]["Role"]["Fn::GetAtt"][0]]["Properties"]
    assert role_statements[name] == []
    assert "Policies" not in role
    assert "ManagedPolicyArns" not in role


@pytest.mark.parametrize("name", SANDBOXES.values())
def test_each_sandbox_is_told_no_resource_name_and_sends_no_traces(
    functions: dict[str, Resource], resources: dict[str, Resource], name: str
) -> None:
    properties = functions[name]["Properties"]
    assert properties["Environment"]["Variables"] == {"POWERTOOLS_SERVICE_NAME": name}
    assert properties.get("TracingConfig", {"Mode": "PassThrough"}) == {"Mode": "PassThrough"}
    assert "DeadLetterConfig" not in properties


def test_only_the_functions_that_run_programs_may_invoke_the_sandboxes_and_only_them(
    role_statements: dict[str, list[Statement]], functions: dict[str, Resource]
) -> None:
    invokes = {
        (name, resource)
        for name, statements in role_statements.items()
        for action, resource in _pairs(statements)
        if action.startswith("lambda:")
    }
    told = {
        name: f["Properties"]["Environment"]["Variables"]["SANDBOX_FUNCTIONS"]
        for name, f in functions.items()
        if "SANDBOX_FUNCTIONS" in f["Properties"]["Environment"]["Variables"]
    }
    assert invokes == {(name, arn) for name in ("ingest", "score") for arn in SANDBOX_ARNS}
    # each is told every runtime's function, as a JSON object: runtime -> the function's name
    assert set(told) == {"ingest", "score"}
    physical = {
        "SandboxFunction": "sandbox-minimal-fn",
        "SandboxScientificFunction": "sandbox-sci-fn",
        "SandboxLegacyFunction": "sandbox-legacy-fn",
    }
    for value in told.values():
        assert json.loads(_join(value, physical)) == {
            "minimal": "sandbox-minimal-fn",
            "scientific": "sandbox-sci-fn",
            "legacy": "sandbox-legacy-fn",
        }


def _join(value: Any, physical: dict[str, str]) -> str:
    """A Fn::Join of strings and Refs as CloudFormation would make it, each Ref its function's name."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return physical[value["Ref"]]
    separator, parts = value["Fn::Join"]
    return str(separator).join(_join(part, physical) for part in parts)


def test_sandbox_jobs_expire_after_a_day(resources: dict[str, Resource]) -> None:
    rules = resources["DataBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    (rule,) = [rule for rule in rules if rule.get("Prefix") == "sandbox/"]
    assert rule["ExpirationInDays"] == 1
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 1}
    assert rule["Status"] == "Enabled"


def test_score_alone_starts_the_pipeline_and_only_the_steps_that_announce_emit_events(
    role_statements: dict[str, list[Statement]],
) -> None:
    starts = {
        n for n, s in role_statements.items() if ("states:StartExecution", "${ArtifactPipeline}") in _pairs(s)
    }
    emits = {n for n, s in role_statements.items() if ("events:PutEvents", "${EventBus.Arn}") in _pairs(s)}
    assert starts == {"score", "reduce_scores"}
    # the API announces a manual dataset save; ingest, an upload no run takes
    assert emits == {"score", "ingest", "dead_letters", "api", *SHARD_STEPS}


def test_the_dead_letter_consumer_reads_the_run_steps_and_registrations_queues_only(
    functions: dict[str, Resource],
    of_type: Callable[[str], dict[str, Resource]],
    role_statements: dict[str, list[Statement]],
) -> None:
    # Given the queues where each step's failed asynchronous events land
    queues = {
        name: functions[name]["Properties"]["DeadLetterConfig"]["TargetArn"]["Fn::GetAtt"][0]
        for name in DRAINED
    }
    # Then the consumer is fed from exactly those, in batches whose failed messages it reports one by one
    mappings = [
        m["Properties"]
        for m in of_type("AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": "DeadLettersFunction"}
    ]
    assert sorted(m["EventSourceArn"]["Fn::GetAtt"][0] for m in mappings) == sorted(queues.values())
    assert all(m["FunctionResponseTypes"] == ["ReportBatchItemFailures"] for m in mappings)
    # and its role consumes those queues and no other, and sends to none
    consumed = {r for a, r in _pairs(role_statements["dead_letters"]) if a.startswith("sqs:")}
    assert consumed == {f"${{{queue}.Arn}}" for queue in queues.values()}
    assert "DeadLetterConfig" not in functions["dead_letters"]["Properties"]


def test_every_queue_feeding_a_function_hides_a_message_six_times_that_functions_timeout(
    resources: dict[str, Resource], of_type: Callable[[str], dict[str, Resource]]
) -> None:
    # Given every SQS queue that is an event source of a function, with the function it feeds
    fed = [
        (m["Properties"]["EventSourceArn"]["Fn::GetAtt"][0], m["Properties"]["FunctionName"]["Ref"])
        for m in of_type("AWS::Lambda::EventSourceMapping").values()
    ]
    fed = [(queue, function) for queue, function in fed if resources[queue]["Type"] == "AWS::SQS::Queue"]
    # Then each hides a received message for six times that function's timeout (Lambda refuses a queue
    # hiding it for less than the timeout; six times is AWS's advice), in seconds
    hidden = {pair: resources[pair[0]]["Properties"].get("VisibilityTimeout") for pair in fed}
    advised = {pair: 6 * resources[pair[1]]["Properties"]["Timeout"] for pair in fed}
    assert len(fed) == len(DRAINED)
    assert hidden == advised


def test_ingest_cannot_touch_step_functions(role_statements: dict[str, list[Statement]]) -> None:
    assert not [action for action, _ in _pairs(role_statements["ingest"]) if action.startswith("states:")]


def test_api_cannot_delete_objects_or_records(role_statements: dict[str, list[Statement]]) -> None:
    pairs = _pairs(role_statements["api"])
    assert "s3:DeleteObject" not in {action for action, _ in pairs}
    # Powertools deletes its own idempotency record after a failed request, and an owner deletes a provider
    # connection; runs, datasets and environments are never deleted.
    assert {resource for action, resource in pairs if action == "dynamodb:DeleteItem"} == {
        "${IdempotencyTable.Arn}",
        "${ConnectionsTable.Arn}",
    }


def test_uploads_trigger_the_function_that_owns_the_prefix(triggers: dict[str, Any]) -> None:
    assert triggers == EXPECTED_TRIGGERS


def test_no_function_writes_under_its_own_trigger_prefix(
    triggers: dict[str, Any], role_statements: dict[str, list[Statement]]
) -> None:
    for name, trigger in triggers.items():
        writes = {
            prefix for action, prefix in _object_access(role_statements[name]) if action == "s3:PutObject"
        }
        assert trigger["prefix"] not in writes, name


def test_a_function_writing_under_its_own_trigger_prefix_is_refused() -> None:
    # Given a spec whose function would write where its own trigger listens
    from aws_cdk import App, Duration, Stack

    from infra.app import FEATURE_FLAGS
    from infra.constructs.catalog import FunctionSpec, Trigger
    from infra.constructs.events import Events
    from infra.constructs.functions import Functions
    from infra.constructs.layer import Layer
    from infra.constructs.storage import Storage, StoredData
    from infra.synth import NO_BUNDLING

    looping = FunctionSpec(
        name="ingest",
        logical_id="LoopingFunction",
        description="writes under its own trigger prefix",
        memory_mb=128,
        timeout=Duration.seconds(3),
        trigger=Trigger("submissions/"),
        writes=("submissions/",),
    )
    # No bundling: building the layer would pip-install its dependencies, which this check does not need.
    stack = Stack(App(context={**FEATURE_FLAGS, **NO_BUNDLING}), "Loop")
    storage = Storage(stack, "Storage")

    # When the functions are built / Then the stack refuses it, naming the prefix
    with pytest.raises(ValueError, match="re-trigger itself by writing under submissions/"):
        Functions(
            stack,
            "Functions",
            storage=StoredData(
                bucket=storage.bucket,
                table_names={field: table.table_name for field, table in storage.tables.items()},
                **storage.tables,
            ),
            bus=Events(stack, "Events").bus,
            layer=Layer(stack, "Layer").layer,
            specs=(looping,),
        )


@pytest.mark.slow
def test_scoring_concurrency_is_unreserved_unless_the_deployer_caps_it(
    functions: dict[str, Any], functions_of: Callable[[dict[str, Resource]], dict[str, Resource]]
) -> None:
    # Given the default synthesis, and one with `cdk deploy -c benchgen:scoreConcurrency=5`
    from infra.synth import synthesize

    capped = synthesize({"benchgen:scoreConcurrency": "5"}).template

    # Then only the capped one reserves concurrency for scoring, and for nothing else
    assert "ReservedConcurrentExecutions" not in functions["score"]["Properties"]
    reserved = {
        name: function["Properties"].get("ReservedConcurrentExecutions")
        for name, function in functions_of(capped["Resources"]).items()
    }
    assert reserved == {
        "register_environment": None,
        "ingest": None,
        "score": 5,
        "build_artifact": None,
        "build_package": None,
        "dead_letters": None,
        "api": None,
        **dict.fromkeys(SANDBOXES.values()),
        "prepare_generate": None,
        "prepare_check": None,
        **dict.fromkeys(LIVE_RUN_STEPS),
        **dict.fromkeys(BATCH_STEPS),
        **dict.fromkeys(TRAINING_STEPS),
        **dict.fromkeys(EVALUATION_STEPS),
        **dict.fromkeys(SHARD_STEPS),
        **dict.fromkeys(JUDGING_STEPS),
        **dict.fromkeys(CALIBRATION_STEPS),
    }


@pytest.mark.parametrize(
    "name",
    [
        "deploy_model",
        "infer_shard",
        "plan_judging",
        "judge_shard",
        "upload_training",
        "training_job",
        "submit_batch",
        "poll_batch",
    ],
)
def test_model_callers_read_only_secrets_tagged_for_inference(
    role_statements: dict[str, list[Statement]], name: str
) -> None:
    (secrets,) = [s for s in role_statements[name] if "secretsmanager:GetSecretValue" in s["Action"]]
    assert secrets["Action"] == ["secretsmanager:GetSecretValue"]
    assert secrets["Condition"] == {"StringEquals": {"aws:ResourceTag/benchgen:access": "inference"}}


def test_only_the_api_and_the_evaluation_start_step_start_live_runs(
    role_statements: dict[str, list[Statement]], functions: dict[str, Resource]
) -> None:
    starters = {
        name: {resource for action, resource in _pairs(statements) if action == "states:StartExecution"}
        for name, statements in role_statements.items()
    }
    assert {name for name, found in starters.items() if "${InferencePipeline}" in found} == {
        "api",
        "start_evaluation",
    }
    assert starters["start_evaluation"] == {"${InferencePipeline}"}
    start_variables = functions["start_evaluation"]["Properties"]["Environment"]["Variables"]
    assert start_variables["INFERENCE_STATE_MACHINE_ARN"] == {"Ref": "InferencePipeline"}
    variables = functions["api"]["Properties"]["Environment"]["Variables"]
    assert variables["INFERENCE_STATE_MACHINE_ARN"] == {"Ref": "InferencePipeline"}
    assert (
        functions["plan_inference"]["Properties"]["Environment"]["Variables"]["INFERENCE_SHARD_SIZE"] == "100"
    )


def test_only_the_training_job_function_reaches_training_jobs_and_only_benchgens_sagemaker_jobs(
    role_statements: dict[str, list[Statement]],
) -> None:
    reaching = {
        name
        for name, statements in role_statements.items()
        for action, _ in _pairs(statements)
        if action in TRAINING_JOBS - {"secretsmanager:GetSecretValue", "iam:PassRole"}
    }
    assert reaching == {"training_job"}
    pairs = _pairs(role_statements["training_job"])
    sagemaker = {resource for action, resource in pairs if action.startswith("sagemaker:")}
    assert sagemaker == {"arn:${AWS::Partition}:sagemaker:*:${AWS::AccountId}:training-job/benchgen-*"}


def test_the_connections_role_is_passed_only_to_the_training_providers(
    role_statements: dict[str, list[Statement]],
) -> None:
    (passing,) = [s for s in role_statements["training_job"] if "iam:PassRole" in s["Action"]]
    assert passing["Action"] == ["iam:PassRole"]
    assert passing["Condition"] == {
        "StringEquals": {"iam:PassedToService": ["bedrock.amazonaws.com", "sagemaker.amazonaws.com"]}
    }


def test_only_the_api_starts_training_and_only_the_training_pipeline(
    role_statements: dict[str, list[Statement]], functions: dict[str, Resource]
) -> None:
    starters = {
        name
        for name, statements in role_statements.items()
        for action, resource in _pairs(statements)
        if action == "states:StartExecution" and resource == "${TrainingPipeline}"
    }
    assert starters == {"api"}
    holders = {
        name: f["Properties"]["Environment"]["Variables"]["TRAINING_STATE_MACHINE_ARN"]
        for name, f in functions.items()
        if "TRAINING_STATE_MACHINE_ARN" in f["Properties"]["Environment"]["Variables"]
    }
    assert holders == {"api": {"Ref": "TrainingPipeline"}}


def test_only_the_api_starts_evaluations(
    role_statements: dict[str, list[Statement]], functions: dict[str, Resource]
) -> None:
    starters = {
        name
        for name, statements in role_statements.items()
        if ("states:StartExecution", "${EvaluationPipeline}") in _pairs(statements)
    }
    holders = {
        name
        for name, f in functions.items()
        if "EVALUATION_STATE_MACHINE_ARN" in f["Properties"]["Environment"]["Variables"]
    }
    assert starters == holders == {"api"}


def test_only_submit_passes_a_role_and_only_the_bedrock_batch_role_to_bedrock(
    role_statements: dict[str, list[Statement]],
) -> None:
    passing = {
        name: [s for s in statements if "iam:PassRole" in _actions(s)]
        for name, statements in role_statements.items()
    }
    (statement,) = passing["submit_batch"]
    assert statement["Resource"] == ["${BedrockBatchRole.Arn}"]
    assert statement["Condition"] == {"StringEquals": {"iam:PassedToService": "bedrock.amazonaws.com"}}
    assert {name for name, found in passing.items() if found} == {"submit_batch", "training_job"}


def test_only_the_batch_steps_reach_batch_jobs(role_statements: dict[str, list[Statement]]) -> None:
    reaching = {
        name
        for name, statements in role_statements.items()
        for action, _ in _pairs(statements)
        if action in BATCH_JOBS - {"secretsmanager:GetSecretValue"}
    }
    assert reaching == {"submit_batch", "poll_batch"}


def test_submit_is_told_the_bedrock_batch_role(functions: dict[str, Resource]) -> None:
    variables = functions["submit_batch"]["Properties"]["Environment"]["Variables"]
    assert variables["BEDROCK_BATCH_ROLE_ARN"] == {"Fn::GetAtt": ["BedrockBatchRole", "Arn"]}


def _actions(statement: Statement) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_only_the_score_function_starts_the_judging_pipeline_told_its_named_arn(
    role_statements: dict[str, list[Statement]], functions: dict[str, Resource]
) -> None:
    # The pipeline invokes the score function last, so the score function is told its ARN by name, not by
    # a reference (the two would depend on each other)
    arn = (
        "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:"
        "BenchGenPipelines-JudgingPipeline"
    )
    starters = {
        name
        for name, statements in role_statements.items()
        for action, resource in _pairs(statements)
        if action == "states:StartExecution" and "JudgingPipeline" in resource
    }
    assert starters == {"score"}
    assert {
        resource for action, resource in _pairs(role_statements["score"]) if "JudgingPipeline" in resource
    } == {arn}
    variables = functions["score"]["Properties"]["Environment"]["Variables"]
    assert render_value(variables["JUDGING_STATE_MACHINE_ARN"]) == arn
    assert (
        functions["plan_judging"]["Properties"]["Environment"]["Variables"]["INFERENCE_SHARD_SIZE"] == "100"
    )


def test_only_registration_starts_the_calibration_pipeline(
    role_statements: dict[str, list[Statement]], functions: dict[str, Resource]
) -> None:
    starters = {
        name: resource
        for name, statements in role_statements.items()
        for action, resource in _pairs(statements)
        if action == "states:StartExecution" and "CalibrationPipeline" in resource
    }
    assert starters == {"register_environment": "${CalibrationPipeline}"}
    variables = functions["register_environment"]["Properties"]["Environment"]["Variables"]
    assert variables["CALIBRATION_STATE_MACHINE_ARN"] == {"Ref": "CalibrationPipeline"}
    assert variables["INFERENCE_SHARD_SIZE"] == "100"
