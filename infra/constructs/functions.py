"""The Lambda functions, each built from one declarative spec with its own least-privilege role."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from aws_cdk import Aws, CfnResource, Duration, RemovalPolicy, Size, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as lambda_events
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_notifications as s3n
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from benchgen.bundle.runtime import MINIMAL, RUNTIMES
from benchgen.outputs import RunOutput
from benchgen.providers.definition import Grant
from benchgen.providers.registry import providers
from benchgen.settings import METRICS_NAMESPACE
from benchgen.steps.keys import (
    ARTIFACT_PART,
    BATCH_MANIFEST,
    BUNDLE,
    CASE_SCOPE,
    CASE_SHARDS,
    GENERATED_SUBMISSION,
    PARTS,
    RUN_SHARDS,
    SCORE_PART,
)
from benchgen.training.examples import EXAMPLES_NAME, HELD_OUT_NAME
from infra.constructs import set_logical_id
from infra.constructs.layer import ARCHITECTURE, REPO_ROOT, RUNTIME
from infra.constructs.sandbox_image import sandbox_image_code
from infra.constructs.storage import (
    BATCH_OUTPUT_PREFIX,
    CONNECTIONS_INDEXES,
    DATASETS_INDEXES,
    ENVIRONMENTS_PREFIX,
    EVALUATIONS_INDEXES,
    EVALUATIONS_PREFIX,
    PACKAGES_INDEXES,
    PACKAGES_PREFIX,
    PREDICTIONS_PREFIX,
    PREPARATIONS_INDEXES,
    PREPARATIONS_PREFIX,
    RUNS_INDEXES,
    RUNS_PREFIX,
    SANDBOX_PREFIX,
    SUBMISSIONS_PREFIX,
    TRAINING_PREFIX,
    TRAINING_RUNS_INDEXES,
    StoredData,
)
from infra.sizing import Sizing, run_step_sizes
from infra.timeouts import MAX_PROGRAM_SECONDS
from localcloud.stack_template import FOLDER_METADATA

FUNCTIONS_ROOT = REPO_ROOT / "functions"
SANDBOX_FOLDER = "sandbox"
LOG_RETENTION = logs.RetentionDays.ONE_MONTH
# What a function's code asset leaves out of its functions/<name> folder.
ASSET_EXCLUDE = ("__pycache__", "*.pyc", "tests")
# Lambda's own retries of a failed asynchronous invocation; the functions are told the total number of
# deliveries, so that a run step's last attempt fails the run rather than leaving it Running.
RETRY_ATTEMPTS = 2
# A queue feeding a function must hide a received message for at least the function's timeout (Lambda
# refuses the event source otherwise); AWS recommends six times it, so that a batch the poller retries
# after throttling is not handed out again while the first attempt still holds it.
EVENT_SOURCE_VISIBILITY_FACTOR = 6

# The tag a Secrets Manager secret carries for the inference functions to read it.
INFERENCE_TAG = "benchgen:access"
INFERENCE_TAG_VALUE = "inference"
# Item-level operations only: no table administration, no streams, no DeleteItem on domain records
# (a run or dataset is never deleted by the application).
READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan")
WRITE_ACTIONS = ("dynamodb:PutItem", "dynamodb:UpdateItem")
# powertools' idempotency utility reads, claims, completes and (after a failure) deletes its record.
IDEMPOTENCY_ACTIONS = ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
# Records their owner may delete (a provider connection) are created whole and never updated.
CREATE_DELETE_ACTIONS = ("dynamodb:PutItem", "dynamodb:DeleteItem")


class TableAccess(Enum):
    READ = "read"
    READ_WRITE = "read_write"
    READ_CREATE_DELETE = "read_create_delete"


# What each access level adds to reading.
_TABLE_ACTIONS: dict[TableAccess, tuple[str, ...]] = {
    TableAccess.READ: (),
    TableAccess.READ_WRITE: WRITE_ACTIONS,
    TableAccess.READ_CREATE_DELETE: CREATE_DELETE_ACTIONS,
}


class DataTable(Enum):
    CONNECTIONS = "connections"
    ENVIRONMENTS = "environments"
    RUNS = "runs"
    DATASETS = "datasets"
    PREPARATIONS = "preparations"
    PACKAGES = "packages"
    TRAINING_RUNS = "training_runs"
    EVALUATIONS = "evaluations"


# A Query on a global secondary index is authorized on the index ARN: name each index, no wildcard.
TABLE_INDEXES: dict[DataTable, tuple[str, ...]] = {
    DataTable.CONNECTIONS: tuple(CONNECTIONS_INDEXES),
    DataTable.RUNS: tuple(RUNS_INDEXES),
    DataTable.DATASETS: tuple(DATASETS_INDEXES),
    DataTable.PREPARATIONS: tuple(PREPARATIONS_INDEXES),
    DataTable.PACKAGES: tuple(PACKAGES_INDEXES),
    DataTable.TRAINING_RUNS: tuple(TRAINING_RUNS_INDEXES),
    DataTable.EVALUATIONS: tuple(EVALUATIONS_INDEXES),
}


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

    @property
    def folder(self) -> str:
        return self.code_folder or self.name

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


def sandbox_specs() -> tuple[FunctionSpec, ...]:
    """A sandbox function per runtime: ``sandbox`` (SandboxFunction) for the minimal runtime, as before
    runtimes, and ``sandbox_<runtime>`` for each other."""
    return tuple(
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


def sized(sizing: Sizing) -> dict[str, Any]:
    """A FunctionSpec's memory, timeout and scratch disk from ``infra.sizing``."""
    return {
        "memory_mb": sizing.memory_mb,
        "timeout": Duration.seconds(sizing.timeout_s),
        "ephemeral_storage_mib": sizing.ephemeral_storage_mib,
    }


# At the default shard size; the pipelines stack applies the deployed one (see PipelinesStack._specs).
_SIZES = run_step_sizes()

SPECS: tuple[FunctionSpec, ...] = (
    *sandbox_specs(),
    FunctionSpec(
        name="register_environment",
        logical_id="RegisterEnvironmentFunction",
        description="Validates an uploaded environment bundle and records the environment version",
        **sized(_SIZES["register_environment"]),
        trigger=Trigger(ENVIRONMENTS_PREFIX, ".zip"),
        reads=(ENVIRONMENTS_PREFIX,),
        # the cases of each task that runs may score in shards, cut into shard files
        writes=(CASE_SHARDS,),
        tables={DataTable.ENVIRONMENTS: TableAccess.READ_WRITE},
        idempotent=True,
    ),
    FunctionSpec(
        name="ingest",
        logical_id="IngestFunction",
        description=f"Turns a submission into {RunOutput.PREDICTION_OUTPUT.file_name} for the scoring step",
        **sized(_SIZES["ingest"]),
        trigger=Trigger(SUBMISSIONS_PREFIX),
        reads=(SUBMISSIONS_PREFIX, ENVIRONMENTS_PREFIX, SANDBOX_PREFIX, SCOPE_PATTERN),
        writes=(PREDICTIONS_PREFIX, SANDBOX_PREFIX),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
        idempotent=True,
        runs_programs=True,
    ),
    FunctionSpec(
        name="score",
        logical_id="ScoreFunction",
        description="Runs the scoring program, records the run and starts the artifact pipeline",
        **sized(_SIZES["score"]),
        trigger=Trigger(PREDICTIONS_PREFIX, RunOutput.PREDICTION_OUTPUT.file_name),
        reads=(PREDICTIONS_PREFIX, ENVIRONMENTS_PREFIX, SANDBOX_PREFIX, SCOPE_PATTERN),
        writes=(RUNS_PREFIX, SANDBOX_PREFIX),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
        idempotent=True,
        puts_events=True,
        runs_programs=True,
    ),
    FunctionSpec(
        name="build_artifact",
        logical_id="BuildArtifactFunction",
        description="Builds the finetune artifact of a scored run and saves its dataset",
        **sized(_SIZES["build_artifact"]),
        reads=(RUNS_PREFIX, ENVIRONMENTS_PREFIX),
        writes=(RUNS_PREFIX,),
        tables={
            DataTable.RUNS: TableAccess.READ_WRITE,
            DataTable.ENVIRONMENTS: TableAccess.READ,
            DataTable.DATASETS: TableAccess.READ_WRITE,
        },
        idempotent=True,
    ),
    # The ShardedScoring state machine's steps. Each reads the registered bundle and its own inputs, and
    # writes only its parts (or, for the reduce step, the run's files); each fails the run it works on.
    FunctionSpec(
        name="score_shard",
        logical_id="ScoreShardFunction",
        description="Judges one shard of a sharded run and uploads its score part",
        **sized(_SIZES["score_shard"]),
        reads=(ENVIRONMENTS_PREFIX, CASE_SHARDS, SHARD_INPUTS_PATTERN),
        writes=(SCORE_PARTS_PATTERN, f"{RUNS_PREFIX}*/{RunOutput.FAILURE_LOG.file_name}"),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
        puts_events=True,
    ),
    FunctionSpec(
        name="build_shard_artifact",
        logical_id="BuildShardArtifactFunction",
        description="Collects the finetune examples of one shard of a sharded run",
        **sized(_SIZES["build_shard_artifact"]),
        reads=(ENVIRONMENTS_PREFIX, CASE_SHARDS, SCORE_PARTS_PATTERN),
        writes=(ARTIFACT_PARTS_PATTERN, f"{RUNS_PREFIX}*/{RunOutput.FAILURE_LOG.file_name}"),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
        puts_events=True,
    ),
    FunctionSpec(
        name="reduce_scores",
        logical_id="ReduceScoresFunction",
        description="Merges a sharded run's scores, records the run and starts the artifact pipeline",
        **sized(_SIZES["reduce_scores"]),
        reads=(ENVIRONMENTS_PREFIX, SCORE_PARTS_PATTERN),
        writes=(RUNS_PREFIX,),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
        puts_events=True,
    ),
    FunctionSpec(
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
    ),
    FunctionSpec(
        name="dead_letters",
        logical_id="DeadLettersFunction",
        description="Fails the run or rejects the bundle whose event failed every delivery",
        memory_mb=256,
        timeout=Duration.seconds(60),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ_WRITE},
        puts_events=True,
        drains=("register_environment", "ingest", "score"),
    ),
    FunctionSpec(
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
    ),
    FunctionSpec(
        name="deploy_model",
        logical_id="DeployModelFunction",
        description="Marks a live run Deploying and waits until its model answers",
        memory_mb=256,
        timeout=Duration.minutes(5),
        tables={DataTable.RUNS: TableAccess.READ_WRITE},
        calls_models=True,
    ),
    FunctionSpec(
        name="plan_inference",
        logical_id="PlanInferenceFunction",
        description="Cuts a live run's cases into shards for the inference Map",
        memory_mb=1024,
        timeout=Duration.minutes(5),
        ephemeral_storage_mib=2048,
        reads=(ENVIRONMENTS_PREFIX, SCOPE_PATTERN),
        writes=(RUNS_PREFIX,),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.ENVIRONMENTS: TableAccess.READ},
    ),
    FunctionSpec(
        name="infer_shard",
        logical_id="InferShardFunction",
        description="Asks a live model every case of one shard, with retries",
        memory_mb=512,
        timeout=Duration.minutes(15),
        reads=(RUNS_PREFIX,),
        writes=(RUNS_PREFIX,),
        tables={DataTable.RUNS: TableAccess.READ},
        calls_models=True,
    ),
    FunctionSpec(
        name="assemble_predictions",
        logical_id="AssemblePredictionsFunction",
        description="Writes a live run's inference log and its generated submission",
        memory_mb=1024,
        timeout=Duration.minutes(5),
        ephemeral_storage_mib=2048,
        reads=(RUNS_PREFIX, GENERATED_SUBMISSION_PATTERN),
        writes=(RUNS_PREFIX, SUBMISSIONS_PREFIX),
        tables={DataTable.RUNS: TableAccess.READ_WRITE},
    ),
    # The batch branch of a live run. Submit streams the case shards into job files on disk (a job holds
    # at most 1 GB of records, Bedrock's input file limit) and hands each to its provider; Poll copies out a
    # finished job's output that the provider keeps (at most the 200 MB of an OpenAI-style batch's input,
    # and its answers); the manifest that lands last assembles the run, reading one job's records at once.
    FunctionSpec(
        name="submit_batch",
        logical_id="SubmitBatchFunction",
        description="Cuts a live run's cases into its provider's batch jobs and submits them",
        memory_mb=1024,
        timeout=Duration.minutes(15),
        ephemeral_storage_mib=4096,
        reads=(RUNS_PREFIX,),
        writes=(RUNS_PREFIX,),
        tables={DataTable.RUNS: TableAccess.READ_WRITE},
        runs_batches=True,
        reads_provider_keys=True,
    ),
    FunctionSpec(
        name="poll_batch",
        logical_id="PollBatchFunction",
        description="Looks at a live run's batch jobs and copies out the output a provider keeps",
        memory_mb=512,
        timeout=Duration.minutes(15),
        ephemeral_storage_mib=4096,
        reads=(BATCH_OUTPUT_PREFIX,),
        writes=(BATCH_OUTPUT_PREFIX,),
        tables={DataTable.RUNS: TableAccess.READ_WRITE},
        runs_batches=True,
        reads_provider_keys=True,
    ),
    FunctionSpec(
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
    ),
    # Sized for a preparation over 100k judged cases (bench/preparation_bench.py: 35 s and a peak RSS of
    # 52 MB at 100,000 cases on two shared cores, flat from 10,000). Generation runs on one core, so it gets
    # 1769 MB, where Lambda gives a whole vCPU; more would buy nothing. Up to 20 runs read 20 times the
    # verdicts: 10 minutes leaves that room. Disk holds the most: the bundle (up to 2 GiB unpacked, the
    # registration limit), every run's scoring_output.zip (about 100 bytes a case: 10 MB a run), and
    # examples.jsonl beside its SQLite scratch (0.8 KB a row for gsm8k-en; at 2 KB for longer texts,
    # 100k cases x 5 variants is 1 GB, twice over while the scratch is read out in order).
    FunctionSpec(
        name="prepare_generate",
        logical_id="PrepareGenerateFunction",
        description="Generates a preparation's examples and held-out cases from judged runs",
        memory_mb=1769,
        timeout=Duration.minutes(10),
        ephemeral_storage_mib=10240,
        # the registered bundle (at its validated version) and each run's verdicts, nothing else of a run
        reads=(ENVIRONMENTS_PREFIX, f"{RUNS_PREFIX}*/{RunOutput.SCORING_OUTPUT.file_name}"),
        writes=(PREPARATIONS_PREFIX,),
    ),
    # Reads examples.jsonl and held_out.jsonl as streams (counts and the held-out hashes stay in memory,
    # about 10k of them for 100k cases), so it needs no disk beyond the default. The same bench times the
    # check at 13 s for 100,000 cases; at 1024 MB (about half a vCPU) 5 minutes leaves room for 20 runs.
    FunctionSpec(
        name="prepare_check",
        logical_id="PrepareCheckFunction",
        description="Writes a preparation's coverage, checks no held-out case reached training, records it",
        memory_mb=1024,
        timeout=Duration.minutes(5),
        reads=(PREPARATIONS_PREFIX,),
        writes=(PREPARATIONS_PREFIX,),
        tables={DataTable.PREPARATIONS: TableAccess.READ_WRITE},
    ),
    # The training pipeline's tasks. Each reads the training run and writes it only through conditional
    # transitions; only the two that reach a provider may read provider keys.
    FunctionSpec(
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
    ),
    # A package zip holds at most the profile's row limit (20,000 rows for Bedrock, a few tens of MB): it
    # is read whole, checked row by row, and only its train and validation files are sent on.
    FunctionSpec(
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
    ),
    FunctionSpec(
        name="training_job",
        logical_id="TrainingJobFunction",
        description="Starts, polls, times out or fails a training run's provider job and records it",
        memory_mb=256,
        timeout=Duration.minutes(2),
        tables={DataTable.TRAINING_RUNS: TableAccess.READ_WRITE, DataTable.CONNECTIONS: TableAccess.READ},
        trains_models=True,
        reads_provider_keys=True,
    ),
    # The evaluation pipeline's steps. Start reads the package (its held-out list), writes each new run's
    # case scope, records the runs and starts their InferencePipelines (granted by the stack).
    FunctionSpec(
        name="start_evaluation",
        logical_id="StartEvaluationFunction",
        description="Creates or reuses an evaluation's two live runs on the held-out cases and starts them",
        memory_mb=512,
        timeout=Duration.minutes(2),
        reads=(PACKAGES_PREFIX,),
        writes=(SCOPE_PATTERN,),
        tables={DataTable.RUNS: TableAccess.READ_WRITE, DataTable.EVALUATIONS: TableAccess.READ_WRITE},
    ),
    FunctionSpec(
        name="check_evaluation",
        logical_id="CheckEvaluationFunction",
        description="Tells whether both of an evaluation's runs are finished",
        memory_mb=256,
        timeout=Duration.seconds(30),
        tables={DataTable.RUNS: TableAccess.READ, DataTable.EVALUATIONS: TableAccess.READ},
    ),
    # Reads the package and both runs' verdicts; writes the report and records the evaluation Completed
    # (or, sent the pipeline's caught failure, Failed).
    FunctionSpec(
        name="compare_evaluation",
        logical_id="CompareEvaluationFunction",
        description="Compares an evaluation's two runs on the held-out cases, writes its report, records it",
        memory_mb=1024,
        timeout=Duration.minutes(5),
        ephemeral_storage_mib=2048,
        reads=(PACKAGES_PREFIX, f"{RUNS_PREFIX}*/{RunOutput.SCORING_OUTPUT.file_name}"),
        writes=(EVALUATIONS_PREFIX,),
        tables={DataTable.RUNS: TableAccess.READ, DataTable.EVALUATIONS: TableAccess.READ_WRITE},
    ),
)


def model_call_grants() -> list[Grant]:
    """What the functions that call models need, from every provider kind's IAM needs."""
    return [grant for definition in providers() for grant in definition.iam.calls_models]


def training_job_grants() -> list[Grant]:
    """What the function that follows training jobs needs, from every provider kind's IAM needs."""
    return [grant for definition in providers() for grant in definition.iam.runs_jobs]


def batch_grants() -> list[Grant]:
    """What the functions that submit and read batch jobs need, from every provider kind's IAM needs."""
    return [grant for definition in providers() for grant in definition.iam.runs_batches]


def role_services() -> list[str]:
    """The services a connection's role may be passed to: those of the kinds whose provider assumes it."""
    return [definition.iam.assumes_role for definition in providers() if definition.iam.assumes_role]


def object_pattern(prefix_or_pattern: str) -> str:
    """The object keys one ``reads`` or ``writes`` entry grants: all under a prefix, or a key pattern."""
    return f"{prefix_or_pattern}*" if prefix_or_pattern.endswith("/") else prefix_or_pattern


def queue_visibility_timeout(specs: Iterable[FunctionSpec], source: str) -> Duration | None:
    """How long the dead-letter queue of ``source`` hides a message it handed to the functions that drain
    it, from their longest timeout; None (SQS's default) for a queue no function drains."""
    timeouts = [spec.timeout.to_seconds() for spec in specs if source in spec.drains]
    if not timeouts:
        return None
    return Duration.seconds(EVENT_SOURCE_VISIBILITY_FACTOR * max(timeouts))


def _check_no_self_trigger(spec: FunctionSpec) -> None:
    if spec.trigger is not None and spec.trigger.prefix in spec.writes:
        raise ValueError(f"{spec.name} would re-trigger itself by writing under {spec.trigger.prefix}")


class Functions(Construct):
    """Builds every function in SPECS; `by_name` maps the functions/<name> folder to its function."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        storage: StoredData,
        bus: events.IEventBus,
        layer: lambda_.ILayerVersion,
        specs: tuple[FunctionSpec, ...] = SPECS,
    ) -> None:
        super().__init__(scope, construct_id)
        self._storage = storage
        self._bus = bus
        self._layer = layer
        self._tables: dict[DataTable, dynamodb.ITable] = {
            DataTable.CONNECTIONS: storage.connections_table,
            DataTable.ENVIRONMENTS: storage.environments_table,
            DataTable.RUNS: storage.runs_table,
            DataTable.DATASETS: storage.datasets_table,
            DataTable.PREPARATIONS: storage.preparations_table,
            DataTable.PACKAGES: storage.packages_table,
            DataTable.TRAINING_RUNS: storage.training_runs_table,
            DataTable.EVALUATIONS: storage.evaluations_table,
        }
        self.specs = specs
        self.by_name: dict[str, lambda_.Function] = {}
        self.roles: dict[str, iam.Role] = {}
        self.dead_letter_queues: dict[str, sqs.Queue] = {}
        for spec in specs:
            _check_no_self_trigger(spec)
            self.by_name[spec.name] = self._build(spec)
        self.sandboxes = {spec.runtime: self.by_name[spec.name] for spec in specs if spec.runtime is not None}
        for spec in specs:
            if spec.runs_programs and self.sandboxes:
                self._hand_programs_to(self.by_name[spec.name], self.roles[spec.name], self.sandboxes)
        for spec in specs:
            for source in spec.drains:
                # Grants receiving, deleting and changing the visibility of this queue's messages only.
                self.by_name[spec.name].add_event_source(
                    lambda_events.SqsEventSource(
                        self.dead_letter_queues[source], batch_size=10, report_batch_item_failures=True
                    )
                )

    @property
    def environment(self) -> dict[str, str]:
        """The variables every function gets, under the same names (the local cloud shares one os.environ)."""
        storage = self._storage
        return {
            "DATA_BUCKET": storage.bucket.bucket_name,
            # ENVIRONMENTS_TABLE, RUNS_TABLE, ...: each table's name under its field's name.
            **{field.upper(): name for field, name in storage.table_names.items()},
            # Secrets Manager ARNs a connection names must be of this account (Lambda sets AWS_REGION).
            "ACCOUNT_ID": Aws.ACCOUNT_ID,
            "EVENT_BUS_NAME": self._bus.event_bus_name,
            "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
            "STEP_ATTEMPTS": str(RETRY_ATTEMPTS + 1),
            "MAX_PROGRAM_SECONDS": str(MAX_PROGRAM_SECONDS),
        }

    def _hand_programs_to(
        self, function: lambda_.Function, role: iam.Role, sandboxes: Mapping[str, lambda_.Function]
    ) -> None:
        names = {runtime: sandbox.function_name for runtime, sandbox in sandboxes.items()}
        function.add_environment("SANDBOX_FUNCTIONS", Stack.of(self).to_json_string(names))
        # These functions only, unqualified: no version or alias of them, and no other function.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["lambda:InvokeFunction"],
                resources=[sandbox.function_arn for sandbox in sandboxes.values()],
            )
        )

    def _build(self, spec: FunctionSpec) -> lambda_.Function:
        scope = Construct(self, spec.logical_id)
        role = iam.Role(
            scope,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Runs the {spec.name} function",
        )
        set_logical_id(role, f"{spec.logical_id}Role")
        self.roles[spec.name] = role
        if spec.sandbox:
            return self._build_sandbox(spec, scope, role)
        log_group = logs.LogGroup(
            scope, "Logs", retention=LOG_RETENTION, removal_policy=RemovalPolicy.DESTROY
        )
        set_logical_id(log_group, f"{spec.logical_id}LogGroup")
        dead_letters = None
        if not spec.drains:
            dead_letters = sqs.Queue(
                scope,
                "DeadLetterQueue",
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                retention_period=Duration.days(14),
                visibility_timeout=queue_visibility_timeout(self.specs, spec.name),
            )
            set_logical_id(dead_letters, f"{spec.logical_id}DeadLetterQueue")
            self.dead_letter_queues[spec.name] = dead_letters

        function = lambda_.Function(
            scope,
            "Function",
            description=spec.description,
            runtime=RUNTIME,
            # The runtime (its CPython, and the zlib that deflates every zip a run writes) changes only when
            # BenchGen is deployed, never under a running deployment: a rebuild gives the same bytes.
            runtime_management_mode=lambda_.RuntimeManagementMode.FUNCTION_UPDATE,
            architecture=ARCHITECTURE,
            handler="handler.handler",
            code=lambda_.Code.from_asset(str(FUNCTIONS_ROOT / spec.name), exclude=list(ASSET_EXCLUDE)),
            layers=[self._layer],
            role=role,
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            ephemeral_storage_size=Size.mebibytes(spec.ephemeral_storage_mib),
            reserved_concurrent_executions=spec.reserved_concurrency,
            environment={**self.environment, "POWERTOOLS_SERVICE_NAME": spec.name},
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            dead_letter_queue=dead_letters,
            retry_attempts=RETRY_ATTEMPTS if dead_letters is not None else None,
        )
        set_logical_id(function, spec.logical_id)
        log_group.grant_write(role)
        self._grant(spec, role)
        if spec.trigger is not None:
            self._storage.bucket.add_event_notification(
                s3.EventType.OBJECT_CREATED,
                s3n.LambdaDestination(function),
                s3.NotificationKeyFilter(prefix=spec.trigger.prefix, suffix=spec.trigger.suffix),
            )
        return function

    def _build_sandbox(self, spec: FunctionSpec, scope: Construct, role: iam.Role) -> lambda_.Function:
        # A container image, so that programs find Codabench's /app folders (see sandbox_image).
        function = lambda_.DockerImageFunction(
            scope,
            "Function",
            description=spec.description,
            architecture=ARCHITECTURE,
            code=sandbox_image_code(scope, FUNCTIONS_ROOT / spec.folder, spec.runtime or MINIMAL.name),
            role=role,
            memory_size=spec.memory_mb,
            timeout=spec.timeout,
            ephemeral_storage_size=Size.mebibytes(spec.ephemeral_storage_mib),
            environment={"POWERTOOLS_SERVICE_NAME": spec.name},
            tracing=lambda_.Tracing.DISABLED,
        )
        set_logical_id(function, spec.logical_id)
        # The local cloud runs each function's handler in-process from the folder it names.
        resource = function.node.default_child
        assert isinstance(resource, CfnResource)
        resource.add_metadata(FOLDER_METADATA, spec.folder)
        return function

    def _grant(self, spec: FunctionSpec, role: iam.Role) -> None:
        def allow(actions: Iterable[str], resources: list[str]) -> None:
            role.add_to_principal_policy(iam.PolicyStatement(actions=list(actions), resources=resources))

        bucket = self._storage.bucket
        object_access = (
            ("s3:GetObject", spec.reads),
            # Runs open exactly the bundle object version that registration validated.
            ("s3:GetObjectVersion", tuple(p for p in spec.reads if p == ENVIRONMENTS_PREFIX)),
            ("s3:PutObject", spec.writes),
        )
        for action, prefixes in object_access:
            if prefixes:
                allow([action], [bucket.arn_for_objects(object_pattern(prefix)) for prefix in prefixes])
        for table_key, access in spec.tables.items():
            table = self._tables[table_key]
            indexes = [f"{table.table_arn}/index/{index}" for index in TABLE_INDEXES.get(table_key, ())]
            allow(READ_ACTIONS + _TABLE_ACTIONS[access], [table.table_arn])
            # An index is only ever queried: writes and deletes are of the table's items.
            if indexes:
                allow(READ_ACTIONS, indexes)
        if spec.idempotent:
            allow(IDEMPOTENCY_ACTIONS, [self._storage.idempotency_table.table_arn])
        if spec.puts_events:
            allow(["events:PutEvents"], [self._bus.event_bus_arn])
        if spec.calls_models:
            self._grant_model_calls(role)
        elif spec.reads_provider_keys:
            self._grant_provider_keys(role)
        if spec.trains_models:
            self._grant_training_jobs(role)
        if spec.runs_batches:
            for grant in batch_grants():
                Functions._allow(role, grant)

    @staticmethod
    def _grant_model_calls(role: iam.Role) -> None:
        for grant in model_call_grants():
            Functions._allow(role, grant)
        Functions._grant_provider_keys(role)

    @staticmethod
    def _allow(role: iam.Role, grant: Grant) -> None:
        stack = Stack.of(role)
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=list(grant.actions),
                resources=grant.arns(partition=stack.partition, account=stack.account),
            )
        )

    @staticmethod
    def _grant_provider_keys(role: iam.Role) -> None:
        stack = Stack.of(role)
        # A connection names its secret at run time; only secrets tagged for BenchGen inference are readable.
        # Training reads the same key the connection's live runs use: one tag, so one key serves both.
        # The global aws:ResourceTag key, which Secrets Manager supports for secrets: the local cloud's policy
        # evaluator knows it, not the service's own secretsmanager:ResourceTag spelling.
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["secretsmanager:GetSecretValue"],
                resources=[f"arn:{stack.partition}:secretsmanager:*:{stack.account}:secret:*"],
                conditions={"StringEquals": {f"aws:ResourceTag/{INFERENCE_TAG}": INFERENCE_TAG_VALUE}},
            )
        )

    @staticmethod
    def _grant_training_jobs(role: iam.Role) -> None:
        for grant in training_job_grants():
            Functions._allow(role, grant)
        services = role_services()
        if services:
            stack = Stack.of(role)
            # The connection's role (named at run time) is handed to the provider that assumes it to read
            # the training files; to those services only, never to anything else.
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["iam:PassRole"],
                    resources=[f"arn:{stack.partition}:iam::{stack.account}:role/*"],
                    conditions={"StringEquals": {"iam:PassedToService": services}},
                )
            )
