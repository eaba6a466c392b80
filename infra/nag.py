"""cdk-nag AwsSolutions checks, and the reasoned acknowledgment of each finding we accept.

cdk-nag 3 reports through CDK's validation plugins: an unacknowledged error fails synthesis, and the
report lands in the cloud assembly's `validation-report.json`. Each acknowledgment names one finding on
the narrowest construct that produces it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from aws_cdk import Acknowledgment, App, Stack, Validations
from aws_cdk import aws_stepfunctions as sfn
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from benchgen.providers.definition import Grant
from infra.constructs.api import Api
from infra.constructs.catalog import (
    ASSEMBLE_CALIBRATION,
    ASSEMBLE_JUDGMENTS,
    ASSEMBLE_PREDICTIONS,
    BUILD_ARTIFACT,
    BUILD_PACKAGE,
    BUILD_SHARD_ARTIFACT,
    CHECK_EVALUATION,
    COMPARE_EVALUATION,
    DEPLOY_MODEL,
    INFER_SHARD,
    JUDGE_SHARD,
    PLAN_INFERENCE,
    PLAN_JUDGING,
    POLL_BATCH,
    PREPARE_CHECK,
    PREPARE_GENERATE,
    REDUCE_SCORES,
    SCORE,
    SCORE_SHARD,
    START_EVALUATION,
    SUBMIT_BATCH,
    TRAINING_JOB,
    UPLOAD_TRAINING,
    VALIDATE_TRAINING,
    FunctionSpec,
)
from infra.constructs.console import Console
from infra.constructs.evaluation import EvaluationPipeline
from infra.constructs.functions import (
    Functions,
    batch_grants,
    model_call_grants,
    object_pattern,
    role_services,
    training_job_grants,
)
from infra.constructs.inference import BATCH_RECORDS_PATTERN, InferencePipeline
from infra.constructs.judging import CalibrationPipeline, JudgingPipeline
from infra.constructs.packages import PackagePipeline
from infra.constructs.pipeline import Pipeline
from infra.constructs.preparations import PreparationPipeline
from infra.constructs.sharded_scoring import ShardedScoring
from infra.constructs.storage import BATCH_OUTPUT_PREFIX, JUDGING_BATCH_OUTPUT, JUDGING_BATCH_RECORDS
from infra.constructs.training import TrainingPipeline
from infra.stacks.data import BUCKET_ARN, BUCKET_NAME, export_name

if TYPE_CHECKING:
    from infra.stacks.application import BenchGenStacks

RULE_PACK = "AwsSolutions"
# cdk-nag names an imported value by its export name: the data bucket's, as every stack but its own sees it.
DATA_BUCKET_ARN = export_name(BUCKET_ARN)
DATA_BUCKET_NAME = export_name(BUCKET_NAME)

_Construct = TypeVar("_Construct")

RUNTIME_REASON = (
    "Functions run on Python 3.13 on purpose: the layer's binary wheels (pydantic-core) are resolved for "
    "cp313 arm64, and the runtime moves together with the layer in one deliberate upgrade."
)
XRAY_REASON = (
    "Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level "
    "permissions, so they are granted on '*'; they are the only actions on '*'."
)
PREFIX_REASON = (
    "Object access is confined to one key prefix of the data bucket ({prefix}); the keys below it carry "
    "environment and run ids that exist only at run time."
)
PATTERN_REASON = (
    "Object access is confined to one file name under one key prefix of the data bucket ({prefix}); the "
    "segment in between is a run id that exists only at run time."
)
STATE_MACHINE_WILDCARD_REASON = (
    "Execution logging and tracing: the CloudWatch Logs delivery actions (logs:CreateLogDelivery, ...) "
    "and the X-Ray actions accept only '*' as resource."
)
ITEM_READER_REASON = (
    "The Distributed Map's item reader reads the items list at the key each execution names (a run's "
    "{key}); CDK grants GetObject on the bucket's objects for a key given "
    "at run time. The state machine reads nothing else: its tasks' functions hold their own narrow grants."
)
MAP_RUN_REASON = (
    "A Distributed Map starts, describes and stops its child executions, which exist only at run time; the "
    "grant stays on this state machine's own executions and map runs."
)
FUNCTION_VERSIONS_REASON = (
    "LambdaInvoke also allows the {name} function's qualified ARNs (versions, aliases); the grant stays on "
    "that one function."
)
SECRETS_REASON = (
    "A connection names its API key's secret at run time; reading is limited by a condition to secrets "
    "tagged benchgen:access=inference, for the functions that call models (a live run's, a judge's)."
)
LIVE_FUNCTION_VERSIONS_REASON = (
    "LambdaInvoke also allows each live-run step function's qualified ARNs (versions, aliases); each grant "
    "stays on that one function."
)
LIVE_RUN_FUNCTIONS = (
    DEPLOY_MODEL,
    PLAN_INFERENCE,
    INFER_SHARD,
    ASSEMBLE_PREDICTIONS,
    SUBMIT_BATCH,
    POLL_BATCH,
)
BATCH_ROLE_REASON = (
    "Bedrock's batch inference role reads the records of live runs' and judging passes' jobs ({records}) "
    "and writes their output ({output}) in the data bucket; the run ids, job names and Bedrock's job ids "
    "in those keys exist only at run time."
)
ROLE_HANDOVER_REASON = (
    "A connection names the role its provider assumes to read the training files at run time; passing it "
    "is limited by a condition to the services that assume it ({services}), for the one function that "
    "starts training jobs."
)
TRAINING_SECRETS_REASON = (
    "A connection names its API key's secret at run time; reading is limited by a condition to secrets "
    "tagged benchgen:access=inference (the key its live runs use too)."
)
TRAINING_FUNCTION_VERSIONS_REASON = (
    "LambdaInvoke also allows each training step function's qualified ARNs (versions, aliases); each grant "
    "stays on that one function."
)
TRAINING_FUNCTIONS = (VALIDATE_TRAINING, UPLOAD_TRAINING, TRAINING_JOB)
NOTIFICATIONS_HANDLER_REASON = (
    "CDK's own deploy-time handler that writes the bucket's notification configuration; the basic "
    "execution policy only lets it write its own logs."
)
API_LOGS_ROLE_REASON = (
    "API Gateway's account-level logging role; AmazonAPIGatewayPushToCloudWatchLogs is the policy AWS "
    "documents for it, and it only writes logs."
)
MFA_REASON = (
    "Self sign-up is off (an administrator creates every account), threat protection is enforced and "
    "TOTP MFA is available to every user; requiring it would block the command line's scripted sign-in "
    "of automation accounts."
)
WAF_REASON = (
    "Every method requires a Cognito token and the stage is throttled; a WAF web ACL is an account-level "
    "choice (and cost) attached per deployment, not part of the application template."
)
GEO_REASON = (
    "The console is open to every country its users work from: what anyone may see is decided by Cognito "
    "sign-in at the API, and the distribution serves only the app's own files, which hold no data."
)
CONSOLE_WAF_REASON = (
    "The distribution serves only the app's static files through GET and HEAD; the data sits behind the "
    "API's Cognito authorizer. A WAF web ACL is an account-level choice (and cost) attached per deployment."
)
VIEWER_TLS_REASON = (
    "The distribution answers on CloudFront's default *.cloudfront.net certificate, whose security policy "
    "CloudFront fixes; a minimum of TLSv1.2_2021 needs a custom domain and ACM certificate, chosen per "
    "deployment."
)
DEPLOYMENT_HANDLER_REASON = (
    "CDK's own BucketDeployment handler, which copies the built console into its bucket at deploy time: it "
    "reads the CDK asset bucket's objects, writes and prunes the console bucket's objects (keys unknown "
    "before a build), and invalidates the distribution (CDK grants the invalidation actions on '*')."
)
DEPLOYMENT_RUNTIME_REASON = "CDK's own BucketDeployment handler: CDK chooses and upgrades its runtime."
DEPLOYMENT_WILDCARDS = (
    "Action::s3:GetObject*",
    "Action::s3:GetBucket*",
    "Action::s3:List*",
    "Action::s3:DeleteObject*",
    "Action::s3:Abort*",
    "Resource::arn:<AWS::Partition>:s3:::cdk-hnb659fds-assets-<AWS::AccountId>-<AWS::Region>/*",
    "Resource::<ConsoleBucket.Arn>/*",
    "Resource::*",
)


def apply_nag(app: App, stacks: BenchGenStacks) -> None:
    """Run the AwsSolutions pack on the app and acknowledge the accepted findings of its stacks."""
    # The acknowledgments are also written into the template metadata: an audit trail next to each resource.
    Validations.of(app).add_plugins(
        AwsSolutionsChecks(app, verbose=True, write_suppressions_to_cloud_formation=True)
    )
    pipelines = stacks.pipelines
    _acknowledge_functions(_child(pipelines, "Functions", Functions))
    _acknowledge_pipeline(_child(pipelines, "Pipeline", Pipeline))
    _acknowledge_sharded_scoring(_child(pipelines, "ShardedScoring", ShardedScoring))
    _acknowledge_preparations(_child(pipelines, "Preparations", PreparationPipeline))
    _acknowledge_package_pipeline(_child(pipelines, "Packages", PackagePipeline))
    _acknowledge_inference(_child(pipelines, "Inference", InferencePipeline))
    _acknowledge_judging(_child(pipelines, "Judging", JudgingPipeline))
    _acknowledge_calibration(_child(pipelines, "Calibration", CalibrationPipeline))
    _acknowledge_training(_child(pipelines, "Training", TrainingPipeline))
    _acknowledge_evaluation(_child(pipelines, "Evaluation", EvaluationPipeline))
    # The S3 trigger subscriptions are written by CDK's handler in the stack of the functions they name.
    notifications_handler = next(
        (
            child
            for child in pipelines.node.children
            if child.node.id.startswith("BucketNotificationsHandler")
        ),
        None,
    )
    if notifications_handler is not None:
        _acknowledge(
            notifications_handler.node.find_child("Role"),
            "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
            NOTIFICATIONS_HANDLER_REASON,
        )
    _acknowledge(_resource(stacks.data.users.user_pool), "COG2", MFA_REASON)
    api = stacks.api
    _acknowledge_functions(_child(api, "Functions", Functions))
    _acknowledge_api(_child(api, "Api", Api))
    _acknowledge_console(api, _child(api, "Console", Console))


def _child(stack: Stack, construct_id: str, kind: type[_Construct]) -> _Construct:
    child = stack.node.find_child(construct_id)
    if not isinstance(child, kind):
        raise TypeError(f"{stack.node.path}/{construct_id} is not a {kind.__name__}")
    return child


def _resource(construct: IConstruct) -> IConstruct:
    """The CloudFormation resource of an L2 construct: the narrowest scope for its acknowledgment."""
    child = construct.node.default_child
    if child is None:
        raise TypeError(f"{construct.node.path} has no CloudFormation resource")
    return child


def _acknowledge(scope: IConstruct, finding: str, reason: str) -> None:
    Validations.of(scope).acknowledge(Acknowledgment(id=f"{RULE_PACK}-{finding}", reason=reason))


def _acknowledge_functions(functions: Functions) -> None:
    bucket_arn = DATA_BUCKET_ARN
    for spec in functions.specs:
        function = functions.by_name[spec.name]
        _acknowledge(_resource(function), "L1", RUNTIME_REASON)
        policy = functions.roles[spec.name].node.try_find_child("DefaultPolicy")
        if policy is None:  # the sandbox's role has no policy at all
            continue
        _acknowledge(policy, "IAM5[Resource::*]", XRAY_REASON)
        for prefix in sorted(set(spec.reads + spec.writes)):
            reason = PREFIX_REASON if prefix.endswith("/") else PATTERN_REASON
            _acknowledge(
                policy,
                f"IAM5[Resource::{bucket_arn}/{object_pattern(prefix)}]",
                reason.format(prefix=prefix),
            )
        if spec.calls_models:
            _acknowledge_model_calls(policy)
        elif spec.reads_provider_keys:
            secrets = "arn:<AWS::Partition>:secretsmanager:*:<AWS::AccountId>:secret:*"
            _acknowledge(policy, f"IAM5[Resource::{secrets}]", TRAINING_SECRETS_REASON)
        if spec.trains_models:
            _acknowledge_training_jobs(policy)
        if spec.runs_batches:
            _acknowledge_grants(policy, batch_grants())


def _acknowledge_grants(policy: IConstruct, grants: list[Grant]) -> None:
    """Each wildcard resource of the provider kinds' grants, with the reason its kind gives."""
    acknowledged: set[str] = set()
    for grant in grants:
        for resource in grant.arns(partition="<AWS::Partition>", account="<AWS::AccountId>"):
            if "*" in resource and resource not in acknowledged:
                acknowledged.add(resource)
                _acknowledge(policy, f"IAM5[Resource::{resource}]", grant.reason)


def _acknowledge_training_jobs(policy: IConstruct) -> None:
    _acknowledge_grants(policy, training_job_grants())
    services = role_services()
    if services:
        _acknowledge(
            policy,
            "IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:role/*]",
            ROLE_HANDOVER_REASON.format(services=", ".join(services)),
        )


def _acknowledge_model_calls(policy: IConstruct) -> None:
    _acknowledge_grants(policy, model_call_grants())
    secrets = "arn:<AWS::Partition>:secretsmanager:*:<AWS::AccountId>:secret:*"
    _acknowledge(policy, f"IAM5[Resource::{secrets}]", SECRETS_REASON)


def _acknowledge_function_versions(policy: IConstruct, spec: FunctionSpec) -> None:
    _acknowledge(
        policy, f"IAM5[Resource::<{spec.logical_id}.Arn>:*]", FUNCTION_VERSIONS_REASON.format(name=spec.name)
    )


def _acknowledge_pipeline(pipeline: Pipeline) -> None:
    policy = pipeline.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    _acknowledge_function_versions(policy, BUILD_ARTIFACT)


def _acknowledge_distributed_map(state_machine: sfn.StateMachine, logical_id: str, items_key: str) -> None:
    """What every Distributed Map over an items list in the data bucket is granted, and why."""
    policy = state_machine.role.node.find_child("DefaultPolicy")
    objects = f"arn:<AWS::Partition>:s3:::{DATA_BUCKET_NAME}/*"
    _acknowledge(policy, f"IAM5[Resource::{objects}]", ITEM_READER_REASON.format(key=items_key))
    executions = (
        "arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:"
        f'{{"Fn::Select":[6,{{"Fn::Split":[":",{{"Ref":"{logical_id}"}}]}}]}}'
    )
    map_policy = state_machine.node.find_child("DistributedMapPolicy")
    for suffix in (":*", "/*:*"):
        _acknowledge(map_policy, f"IAM5[Resource::{executions}{suffix}]", MAP_RUN_REASON)


def _acknowledge_sharded_scoring(sharded: ShardedScoring) -> None:
    policy = sharded.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    _acknowledge_distributed_map(
        sharded.state_machine, "ShardedScoring", "predictions/<run_id>/shards/items.json"
    )
    for spec in (SCORE_SHARD, BUILD_SHARD_ARTIFACT, REDUCE_SCORES):
        _acknowledge_function_versions(policy, spec)


def _acknowledge_preparations(preparations: PreparationPipeline) -> None:
    policy = preparations.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    for spec in (PREPARE_GENERATE, PREPARE_CHECK):
        _acknowledge_function_versions(policy, spec)


def _acknowledge_package_pipeline(pipeline: PackagePipeline) -> None:
    policy = pipeline.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    _acknowledge_function_versions(policy, BUILD_PACKAGE)


def _acknowledge_inference(inference: InferencePipeline) -> None:
    policy = inference.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    _acknowledge_distributed_map(
        inference.state_machine, "InferencePipeline", "runs/<run_id>/inference/items.json"
    )
    for spec in LIVE_RUN_FUNCTIONS:
        _acknowledge(policy, f"IAM5[Resource::<{spec.logical_id}.Arn>:*]", LIVE_FUNCTION_VERSIONS_REASON)
    batch_policy = inference.bedrock_batch_role.node.find_child("DefaultPolicy")
    records, outputs = (
        (BATCH_RECORDS_PATTERN, JUDGING_BATCH_RECORDS),
        (f"{BATCH_OUTPUT_PREFIX}*", JUDGING_BATCH_OUTPUT),
    )
    reason = BATCH_ROLE_REASON.format(records=", ".join(records), output=", ".join(outputs))
    for pattern in (*records, *outputs):
        _acknowledge(batch_policy, f"IAM5[Resource::{DATA_BUCKET_ARN}/{pattern}]", reason)


def _acknowledge_judging(judging: JudgingPipeline) -> None:
    policy = judging.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    _acknowledge_distributed_map(judging.state_machine, "JudgingPipeline", "runs/<run_id>/judging/items.json")
    for spec in (PLAN_JUDGING, JUDGE_SHARD, ASSEMBLE_JUDGMENTS, SUBMIT_BATCH, POLL_BATCH, SCORE):
        _acknowledge_function_versions(policy, spec)


def _acknowledge_calibration(calibration: CalibrationPipeline) -> None:
    policy = calibration.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    _acknowledge_distributed_map(
        calibration.state_machine, "CalibrationPipeline", "calibrations/<environment_id>/<version>/items.json"
    )
    for spec in (JUDGE_SHARD, ASSEMBLE_CALIBRATION):
        _acknowledge_function_versions(policy, spec)


def _acknowledge_training(training: TrainingPipeline) -> None:
    policy = training.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    for spec in TRAINING_FUNCTIONS:
        _acknowledge(policy, f"IAM5[Resource::<{spec.logical_id}.Arn>:*]", TRAINING_FUNCTION_VERSIONS_REASON)


def _acknowledge_evaluation(evaluation: EvaluationPipeline) -> None:
    policy = evaluation.state_machine.role.node.find_child("DefaultPolicy")
    _acknowledge(policy, "IAM5[Resource::*]", STATE_MACHINE_WILDCARD_REASON)
    for spec in (START_EVALUATION, CHECK_EVALUATION, COMPARE_EVALUATION):
        _acknowledge_function_versions(policy, spec)


def _acknowledge_api(api: Api) -> None:
    _acknowledge(_resource(api.rest_api.deployment_stage), "APIG3", WAF_REASON)
    _acknowledge(
        api.rest_api.node.find_child("CloudWatchRole"),
        "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
        API_LOGS_ROLE_REASON,
    )


def _acknowledge_console(stack: Stack, console: Console) -> None:
    distribution = _resource(console.distribution)
    _acknowledge(distribution, "CFR1", GEO_REASON)
    _acknowledge(distribution, "CFR2", CONSOLE_WAF_REASON)
    _acknowledge(distribution, "CFR4", VIEWER_TLS_REASON)
    # CDK keeps one deployment handler per stack, beside the constructs rather than under the console.
    handler = next(
        child for child in stack.node.children if child.node.id.startswith("Custom::CDKBucketDeployment")
    )
    _acknowledge(_resource(handler), "L1", DEPLOYMENT_RUNTIME_REASON)
    role = handler.node.find_child("ServiceRole")
    _acknowledge(
        role,
        "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]",
        DEPLOYMENT_HANDLER_REASON,
    )
    for finding in DEPLOYMENT_WILDCARDS:
        _acknowledge(role.node.find_child("DefaultPolicy"), f"IAM5[{finding}]", DEPLOYMENT_HANDLER_REASON)
