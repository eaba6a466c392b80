"""The Lambda functions BenchGen has, each declared once: its FunctionSpec, whose name is its folder under
functions/ (the sandboxes share one). The builder (infra/constructs/functions.py), the stacks, cdk-nag's
acknowledgments and the local cloud reach a function through its spec here, never by spelling its name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any

from aws_cdk import Duration

from benchgen.bucket_layout import (
    ARTIFACT_PART,
    BATCH_MANIFEST,
    BUNDLE,
    CALIBRATIONS,
    CASE_SCOPE,
    CASE_SHARDS,
    GENERATED_SUBMISSION,
    PARTS,
    RUN_SHARDS,
    SCORE_PART,
    judging_key,
)
from benchgen.bundle.runtime import MINIMAL, RUNTIMES
from benchgen.judging import JUDGE_NAME, JUDGMENTS_NAME
from benchgen.outputs import RunOutput
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from infra import sizing
from infra.constructs.storage import (
    BATCH_OUTPUT_PREFIX,
    ENVIRONMENTS_PREFIX,
    EVALUATIONS_PREFIX,
    JUDGING_BATCH_OUTPUT,
    PACKAGES_PREFIX,
    PREDICTIONS_PREFIX,
    PREPARATIONS_PREFIX,
    RUNS_PREFIX,
    SANDBOX_PREFIX,
    SUBMISSIONS_PREFIX,
    TRAINING_PREFIX,
)
from infra.sizing import DEFAULT_SHARD_CASES, RunStepSizing, Sizing

SANDBOX_FOLDER = "sandbox"


class TableAccess(Enum):
    READ = "read"
    READ_WRITE = "read_write"
    READ_CREATE_DELETE = "read_create_delete"


class DataTable(Enum):
    CONNECTIONS = "connections"
    ENVIRONMENTS = "environments"
    RUNS = "runs"
    DATASETS = "datasets"
    PREPARATIONS = "preparations"
    PACKAGES = "packages"
    TRAINING_RUNS = "training_runs"
    EVALUATIONS = "evaluations"


@dataclass(frozen=True)
class Trigger:
    """An S3 ObjectCreated notification on the data bucket."""

    prefix: str
    suffix: str | None = None


@dataclass(frozen=True)
class FunctionSpec:
    name: str
    logical_id: str
    description: str
    memory_mb: int
    timeout: Duration
    ephemeral_storage_mib: int = 512
    reserved_concurrency: int | None = None
    trigger: Trigger | None = None
    # Key prefixes ("runs/"), or key patterns for a narrower grant ("runs/*/scoring_output.zip").
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    tables: Mapping[DataTable, TableAccess] = field(default_factory=dict)
    idempotent: bool = False
    puts_events: bool = False
    # Hands untrusted programs to the sandbox function (and passes their files through SANDBOX_PREFIX).
    runs_programs: bool = False
    # The functions whose dead-letter queues this one consumes (an SQS event source each). It is invoked
    # synchronously by Lambda's poller, so it has no dead-letter queue of its own: a message it cannot
    # handle stays in the queue it came from.
    drains: tuple[str, ...] = ()
    # The sandbox itself: no resource names in its environment, no grants at all (not even its logs: the
    # synchronous caller receives its errors), no tracing, no dead-letter queue (it is never invoked
    # asynchronously). One per runtime, each an image holding that runtime's environment.
    sandbox: bool = False
    runtime: str | None = None
    # The folder under functions/ whose handler it runs, when not its name (every sandbox runs "sandbox").
    code_folder: str | None = None
    # A run step whose work grows with its cases: its sizing at the deployed shard size (memory_mb,
    # timeout and ephemeral_storage_mib above are at the default one).
    sizing: RunStepSizing | None = None
    # Calls live models (each provider kind's IAM needs for it) and reads their connections' API keys.
    calls_models: bool = False
    # Starts, reads and stops provider training jobs (each kind's IAM needs for it, and passing the
    # connection's role to the providers that assume it).
    trains_models: bool = False
    # Reads the API keys of connections tagged for BenchGen (for a provider's own file upload).
    reads_provider_keys: bool = False
    # Submits and reads live runs' provider batch jobs (each kind's IAM needs for it, and passing the
    # stack's Bedrock batch role to Bedrock).
    runs_batches: bool = False

    @property
    def folder(self) -> str:
        return self.code_folder or self.name

    def at_shard_size(self, shard_cases: int) -> FunctionSpec:
        """This function as deployed when runs of more than ``shard_cases`` cases are sharded."""
        return self if self.sizing is None else replace(self, **sized(self.sizing(shard_cases)))


# A sandbox function per runtime: ``sandbox`` (SandboxFunction) for the minimal runtime, as before runtimes,
# and ``sandbox_<runtime>`` for each other.
SANDBOXES = tuple(
    FunctionSpec(
        name=SANDBOX_FOLDER if runtime is MINIMAL else f"{SANDBOX_FOLDER}_{runtime.name}",
        logical_id="SandboxFunction" if runtime is MINIMAL else f"Sandbox{runtime.name.title()}Function",
        description=f"Runs one untrusted program in the {runtime.name} runtime; reaches no data",
        memory_mb=2048,
        timeout=Duration.minutes(15),
        ephemeral_storage_mib=4096,
        sandbox=True,
        runtime=runtime.name,
        code_folder=SANDBOX_FOLDER,
    )
    for runtime in RUNTIMES.values()
)


# A run restricted to chosen cases names their list here: each step that opens its environment reads it.
SCOPE_PATTERN = f"{RUNS_PREFIX}*/{CASE_SCOPE}"
# A judging pass's working files, and the judgments it leaves for the score step.
JUDGING_PATTERN = f"{RUNS_PREFIX}*/judging/*"
JUDGMENTS_PATTERN = f"{RUNS_PREFIX}*/{JUDGMENTS_NAME}"
JUDGE_FILE_PATTERN = judging_key("*", JUDGE_NAME)
# A sharded run's inputs (ingest writes them beside the prediction output) and its shards' parts.
SHARD_INPUTS_PATTERN = f"{PREDICTIONS_PREFIX}*/{RUN_SHARDS}*"
SCORE_PARTS_PATTERN = f"{RUNS_PREFIX}*/{PARTS}{SCORE_PART}/*"
ARTIFACT_PARTS_PATTERN = f"{RUNS_PREFIX}*/{PARTS}{ARTIFACT_PART}/*"
# A live run's generated submission, which its assembling step looks for before uploading it (a retried
# step does not start ingest twice). Without a read of it S3 answers that look with 403, not 404.
GENERATED_SUBMISSION_PATTERN = f"{SUBMISSIONS_PREFIX}*/{GENERATED_SUBMISSION}"
# Environment bundles, which the API looks for before handing out an upload URL (an upload not registered
# yet is the same version in flight): S3 answers that look with 403 without a read.
BUNDLE_PATTERN = f"{ENVIRONMENTS_PREFIX}*/{BUNDLE}"


def sized(size: Sizing) -> dict[str, Any]:
    """A FunctionSpec's memory, timeout and scratch disk from ``infra.sizing``."""
    return {
        "memory_mb": size.memory_mb,
        "timeout": Duration.seconds(size.timeout_s),
        "ephemeral_storage_mib": size.ephemeral_storage_mib,
    }


def run_step(size_at: RunStepSizing) -> dict[str, Any]:
    """A run step's FunctionSpec fields: its sizing at the default shard size, and how to size it at the
    deployed one (``FunctionSpec.at_shard_size``)."""
    return {**sized(size_at(DEFAULT_SHARD_CASES)), "sizing": size_at}


REGISTER_ENVIRONMENT = FunctionSpec(
    name="register_environment",
    logical_id="RegisterEnvironmentFunction",
    description="Validates an uploaded environment bundle and records the environment version",
    **run_step(sizing.registration),
    trigger=Trigger(ENVIRONMENTS_PREFIX, ".zip"),
    # CALIBRATIONS: the plan of a judge's calibration, which it reads back to start it on a retry
    reads=(ENVIRONMENTS_PREFIX, CALIBRATIONS),
    # the cases of each task that runs may score in shards, cut into shard files; the labelled answers
    # of a judged bundle cut into the shards its CalibrationPipeline judges
    writes=(CASE_SHARDS, CALIBRATIONS),
    # the connection its judge: section names, which the calibration's judging asks
    tables={DataTable.ENVIRONMENTS: TableAccess.READ_WRITE, DataTable.CONNECTIONS: TableAccess.READ},
    idempotent=True,
)

INGEST = FunctionSpec(
    name="ingest",
    logical_id="IngestFunction",
    description=f"Turns a submission into {RunOutput.PREDICTION_OUTPUT.file_name} for the scoring step",
    **run_step(sizing.ingestion),
    trigger=Trigger(SUBMISSIONS_PREFIX),
    reads=(SUBMISSIONS_PREFIX, ENVIRONMENTS_PREFIX, SANDBOX_PREFIX, SCOPE_PATTERN),
    writes=(PREDICTIONS_PREFIX, SANDBOX_PREFIX),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
    idempotent=True,
    # announces an upload no run takes (SubmissionRefused)
    puts_events=True,
    runs_programs=True,
)

SCORE = FunctionSpec(
    name="score",
    logical_id="ScoreFunction",
    description="Runs the scoring program, records the run and starts the artifact pipeline",
    **run_step(sizing.scoring),
    trigger=Trigger(PREDICTIONS_PREFIX, RunOutput.PREDICTION_OUTPUT.file_name),
    # JUDGMENTS_PATTERN: a run whose template asks a judge is scored with its judging pass's judgments.
    reads=(PREDICTIONS_PREFIX, ENVIRONMENTS_PREFIX, SANDBOX_PREFIX, SCOPE_PATTERN, JUDGMENTS_PATTERN),
    writes=(RUNS_PREFIX, SANDBOX_PREFIX),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
    idempotent=True,
    puts_events=True,
    runs_programs=True,
)

BUILD_ARTIFACT = FunctionSpec(
    name="build_artifact",
    logical_id="BuildArtifactFunction",
    description="Builds the finetune artifact of a scored run and saves its dataset",
    **run_step(sizing.artifact),
    reads=(RUNS_PREFIX, ENVIRONMENTS_PREFIX),
    writes=(RUNS_PREFIX,),
    tables={
        DataTable.RUNS: TableAccess.READ_WRITE,
        DataTable.ENVIRONMENTS: TableAccess.READ,
        DataTable.DATASETS: TableAccess.READ_WRITE,
    },
    idempotent=True,
)

# The ShardedScoring state machine's steps. Each reads the registered bundle and its own inputs, and
# writes only its parts (or, for the reduce step, the run's files); each fails the run it works on.
SCORE_SHARD = FunctionSpec(
    name="score_shard",
    logical_id="ScoreShardFunction",
    description="Judges one shard of a sharded run and uploads its score part",
    **run_step(sizing.shard_scoring),
    # JUDGMENTS_PATTERN: a judged run's shards are scored with the judgments of the whole run.
    reads=(ENVIRONMENTS_PREFIX, CASE_SHARDS, SHARD_INPUTS_PATTERN, JUDGMENTS_PATTERN),
    writes=(SCORE_PARTS_PATTERN, f"{RUNS_PREFIX}*/{RunOutput.FAILURE_LOG.file_name}"),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
    puts_events=True,
)

BUILD_SHARD_ARTIFACT = FunctionSpec(
    name="build_shard_artifact",
    logical_id="BuildShardArtifactFunction",
    description="Collects the finetune examples of one shard of a sharded run",
    **run_step(sizing.shard_artifact),
    reads=(ENVIRONMENTS_PREFIX, CASE_SHARDS, SCORE_PARTS_PATTERN),
    writes=(ARTIFACT_PARTS_PATTERN, f"{RUNS_PREFIX}*/{RunOutput.FAILURE_LOG.file_name}"),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
    puts_events=True,
)

REDUCE_SCORES = FunctionSpec(
    name="reduce_scores",
    logical_id="ReduceScoresFunction",
    description="Merges a sharded run's scores, records the run and starts the artifact pipeline",
    **run_step(sizing.score_merge),
    reads=(ENVIRONMENTS_PREFIX, SCORE_PARTS_PATTERN),
    writes=(RUNS_PREFIX,),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
    puts_events=True,
)

BUILD_PACKAGE = FunctionSpec(
    name="build_package",
    logical_id="BuildPackageFunction",
    description="Builds one export package of a preparation and records it",
    memory_mb=2048,
    # A package streams over every example of its preparation, and checks each training row against
    # the held-out cases: a large preparation takes minutes, so it gets Lambda's longest timeout.
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=4096,
    # Of a preparation, only the examples and the held-out list, and the registered bundle (at its
    # validated version) for the held-out cases' questions the contamination report compares; the
    # package pipeline hands it the preparation's description, so of the tables it writes only the
    # package it records.
    reads=(
        ENVIRONMENTS_PREFIX,
        f"{PREPARATIONS_PREFIX}*/{EXAMPLES_NAME}",
        f"{PREPARATIONS_PREFIX}*/{HELD_OUT_NAME}",
    ),
    writes=(PACKAGES_PREFIX,),
    tables={DataTable.PACKAGES: TableAccess.READ_WRITE},
)

DEAD_LETTERS = FunctionSpec(
    name="dead_letters",
    logical_id="DeadLettersFunction",
    description="Fails the run or rejects the bundle whose event failed every delivery",
    memory_mb=256,
    timeout=Duration.seconds(60),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ_WRITE},
    puts_events=True,
    drains=(REGISTER_ENVIRONMENT.name, INGEST.name, SCORE.name),
)

API = FunctionSpec(
    name="api",
    logical_id="ApiFunction",
    description="The REST API behind API Gateway",
    memory_mb=512,
    # API Gateway gives up after 29 seconds; a longer timeout would only hide a stuck request.
    timeout=Duration.seconds(29),
    # Presigned GET urls for the run's files (submission, prediction output, runs/...) and for packages;
    # presigned PUT urls are signed with this role, so it needs PutObject on the two upload prefixes.
    # An evaluation's report is read (its JSON) and handed out (its HTML) from evaluations/. Bundles are
    # only looked for (BUNDLE_PATTERN).
    reads=(
        SUBMISSIONS_PREFIX,
        PREDICTIONS_PREFIX,
        RUNS_PREFIX,
        PREPARATIONS_PREFIX,
        PACKAGES_PREFIX,
        EVALUATIONS_PREFIX,
        BUNDLE_PATTERN,
    ),
    writes=(SUBMISSIONS_PREFIX, ENVIRONMENTS_PREFIX),
    tables={
        DataTable.CONNECTIONS: TableAccess.READ_CREATE_DELETE,
        DataTable.RUNS: TableAccess.READ_WRITE,
        DataTable.DATASETS: TableAccess.READ_WRITE,
        DataTable.ENVIRONMENTS: TableAccess.READ_WRITE,
        DataTable.PREPARATIONS: TableAccess.READ_WRITE,
        DataTable.PACKAGES: TableAccess.READ_WRITE,
        DataTable.TRAINING_RUNS: TableAccess.READ_WRITE,
        DataTable.EVALUATIONS: TableAccess.READ_WRITE,
    },
    # POST /runs with an Idempotency-Key answers a retry with the run the first request created.
    idempotent=True,
    # A manual dataset save announces DatasetSaved, as the pipeline does for an automatic one.
    puts_events=True,
)

DEPLOY_MODEL = FunctionSpec(
    name="deploy_model",
    logical_id="DeployModelFunction",
    description="Marks a live run Deploying and waits until its model answers",
    memory_mb=256,
    # The longest call a connection allows (300 s), its retries and the time to record the outcome.
    timeout=Duration.minutes(15),
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
    calls_models=True,
)

PLAN_INFERENCE = FunctionSpec(
    name="plan_inference",
    logical_id="PlanInferenceFunction",
    description="Cuts a live run's cases into shards for the inference Map",
    memory_mb=1024,
    timeout=Duration.minutes(5),
    ephemeral_storage_mib=2048,
    reads=(ENVIRONMENTS_PREFIX, SCOPE_PATTERN),
    writes=(RUNS_PREFIX,),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
)

INFER_SHARD = FunctionSpec(
    name="infer_shard",
    logical_id="InferShardFunction",
    description="Asks a live model every case of one shard, with retries",
    memory_mb=512,
    timeout=Duration.minutes(15),
    reads=(RUNS_PREFIX,),
    writes=(RUNS_PREFIX,),
    # Read-write for the run's progress, which each shard adds to as it goes.
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
    calls_models=True,
)

ASSEMBLE_PREDICTIONS = FunctionSpec(
    name="assemble_predictions",
    logical_id="AssemblePredictionsFunction",
    description="Writes a live run's inference log and its generated submission",
    memory_mb=1024,
    timeout=Duration.minutes(5),
    ephemeral_storage_mib=2048,
    reads=(RUNS_PREFIX, GENERATED_SUBMISSION_PATTERN),
    writes=(RUNS_PREFIX, SUBMISSIONS_PREFIX),
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
)

# The JudgingPipeline's steps: a run's answers judged by its environment's judge before it is scored. Plan
# reads the run's bundle and prediction output and asks the judge one cheap call; each shard reads and
# writes only the pass's working files; Assemble writes the run's judgments, which the score step reads.
PLAN_JUDGING = FunctionSpec(
    name="plan_judging",
    logical_id="PlanJudgingFunction",
    description="Finds a run's judge and cuts its cases and answers into shards for the judging Map",
    memory_mb=1024,
    # The judge's first call may take the longest a connection allows (300 s), with its retries.
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=2048,
    reads=(
        ENVIRONMENTS_PREFIX,
        SCOPE_PATTERN,
        f"{PREDICTIONS_PREFIX}*/{RunOutput.PREDICTION_OUTPUT.file_name}",
    ),
    writes=(JUDGING_PATTERN,),
    tables={
        DataTable.RUNS: TableAccess.READ_WRITE,
        DataTable.ENVIRONMENTS: TableAccess.READ,
        DataTable.CONNECTIONS: TableAccess.READ,
    },
    calls_models=True,
)

JUDGE_SHARD = FunctionSpec(
    name="judge_shard",
    logical_id="JudgeShardFunction",
    description="Asks a run's or a calibration's judge about every answer of one shard, with retries",
    memory_mb=512,
    timeout=Duration.minutes(15),
    # a run's judging pass, or a version's judge calibration (whose running status it reads)
    reads=(JUDGING_PATTERN, CALIBRATIONS),
    writes=(JUDGING_PATTERN, CALIBRATIONS),
    tables={DataTable.RUNS: TableAccess.READ, DataTable.ENVIRONMENTS: TableAccess.READ},
    calls_models=True,
)

ASSEMBLE_JUDGMENTS = FunctionSpec(
    name="assemble_judgments",
    logical_id="AssembleJudgmentsFunction",
    description="Writes a run's judgments and records its judge's calls, tokens and cost",
    memory_mb=1024,
    # Reading a judging pass's batch output: one job's records at once, as a live run's assembly does.
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=2048,
    reads=(JUDGING_PATTERN,),
    writes=(JUDGMENTS_PATTERN, JUDGING_PATTERN),
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
)

# The CalibrationPipeline's last step: a version's judge calibration's figures from its shards' judgments,
# recorded on the version (or its caught failure).
ASSEMBLE_CALIBRATION = FunctionSpec(
    name="assemble_calibration",
    logical_id="AssembleCalibrationFunction",
    description="Records a judge's agreement with people from its judgments of the labelled answers",
    memory_mb=512,
    timeout=Duration.minutes(5),
    reads=(CALIBRATIONS,),
    tables={DataTable.ENVIRONMENTS: TableAccess.READ_WRITE},
)

# The batch branch of a live run. Submit streams the case shards into job files on disk (a job holds
# at most 1 GB of records, Bedrock's input file limit) and hands each to its provider; Poll copies out a
# finished job's output that the provider keeps (at most the 200 MB of an OpenAI-style batch's input,
# and its answers); the manifest that lands last assembles the run, reading one job's records at once.
SUBMIT_BATCH = FunctionSpec(
    name="submit_batch",
    logical_id="SubmitBatchFunction",
    description="Cuts a live run's cases or a judging pass's prompts into batch jobs and submits them",
    memory_mb=1024,
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=4096,
    reads=(RUNS_PREFIX,),
    writes=(RUNS_PREFIX,),
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
    runs_batches=True,
    reads_provider_keys=True,
)

POLL_BATCH = FunctionSpec(
    name="poll_batch",
    logical_id="PollBatchFunction",
    description="Looks at a run's batch jobs (live or judging) and copies out the output a provider keeps",
    memory_mb=512,
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=4096,
    # a judging pass's judge (as its Plan found it) and its jobs' output
    reads=(BATCH_OUTPUT_PREFIX, JUDGE_FILE_PATTERN, JUDGING_BATCH_OUTPUT),
    writes=(BATCH_OUTPUT_PREFIX, JUDGING_BATCH_OUTPUT),
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
    runs_batches=True,
    reads_provider_keys=True,
)

ASSEMBLE_BATCH = FunctionSpec(
    name="assemble_batch",
    logical_id="AssembleBatchFunction",
    description="Writes a batch live run's answers and generated submission once its jobs' output landed",
    memory_mb=2048,
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=4096,
    trigger=Trigger(BATCH_OUTPUT_PREFIX, BATCH_MANIFEST),
    reads=(BATCH_OUTPUT_PREFIX, RUNS_PREFIX, GENERATED_SUBMISSION_PATTERN),
    writes=(RUNS_PREFIX, SUBMISSIONS_PREFIX),
    tables={DataTable.RUNS: TableAccess.READ_WRITE},
    idempotent=True,
)

# Sized for a preparation over 100k judged cases (bench/preparation_bench.py: 35 s and a peak RSS of
# 52 MB at 100,000 cases on two shared cores, flat from 10,000). Generation runs on one core, so it gets
# 1769 MB, where Lambda gives a whole vCPU; more would buy nothing. Up to 20 runs read 20 times the
# verdicts: 10 minutes leaves that room. Disk holds the most: the bundle (up to 2 GiB unpacked, the
# registration limit), every run's scoring_output.zip (about 100 bytes a case: 10 MB a run), and
# examples.jsonl beside its SQLite scratch (0.8 KB a row for gsm8k-en; at 2 KB for longer texts,
# 100k cases x 5 variants is 1 GB, twice over while the scratch is read out in order).
PREPARE_GENERATE = FunctionSpec(
    name="prepare_generate",
    logical_id="PrepareGenerateFunction",
    description="Generates a preparation's examples and held-out cases from judged runs",
    memory_mb=1769,
    timeout=Duration.minutes(10),
    ephemeral_storage_mib=10240,
    # the registered bundle (at its validated version) and each run's verdicts, nothing else of a run
    reads=(ENVIRONMENTS_PREFIX, f"{RUNS_PREFIX}*/{RunOutput.SCORING_OUTPUT.file_name}"),
    writes=(PREPARATIONS_PREFIX,),
)

# Reads examples.jsonl and held_out.jsonl as streams (counts and the held-out hashes stay in memory,
# about 10k of them for 100k cases), so it needs no disk beyond the default. The same bench times the
# check at 13 s for 100,000 cases; at 1024 MB (about half a vCPU) 5 minutes leaves room for 20 runs.
PREPARE_CHECK = FunctionSpec(
    name="prepare_check",
    logical_id="PrepareCheckFunction",
    description="Writes a preparation's coverage, checks no held-out case reached training, records it",
    memory_mb=1024,
    timeout=Duration.minutes(5),
    reads=(PREPARATIONS_PREFIX,),
    writes=(PREPARATIONS_PREFIX,),
    tables={DataTable.PREPARATIONS: TableAccess.READ_WRITE},
)

# The training pipeline's tasks. Each reads the training run and writes it only through conditional
# transitions; only the two that reach a provider may read provider keys.
VALIDATE_TRAINING = FunctionSpec(
    name="validate_training",
    logical_id="ValidateTrainingFunction",
    description="Checks a training run against its connection's profile before anything is sent",
    memory_mb=256,
    timeout=Duration.seconds(60),
    tables={
        DataTable.TRAINING_RUNS: TableAccess.READ,
        DataTable.CONNECTIONS: TableAccess.READ,
        DataTable.PACKAGES: TableAccess.READ,
    },
)

# A package zip holds at most the profile's row limit (20,000 rows for Bedrock, a few tens of MB): it
# is read whole, checked row by row, and only its train and validation files are sent on.
UPLOAD_TRAINING = FunctionSpec(
    name="upload_training",
    logical_id="UploadTrainingFunction",
    description="Sends a training run's train and validation files once none carries a held-out case",
    memory_mb=1024,
    timeout=Duration.minutes(10),
    ephemeral_storage_mib=2048,
    reads=(PACKAGES_PREFIX,),
    writes=(TRAINING_PREFIX,),
    tables={DataTable.TRAINING_RUNS: TableAccess.READ, DataTable.CONNECTIONS: TableAccess.READ},
    reads_provider_keys=True,
)

TRAINING_JOB = FunctionSpec(
    name="training_job",
    logical_id="TrainingJobFunction",
    description="Starts, polls, times out or fails a training run's provider job and records it",
    memory_mb=256,
    timeout=Duration.minutes(2),
    tables={DataTable.TRAINING_RUNS: TableAccess.READ_WRITE, DataTable.CONNECTIONS: TableAccess.READ},
    trains_models=True,
    reads_provider_keys=True,
)

# The evaluation pipeline's steps. Start reads the package (its held-out list), writes each new run's
# case scope, records the runs and starts their InferencePipelines (granted by the stack).
START_EVALUATION = FunctionSpec(
    name="start_evaluation",
    logical_id="StartEvaluationFunction",
    description="Creates or reuses an evaluation's two live runs on the held-out cases and starts them",
    memory_mb=512,
    timeout=Duration.minutes(2),
    reads=(PACKAGES_PREFIX,),
    writes=(SCOPE_PATTERN,),
    tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.EVALUATIONS: TableAccess.READ_WRITE},
)

CHECK_EVALUATION = FunctionSpec(
    name="check_evaluation",
    logical_id="CheckEvaluationFunction",
    description="Tells whether both of an evaluation's runs are finished",
    memory_mb=256,
    timeout=Duration.seconds(30),
    tables={DataTable.RUNS: TableAccess.READ, DataTable.EVALUATIONS: TableAccess.READ},
)

# Reads the package and both runs' verdicts; writes the report and records the evaluation Completed
# (or, sent the pipeline's caught failure, Failed). Where the environment's template asks a judge, it reads
# the environment's bundle (its held-out cases, as the run's case scope narrows them) and the judge's
# connection, and asks the judge about each held-out pair: the held-out set is small, and the step stops
# asking before its time ends.
COMPARE_EVALUATION = FunctionSpec(
    name="compare_evaluation",
    logical_id="CompareEvaluationFunction",
    description="Compares an evaluation's two runs on the held-out cases, writes its report, records it",
    memory_mb=1024,
    timeout=Duration.minutes(15),
    ephemeral_storage_mib=2048,
    reads=(
        PACKAGES_PREFIX,
        f"{RUNS_PREFIX}*/{RunOutput.SCORING_OUTPUT.file_name}",
        ENVIRONMENTS_PREFIX,
        SCOPE_PATTERN,
    ),
    writes=(EVALUATIONS_PREFIX,),
    tables={
        DataTable.RUNS: TableAccess.READ,
        DataTable.EVALUATIONS: TableAccess.READ_WRITE,
        DataTable.ENVIRONMENTS: TableAccess.READ,
        DataTable.CONNECTIONS: TableAccess.READ,
    },
    calls_models=True,
)

SPECS: tuple[FunctionSpec, ...] = (
    *SANDBOXES,
    REGISTER_ENVIRONMENT,
    INGEST,
    SCORE,
    BUILD_ARTIFACT,
    SCORE_SHARD,
    BUILD_SHARD_ARTIFACT,
    REDUCE_SCORES,
    BUILD_PACKAGE,
    DEAD_LETTERS,
    API,
    DEPLOY_MODEL,
    PLAN_INFERENCE,
    INFER_SHARD,
    ASSEMBLE_PREDICTIONS,
    PLAN_JUDGING,
    JUDGE_SHARD,
    ASSEMBLE_JUDGMENTS,
    ASSEMBLE_CALIBRATION,
    SUBMIT_BATCH,
    POLL_BATCH,
    ASSEMBLE_BATCH,
    PREPARE_GENERATE,
    PREPARE_CHECK,
    VALIDATE_TRAINING,
    UPLOAD_TRAINING,
    TRAINING_JOB,
    START_EVALUATION,
    CHECK_EVALUATION,
    COMPARE_EVALUATION,
)
