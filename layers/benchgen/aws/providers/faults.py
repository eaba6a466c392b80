"""How a failed AWS call becomes a provider's fault, for the adapters of the kinds that run on AWS.

Throttling, the services' own faults and network failures are retryable; a refused request is not. A
start or stop refused because the work is done already (a job of this name exists; it has ended) is not
a fault at all: :func:`job_request` asks the job itself, since each service words that its own way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from benchgen.inference.model import ModelCallError
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.training_runs import TRAINING_TERMINAL

T = TypeVar("T")
# What a failed call raises: botocore's errors, and NotImplementedError from a stand-in for AWS that lacks
# an action (model calls let that one through: it is no answer of a model's).
MODEL_CALL_ERRORS = (ClientError, BotoCoreError)
CALL_ERRORS = (*MODEL_CALL_ERRORS, NotImplementedError)

# Error codes after which the same call may succeed: throttling, capacity, the service's own faults.
RETRYABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "TooManyRequestsException",
        "ServiceUnavailableException",
        "ServiceUnavailable",
        "InternalServerException",
        "InternalFailure",
        "ModelNotReadyException",
        "ModelTimeoutException",
    }
)


# Of those, the ones that say the caller went over its rate: they slow a run down, never fail a case.
THROTTLING_CODES = frozenset({"ThrottlingException", "TooManyRequestsException"})


def missing(connection_id: str, kind: str, what: str) -> str:
    """The sentence for a connection that lacks a field its kind is called with."""
    return f"connection {connection_id} ({kind}) lacks what its provider needs ({what}): fix the connection"


def model_error(what: str, error: ClientError | BotoCoreError) -> ModelCallError:
    """The error of a failed model call: retryable when the same call may succeed later."""
    if isinstance(error, BotoCoreError):
        return ModelCallError(f"could not reach {what}: {error}", retryable=True)
    details = error.response.get("Error", {})
    code = str(details.get("Code", ""))
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    # A SageMaker ModelError carries the container's own status: a 429 or 5xx there is transient too.
    original = error.response.get("OriginalStatusCode")
    container = int(original) if isinstance(original, int | str) and str(original).isdigit() else 0
    retryable = code in RETRYABLE_CODES or status >= 500 or container >= 500
    throttled = code in THROTTLING_CODES or status == 429 or container == 429
    return ModelCallError(
        f"{what} answered {code}: {details.get('Message', '')}", retryable=retryable, throttled=throttled
    )


def fault(what: str, error: Exception) -> ProviderFault:
    """The fault for a failed job call: retryable when the same call may succeed later."""
    if isinstance(error, ClientError):
        details = error.response.get("Error", {})
        code = str(details.get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        retryable = code in RETRYABLE_CODES or status >= 500
        return ProviderFault(f"{what} answered {code}: {details.get('Message', '')}", retryable=retryable)
    if isinstance(error, BotoConnectionError | HTTPClientError):
        return ProviderFault(f"could not reach {what}: {error}", retryable=True)
    if isinstance(error, NotImplementedError):
        # An endpoint that stands in for AWS (an emulator) may lack an action AWS has: retrying cannot help.
        return ProviderFault(
            f"{what} is not implemented by the endpoint this connection reaches ({error}); AWS implements "
            "it, so only a stand-in for AWS answers this way, and retrying will not help",
            retryable=False,
        )
    # A request botocore refused to send (ParamValidationError), missing credentials...
    return ProviderFault(f"{what} could not be asked: {error}", retryable=False)


def call(what: str, action: Callable[[], T]) -> T:
    """``action``, its failure raised as a :class:`ProviderFault` naming ``what``."""
    try:
        return action()
    except CALL_ERRORS as error:
        raise fault(what, error) from None


def needs_role(spec: JobSpec, service: str) -> str:
    """The connection's role, which ``service`` assumes to read the training files."""
    if not spec.role_arn:
        raise ProviderFault(
            f"{service} trains with the connection's IAM role, and this connection names none: record the "
            "connection again with role_arn",
            retryable=False,
        )
    return spec.role_arn


def job_request(
    what: str,
    request: Callable[[], object],
    describe: Callable[[JobSpec, str | None], JobState],
    spec: JobSpec,
    job_id: str | None,
    *,
    ended: bool,
) -> JobState:
    """Make a start (``ended`` false) or stop (``ended`` true) request, then read the job as it stands; a
    refusal is read against the job, as :func:`_after_refusal` says."""
    try:
        request()
    except CALL_ERRORS as error:
        return _after_refusal(describe, spec, fault(what, error), ended=ended)
    return describe(spec, job_id)


def _after_refusal(
    describe: Callable[[JobSpec, str | None], JobState], spec: JobSpec, refused: ProviderFault, *, ended: bool
) -> JobState:
    """After a refused start or stop: the job's state when the refusal only says the work is done (a job of
    this name exists already; with ``ended``, it has already ended, so there is nothing to stop); else
    ``refused``."""
    if refused.retryable:
        raise refused
    try:
        state = describe(spec, None)
    except ProviderFault:
        raise refused from None
    if ended and state.status not in TRAINING_TERMINAL:
        raise refused
    return state
