"""Bodies of POST /connections, one per provider kind, for the tests of what a connection request does on
the fakes and through the API alike. The ARNs name the local cloud's account and region."""

from __future__ import annotations

SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:together-key-AbCdEf"
TOGETHER = {
    "name": "together",
    "provider": "openai-compatible",
    "base_url": "https://api.together.xyz/v1",
    "secret_arn": SECRET_ARN,
}
BEDROCK = {
    "name": "bedrock us-east-1",
    "provider": "bedrock",
    "region": "us-east-1",
    "role_arn": "arn:aws:iam::123456789012:role/bedrock-customization",
}
SAGEMAKER = {"name": "sagemaker", "provider": "sagemaker", "region": "us-east-1"}
