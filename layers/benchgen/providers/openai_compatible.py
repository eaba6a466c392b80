"""The openai-compatible kind: any service that speaks OpenAI's API at a base URL (Together-like hosts,
self-hosted vLLM-like servers), training through Together's fine-tuning API and answering through chat
completions.

``POST {base}/files`` (multipart, purpose ``fine-tune``) takes a training file and answers its id;
``POST {base}/fine-tunes`` starts a job on file ids, ``GET {base}/fine-tunes[/{id}]`` lists or reads jobs,
``POST {base}/fine-tunes/{id}/cancel`` stops one. The job's ``suffix`` is its fixed job name, so a start
first looks for a job with that suffix. The tuned model answers through the same connection, by the name
the job reports. The request shapes and answer readers here are pure;
``benchgen.aws.providers.openai_compatible`` makes the calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from benchgen.providers.capabilities import ANY_FAMILY, ConnectionLimits, ConnectionProfile
from benchgen.providers.definition import ProviderDefinition
from benchgen.providers.hyperparameters import Hyperparameter, check_named, typed
from benchgen.providers.jobs import JobSpec, JobState, ProviderFault
from benchgen.records.runs import LiveModel
from benchgen.records.training_runs import TrainingStatus
from benchgen.vocabulary import Method, ProviderKind

_S = TrainingStatus
_INT, _FLOAT = int, float
# Together's POST /fine-tunes training fields (dpo_beta only for preference training), and the GRPO fields a
# reinforcement job sends in method.reinforcement.hyperparameters (BenchGen's model server reads them as
# TRL's GRPOConfig names them, with its bounds on steps and wall seconds). The fields' documentation gives
# types but no upper bounds, so only the bounds the fields' meaning sets are checked.
HYPERPARAMETERS: Mapping[str, Hyperparameter] = MappingProxyType(
    {
        "n_epochs": Hyperparameter(_INT, 1),
        "learning_rate": Hyperparameter(_FLOAT, 0),
        "batch_size": Hyperparameter(_INT, 1),
        "warmup_ratio": Hyperparameter(_FLOAT, 0, 1),
        "n_checkpoints": Hyperparameter(_INT, 1),
        "dpo_beta": Hyperparameter(_FLOAT, 0),
        "num_generations": Hyperparameter(_INT, 2),
        "max_completion_length": Hyperparameter(_INT, 1),
        "temperature": Hyperparameter(_FLOAT, 0, 2),
        "beta": Hyperparameter(_FLOAT, 0),
        "max_steps": Hyperparameter(_INT, 1),
        "max_seconds": Hyperparameter(_FLOAT, 1),
    }
)
_METHODS = {Method.DEMONSTRATION: "sft", Method.PREFERENCE: "dpo"}
# The fields each method takes; the others are refused before the request is sent.
_SHARED = {"n_epochs", "learning_rate", "batch_size"}
_METHOD_FIELDS = {
    Method.DEMONSTRATION: _SHARED | {"warmup_ratio", "n_checkpoints"},
    Method.PREFERENCE: _SHARED | {"warmup_ratio", "n_checkpoints", "dpo_beta"},
    Method.REINFORCEMENT: _SHARED
    | {"num_generations", "max_completion_length", "temperature", "beta", "max_steps", "max_seconds"},
}
#: The name a reinforcement job's grader goes by: the package's grader.py, the environment's own scoring.
GRADER_NAME = "benchgen-environment-scoring"
# What a job reports as its trained model, and as its cost, across Together-style and OpenAI-style APIs.
_RESULT_FIELDS = ("fine_tuned_model", "model_output_name", "output_name")
_COST_FIELDS = ("total_price", "trained_tokens", "token_count")


class OpenAICompatible(ProviderDefinition):
    kind = ProviderKind("openai-compatible")
    title = "an OpenAI-compatible service"
    # OpenAI-style fine-tuning APIs (Together, Fireworks...) take OpenAI's SFT and DPO rows; reinforcement
    # jobs (OpenAI's method object with a python grader, on openai-rft rows) are taken by BenchGen's own
    # model server and not by Together, which offers no reinforcement fine-tuning: a connection to Together
    # narrows its profile to demonstration and preference, and one left wide hears Together's own refusal
    # when it starts the job.
    capabilities = ConnectionProfile.model_construct(
        methods=[Method.DEMONSTRATION, Method.PREFERENCE, Method.REINFORCEMENT],
        model_families=[ANY_FAMILY],
        export_profiles=["openai-chat", "openai-preference", "together-sft", "together-dpo", "openai-rft"],
        limits=ConnectionLimits.model_construct(),
    )
    inference_path = "chat completions ({base_url}/chat/completions)"
    batch_module = "openai_batch"
    # Together's values, and OpenAI's (validating_files, succeeded, failed), which other OpenAI-style
    # services also use. "cancel_requested" is still running: the job may yet finish before the stop takes.
    statuses = MappingProxyType(
        {
            "pending": _S.QUEUED,
            "queued": _S.QUEUED,
            "validating_files": _S.QUEUED,
            "running": _S.RUNNING,
            "compressing": _S.RUNNING,
            "uploading": _S.RUNNING,
            "cancel_requested": _S.RUNNING,
            "cancelled": _S.CANCELLED,
            "error": _S.FAILED,
            "failed": _S.FAILED,
            "completed": _S.SUCCEEDED,
            "succeeded": _S.SUCCEEDED,
        }
    )
    requires = frozenset({"base_url"})
    accepts = frozenset({"timeout_s"})
    uploads_files = True

    def check_hyperparameters(
        self, base_model: str, values: Mapping[str, str | int | float]
    ) -> dict[str, str]:
        return check_named(self.kind, base_model, HYPERPARAMETERS, values)

    def where(self, live: LiveModel) -> str:
        return f"{live.model_id} at {live.base_url}"


PROVIDER = OpenAICompatible()


def fine_tune_request(spec: JobSpec) -> dict[str, Any]:
    """The ``POST /fine-tunes`` body of ``spec``: its files, base model, suffix and training fields, as
    Together's ``training_method`` (SFT, DPO) or OpenAI's reinforcement ``method`` with a python grader."""
    # Names are checked before their values are typed: a spec made without the launch's check still gets
    # a sentence naming what the method takes, not a KeyError.
    foreign = sorted(set(spec.hyperparameters) - _METHOD_FIELDS[spec.method])
    if foreign:
        raise ProviderFault(
            f"{spec.method} training does not take {', '.join(foreign)}: it takes "
            f"{', '.join(sorted(_METHOD_FIELDS[spec.method]))}",
            retryable=False,
        )
    fields = typed(HYPERPARAMETERS, spec.hyperparameters)
    body: dict[str, Any] = {
        "training_file": spec.train_uri,
        "model": spec.base_model,
        "suffix": spec.job_name,
    }
    if spec.validation_uri:
        body["validation_file"] = spec.validation_uri
    if spec.method is Method.REINFORCEMENT:
        if not spec.grader_source:
            raise ProviderFault(
                "a reinforcement job needs its grader: the package holds no grader.py; package the "
                "reinforcement preparation with the openai-rft profile",
                retryable=False,
            )
        # OpenAI's reinforcement method object, its python grader ({"type", "name", "source"}) defining
        # grade(sample, item), and its hyperparameters.
        grader = {"type": "python", "name": GRADER_NAME, "source": spec.grader_source}
        settings = {"grader": grader, "hyperparameters": fields}
        return body | {"method": {"type": "reinforcement", "reinforcement": settings}}
    method: dict[str, Any] = {"method": _METHODS[spec.method]}
    beta = fields.pop("dpo_beta", None)
    if beta is not None:
        method["dpo_beta"] = beta
    return body | {"training_method": method, **fields}


def upload_body(boundary: str, filename: str, data: bytes, purpose: str = "fine-tune") -> bytes:
    """The ``POST /files`` body: multipart/form-data of ``purpose`` (``fine-tune``, or ``batch`` for the
    Batch API's requests) and the file."""
    safe_name = filename.replace('"', "").replace("\r", "").replace("\n", "")
    return b"".join(
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n{purpose}\r\n'.encode(),
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{safe_name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n".encode()
            + data
            + b"\r\n",
            f"--{boundary}--\r\n".encode(),
        )
    )


def job_state(job: Mapping[str, Any]) -> JobState:
    """What a fine-tune job answer says: its status, the trained model's name once it succeeded, and the
    provider's own words on why it failed."""
    provider_status = str(job.get("status", ""))
    status = PROVIDER.status(provider_status)
    result = next(
        (job[name] for name in _RESULT_FIELDS if isinstance(job.get(name), str) and job[name]), None
    )
    cost: dict[str, float | str] = {
        name: float(job[name])
        for name in _COST_FIELDS
        if isinstance(job.get(name), int | float) and not isinstance(job.get(name), bool)
    }
    return JobState(
        provider_status=provider_status,
        status=status,
        job_id=str(job["id"]) if job.get("id") is not None else None,
        result_model=result if status is TrainingStatus.SUCCEEDED else None,
        failure_reason=_failure(job) if status is TrainingStatus.FAILED else None,
        cost=cost,
        message=PROVIDER.status_note(provider_status),
    )


def _failure(job: Mapping[str, Any]) -> str | None:
    """The provider's own words on why a job failed (OpenAI nests them under ``error``)."""
    error = job.get("error")
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    for name in ("error", "message", "failure_reason"):
        if isinstance(job.get(name), str) and job[name]:
            return str(job[name])
    return None
