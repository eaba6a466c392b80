"""How a FunctionSpec of the catalog (infra/constructs/catalog.py) becomes CDK resources: the function, its
own least-privilege role, its log group and its dead-letter queue."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

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

from benchgen.bundle.runtime import MINIMAL
from benchgen.providers.definition import Grant
from benchgen.providers.registry import providers
from benchgen.settings import METRICS_NAMESPACE
from infra.constructs import set_logical_id
from infra.constructs.catalog import SPECS, DataTable, FunctionSpec, TableAccess
from infra.constructs.layer import ARCHITECTURE, REPO_ROOT, RUNTIME
from infra.constructs.sandbox_image import sandbox_image_code
from infra.constructs.storage import (
    CONNECTIONS_INDEXES,
    DATASETS_INDEXES,
    ENVIRONMENTS_PREFIX,
    EVALUATIONS_INDEXES,
    PACKAGES_INDEXES,
    PREPARATIONS_INDEXES,
    RUNS_INDEXES,
    TRAINING_RUNS_INDEXES,
    StoredData,
)
from infra.timeouts import MAX_PROGRAM_SECONDS

# A function's resource metadata key naming the folder it runs, where that is not its service name: the
# local cloud runs each function's handler in-process from that folder.
FOLDER_METADATA = "benchgen:folder"
FUNCTIONS_ROOT = REPO_ROOT / "functions"
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


# What each access level adds to reading.
_TABLE_ACTIONS: dict[TableAccess, tuple[str, ...]] = {
    TableAccess.READ: (),
    TableAccess.READ_WRITE: WRITE_ACTIONS,
    TableAccess.READ_CREATE_DELETE: CREATE_DELETE_ACTIONS,
}


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
