"""Model calls through AWS: Bedrock Converse, SageMaker endpoints, and the API key in Secrets Manager."""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from benchgen.aws.clients import regional
from benchgen.inference.model import Answer, Model, ModelCallError
from benchgen.inference.openai_http import ChatCompletions
from benchgen.inference.shapes import (
    chat_request,
    chat_text,
    converse_request,
    converse_text,
    generate_request,
    generated_text,
    parse_json,
)
from benchgen.records.runs import LiveModel
from benchgen.vocabulary import Sampling

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


def _model_error(what: str, error: ClientError | BotoCoreError) -> ModelCallError:
    if isinstance(error, BotoCoreError):
        return ModelCallError(f"could not reach {what}: {error}", retryable=True)
    details = error.response.get("Error", {})
    code = str(details.get("Code", ""))
    status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    # A SageMaker ModelError carries the container's own status: a 429 or 5xx there is transient too.
    original = error.response.get("OriginalStatusCode")
    container = int(original) if isinstance(original, int | str) and str(original).isdigit() else 0
    retryable = code in RETRYABLE_CODES or status >= 500 or container == 429 or container >= 500
    return ModelCallError(f"{what} answered {code}: {details.get('Message', '')}", retryable=retryable)


class BedrockConverse:
    """One Bedrock model (a foundation model id, an inference profile or a deployment ARN)."""

    def __init__(self, region: str, model_id: str, sampling: Sampling) -> None:
        self._region = region
        self._model_id = model_id
        self._sampling = sampling

    def complete(self, prompt: str) -> Answer:
        client = regional("bedrock-runtime", self._region)
        try:
            response = client.converse(**converse_request(self._model_id, prompt, self._sampling))
        except (ClientError, BotoCoreError) as error:
            raise _model_error(f"Bedrock model {self._model_id}", error) from None
        response.pop("ResponseMetadata", None)
        return Answer(text=converse_text(response), raw=json.dumps(response, default=str))


class SageMakerEndpoint:
    """One SageMaker endpoint serving TGI / LMI, through ``{"inputs"}`` or the Messages API."""

    def __init__(self, region: str, endpoint_name: str, sampling: Sampling, *, messages_api: bool) -> None:
        self._region = region
        self._endpoint_name = endpoint_name
        self._sampling = sampling
        self._messages_api = messages_api

    def complete(self, prompt: str) -> Answer:
        request: dict[str, Any] = (
            chat_request(None, prompt, self._sampling)
            if self._messages_api
            else generate_request(prompt, self._sampling)
        )
        client = regional("sagemaker-runtime", self._region)
        try:
            response = client.invoke_endpoint(
                EndpointName=self._endpoint_name,
                ContentType="application/json",
                Accept="application/json",
                Body=json.dumps(request).encode(),
            )
            raw = response["Body"].read().decode("utf-8", errors="replace")
        except (ClientError, BotoCoreError) as error:
            raise _model_error(f"SageMaker endpoint {self._endpoint_name}", error) from None
        parsed = parse_json(raw, f"SageMaker endpoint {self._endpoint_name}")
        text = chat_text(parsed) if self._messages_api else generated_text(parsed)
        return Answer(text=text, raw=raw)


def secret_value(secret_arn: str, region: str) -> str:
    """The current value of a secret: read when a model is called, kept only in memory."""
    try:
        response = regional("secretsmanager", region).get_secret_value(SecretId=secret_arn)
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code", "")
        raise ModelCallError(
            f"the connection's secret {secret_arn} could not be read ({code}): check that it exists and that "
            "the inference functions may read it",
            retryable=False,
        ) from None
    return str(response.get("SecretString") or "")


def model_for(live: LiveModel, sampling: Sampling) -> Model:
    """The adapter that reaches ``live``'s model; an API key is read from Secrets Manager here, now."""
    if live.provider == "bedrock" and live.region:
        return BedrockConverse(live.region, live.model_id, sampling)
    if live.provider == "sagemaker" and live.region:
        endpoint = live.endpoint_name or live.model_id
        return SageMakerEndpoint(live.region, endpoint, sampling, messages_api=live.messages_api)
    if live.provider == "openai-compatible" and live.base_url:
        key = api_key(live.secret_arn) if live.secret_arn else None
        return ChatCompletions(live.base_url, live.model_id, sampling, api_key=key)
    raise ModelCallError(
        f"connection {live.connection_id} ({live.provider}) lacks what its provider needs to be called "
        "(a region for bedrock and sagemaker, a base URL for openai-compatible): fix the connection",
        retryable=False,
    )


def api_key(secret_arn: str) -> str:
    """A connection's API key, read now from its secret (in the secret's own region)."""
    return secret_value(secret_arn, _arn_region(secret_arn))


def _arn_region(arn: str) -> str:
    # arn:<partition>:secretsmanager:<region>:<account>:secret:<name>
    return arn.split(":")[3]
