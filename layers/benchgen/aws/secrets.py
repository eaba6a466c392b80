"""A connection's API key, read from Secrets Manager at the moment a provider is called."""

from __future__ import annotations

from botocore.exceptions import ClientError

from benchgen.aws.clients import regional
from benchgen.inference.model import ModelCallError


def secret_value(secret_arn: str, region: str) -> str:
    """The current value of a secret: read when a provider is called, kept only in memory."""
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


def api_key(secret_arn: str) -> str:
    """A connection's API key, read now from its secret (in the secret's own region)."""
    return secret_value(secret_arn, _arn_region(secret_arn))


def _arn_region(arn: str) -> str:
    # arn:<partition>:secretsmanager:<region>:<account>:secret:<name>
    return arn.split(":")[3]
