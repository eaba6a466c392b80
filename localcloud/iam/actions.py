"""What IAM authorizes for each AWS API operation the application makes: actions, resources, context keys.

The action is not always the operation's name (S3's HeadObject is ``s3:GetObject``, ListObjectsV2 is
``s3:ListBucket``), one operation may need several (CopyObject reads its source and writes its target;
TransactWriteItems needs each item's own action on each item's table; creating a job that runs under a
role also passes that role), and the resource comes from the request's parameters. This is the one table
of them, keyed by botocore's service name and the API's operation name; the services a provider kind
calls (Bedrock's, SageMaker's) are in that kind's local fake, where the kind is named, and are read from
there. An operation missing from both is refused, never allowed: add it with the action and resource
that AWS's Service Authorization Reference gives it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from typing import Any
from urllib.parse import unquote, urlsplit

Params = Mapping[str, Any]


@dataclass(frozen=True)
class Request:
    """One authorization IAM makes: ``action`` on ``resource`` with the request's condition keys."""

    action: str
    resource: str
    context: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Secret:
    """What a secret's authorization needs: its full ARN and its tags."""

    arn: str
    tags: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Where:
    """The account and region calls are made in, and a way to look a secret up (its tags are condition
    keys, read from the secret as IAM reads them)."""

    region: str
    account: str
    secret: Callable[[str], Secret]


Requests = Callable[[Params, Where], list[Request]]


class UnknownOperationError(LookupError):
    def __init__(self, service: str, operation: str) -> None:
        super().__init__(
            f"the local cloud knows no IAM action for {service}:{operation}: add it to {__name__} "
            "(localcloud/iam/actions.py), or to IAM_OPERATIONS in the local fake of the provider kind that "
            "calls that service (localcloud/providers/)"
        )


def requests_for(service: str, operation: str, params: Params, where: Where) -> list[Request]:
    """The authorizations ``operation`` of ``service`` needs with these parameters."""
    found = OPERATIONS.get(service, {}).get(operation) or _provider_operations().get(service, {}).get(
        operation
    )
    if found is None:
        raise UnknownOperationError(service, operation)
    return found(params, where)


@cache
def _provider_operations() -> dict[str, dict[str, Requests]]:
    """The operations of the services a provider kind calls (its models, its jobs), from each kind's local
    fake (``localcloud/providers/<kind>.py``, its ``IAM_OPERATIONS``), where a kind is named; a kind that
    calls no AWS service has none."""
    from benchgen.vocabulary import PROVIDER_KINDS, ProviderKind
    from localcloud.provider_clock import FAKES

    found: dict[str, dict[str, Requests]] = {}
    for kind in PROVIDER_KINDS:
        fake = import_module(f"{FAKES}.{ProviderKind(kind).module}")
        found.update(getattr(fake, "IAM_OPERATIONS", {}))
    return found


# S3


def _object_arn(bucket: str, key: str) -> str:
    return f"arn:aws:s3:::{bucket}/{key}"


def _s3_object(action: str, versioned: str | None = None) -> Requests:
    """``action`` on the object; ``versioned`` instead when the request names a version."""

    def requests(params: Params, where: Where) -> list[Request]:
        chosen = versioned if versioned and params.get("VersionId") else action
        return [Request(chosen, _object_arn(params["Bucket"], params["Key"]))]

    return requests


def _s3_bucket(action: str) -> Requests:
    """``action`` on the bucket; a listing's prefix is the ``s3:prefix`` condition key."""

    def requests(params: Params, where: Where) -> list[Request]:
        context = (("s3:prefix", str(params.get("Prefix", ""))),) if action.startswith("s3:List") else ()
        return [Request(action, f"arn:aws:s3:::{params['Bucket']}", context)]

    return requests


def _copy_source(source: Any) -> Request:
    if isinstance(source, Mapping):
        bucket, key, version = source["Bucket"], source["Key"], source.get("VersionId")
    else:
        path, _, query = str(source).lstrip("/").partition("?versionId=")
        bucket, _, key = unquote(path).partition("/")
        version = query or None
    return Request("s3:GetObjectVersion" if version else "s3:GetObject", _object_arn(bucket, key))


def _s3_copy(params: Params, where: Where) -> list[Request]:
    return [_copy_source(params["CopySource"]), *_s3_object("s3:PutObject")(params, where)]


def _s3_delete_objects(params: Params, where: Where) -> list[Request]:
    return [
        Request(
            "s3:DeleteObjectVersion" if item.get("VersionId") else "s3:DeleteObject",
            _object_arn(params["Bucket"], item["Key"]),
        )
        for item in params["Delete"]["Objects"]
    ]


S3: dict[str, Requests] = {
    "GetObject": _s3_object("s3:GetObject", "s3:GetObjectVersion"),
    "HeadObject": _s3_object("s3:GetObject", "s3:GetObjectVersion"),
    "GetObjectAttributes": _s3_object("s3:GetObjectAttributes", "s3:GetObjectVersionAttributes"),
    "GetObjectTagging": _s3_object("s3:GetObjectTagging", "s3:GetObjectVersionTagging"),
    "PutObjectTagging": _s3_object("s3:PutObjectTagging", "s3:PutObjectVersionTagging"),
    "PutObject": _s3_object("s3:PutObject"),
    # A multipart upload's steps are authorized as the PutObject they make up.
    "CreateMultipartUpload": _s3_object("s3:PutObject"),
    "UploadPart": _s3_object("s3:PutObject"),
    "CompleteMultipartUpload": _s3_object("s3:PutObject"),
    "AbortMultipartUpload": _s3_object("s3:AbortMultipartUpload"),
    "ListParts": _s3_object("s3:ListMultipartUploadParts"),
    "CopyObject": _s3_copy,
    "UploadPartCopy": _s3_copy,
    "DeleteObject": _s3_object("s3:DeleteObject", "s3:DeleteObjectVersion"),
    "DeleteObjects": _s3_delete_objects,
    "ListObjects": _s3_bucket("s3:ListBucket"),
    "ListObjectsV2": _s3_bucket("s3:ListBucket"),
    "ListObjectVersions": _s3_bucket("s3:ListBucketVersions"),
    "ListMultipartUploads": _s3_bucket("s3:ListBucketMultipartUploads"),
    "GetBucketVersioning": _s3_bucket("s3:GetBucketVersioning"),
    "GetBucketLocation": _s3_bucket("s3:GetBucketLocation"),
    "HeadBucket": _s3_bucket("s3:ListBucket"),
}


# DynamoDB


def _table_arn(table: str, where: Where) -> str:
    if table.startswith("arn:"):
        return table
    return f"arn:aws:dynamodb:{where.region}:{where.account}:table/{table}"


def _table(action: str) -> Requests:
    """``action`` on the table, or on the index the request names (a query or scan of a GSI)."""

    def requests(params: Params, where: Where) -> list[Request]:
        arn = _table_arn(params["TableName"], where)
        index = params.get("IndexName")
        return [Request(action, f"{arn}/index/{index}" if index else arn)]

    return requests


def _each_table(action: str) -> Requests:
    def requests(params: Params, where: Where) -> list[Request]:
        return [Request(action, _table_arn(table, where)) for table in params["RequestItems"]]

    return requests


_TRANSACT_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
    "Get": "dynamodb:GetItem",
}


def _transact(params: Params, where: Where) -> list[Request]:
    """Each item of a transaction is authorized as its own action on its own table."""
    requests = []
    for item in params["TransactItems"]:
        for kind, request in item.items():
            requests.append(Request(_TRANSACT_ACTIONS[kind], _table_arn(request["TableName"], where)))
    return requests


DYNAMODB: dict[str, Requests] = {
    "GetItem": _table("dynamodb:GetItem"),
    "PutItem": _table("dynamodb:PutItem"),
    "UpdateItem": _table("dynamodb:UpdateItem"),
    "DeleteItem": _table("dynamodb:DeleteItem"),
    "Query": _table("dynamodb:Query"),
    "Scan": _table("dynamodb:Scan"),
    "DescribeTable": _table("dynamodb:DescribeTable"),
    "BatchGetItem": _each_table("dynamodb:BatchGetItem"),
    "BatchWriteItem": _each_table("dynamodb:BatchWriteItem"),
    "TransactWriteItems": _transact,
    "TransactGetItems": _transact,
}


# Step Functions, EventBridge, Lambda, SQS


def _arn_param(action: str, name: str) -> Requests:
    """``action`` on the ARN the request carries in parameter ``name``."""

    def requests(params: Params, where: Where) -> list[Request]:
        return [Request(action, str(params[name]))]

    return requests


def _anything(action: str) -> Requests:
    """An action that takes no resource: IAM authorizes it on ``*``."""

    def requests(params: Params, where: Where) -> list[Request]:
        return [Request(action, "*")]

    return requests


STEPFUNCTIONS: dict[str, Requests] = {
    "StartExecution": _arn_param("states:StartExecution", "stateMachineArn"),
    "StartSyncExecution": _arn_param("states:StartSyncExecution", "stateMachineArn"),
    "ListExecutions": _arn_param("states:ListExecutions", "stateMachineArn"),
    "DescribeStateMachine": _arn_param("states:DescribeStateMachine", "stateMachineArn"),
    "DescribeExecution": _arn_param("states:DescribeExecution", "executionArn"),
    "StopExecution": _arn_param("states:StopExecution", "executionArn"),
    "RedriveExecution": _arn_param("states:RedriveExecution", "executionArn"),
    "GetExecutionHistory": _arn_param("states:GetExecutionHistory", "executionArn"),
    "DescribeMapRun": _arn_param("states:DescribeMapRun", "mapRunArn"),
    "SendTaskSuccess": _anything("states:SendTaskSuccess"),
    "SendTaskFailure": _anything("states:SendTaskFailure"),
    "SendTaskHeartbeat": _anything("states:SendTaskHeartbeat"),
}


def _put_events(params: Params, where: Where) -> list[Request]:
    buses = {str(entry.get("EventBusName") or "default") for entry in params["Entries"]}
    prefix = f"arn:aws:events:{where.region}:{where.account}:event-bus/"
    arns = sorted(bus if bus.startswith("arn:") else prefix + bus for bus in buses)
    return [Request("events:PutEvents", arn) for arn in arns]


def _invoke(params: Params, where: Where) -> list[Request]:
    name = str(params["FunctionName"])
    if not name.startswith("arn:"):
        name = f"arn:aws:lambda:{where.region}:{where.account}:function:{name}"
    qualifier = params.get("Qualifier")
    return [Request("lambda:InvokeFunction", f"{name}:{qualifier}" if qualifier else name)]


def _queue(action: str) -> Requests:
    """``action`` on the queue a QueueUrl (``https://host/<account>/<name>``) names."""

    def requests(params: Params, where: Where) -> list[Request]:
        account, name = urlsplit(str(params["QueueUrl"])).path.strip("/").split("/")[-2:]
        return [Request(action, f"arn:aws:sqs:{where.region}:{account}:{name}")]

    return requests


def _queue_by_name(params: Params, where: Where) -> list[Request]:
    owner = params.get("QueueOwnerAWSAccountId") or where.account
    return [Request("sqs:GetQueueUrl", f"arn:aws:sqs:{where.region}:{owner}:{params['QueueName']}")]


SQS: dict[str, Requests] = {
    "SendMessage": _queue("sqs:SendMessage"),
    "SendMessageBatch": _queue("sqs:SendMessage"),
    "ReceiveMessage": _queue("sqs:ReceiveMessage"),
    "DeleteMessage": _queue("sqs:DeleteMessage"),
    "DeleteMessageBatch": _queue("sqs:DeleteMessage"),
    "ChangeMessageVisibility": _queue("sqs:ChangeMessageVisibility"),
    "GetQueueAttributes": _queue("sqs:GetQueueAttributes"),
    "GetQueueUrl": _queue_by_name,
}


# Secrets Manager: a secret's tags are its aws:ResourceTag condition keys. (Its own spelling,
# secretsmanager:ResourceTag/<key>, is one the evaluator's data lacks: a policy using it never matches here.)


def _secret(action: str) -> Requests:
    def requests(params: Params, where: Where) -> list[Request]:
        secret = where.secret(str(params["SecretId"]))
        context = [("secretsmanager:SecretId", secret.arn)]
        context += [(f"aws:ResourceTag/{key}", value) for key, value in secret.tags.items()]
        return [Request(action, secret.arn, tuple(context))]

    return requests


def passes_role(role_arn: str, service: str) -> Request:
    """Creating a job that runs under a role passes the role to the service: IAM checks ``iam:PassRole``."""
    return Request("iam:PassRole", role_arn, (("iam:PassedToService", f"{service}.amazonaws.com"),))


def _nothing(params: Params, where: Where) -> list[Request]:
    """An operation IAM does not authorize (STS's GetCallerIdentity answers every caller)."""
    return []


OPERATIONS: dict[str, dict[str, Requests]] = {
    "s3": S3,
    "dynamodb": DYNAMODB,
    "stepfunctions": STEPFUNCTIONS,
    "events": {"PutEvents": _put_events},
    "lambda": {"Invoke": _invoke},
    "sqs": SQS,
    "secretsmanager": {
        "GetSecretValue": _secret("secretsmanager:GetSecretValue"),
        "DescribeSecret": _secret("secretsmanager:DescribeSecret"),
    },
    "xray": {
        "PutTraceSegments": _anything("xray:PutTraceSegments"),
        "PutTelemetryRecords": _anything("xray:PutTelemetryRecords"),
        "GetSamplingRules": _anything("xray:GetSamplingRules"),
        "GetSamplingTargets": _anything("xray:GetSamplingTargets"),
    },
    "sts": {"GetCallerIdentity": _nothing},
}
