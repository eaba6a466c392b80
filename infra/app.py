"""CDK app entry point (`cdk synth` runs `python -m infra.app`)."""

from __future__ import annotations

from typing import Any

from infra.node_notices import silence_node_release_banners

# Before aws_cdk starts jsii's Node.js: `cdk synth` runs this module directly, through no command that
# could have done it first.
silence_node_release_banners()

import aws_cdk as cdk  # noqa: E402

from infra.nag import apply_nag  # noqa: E402
from infra.stacks.application import BenchGenStacks, build_stacks  # noqa: E402

# Feature flags live here rather than in cdk.json so that `cdk synth` and the in-process synthesis used by
# the local cloud and the tests produce the same template.
FEATURE_FLAGS: dict[str, Any] = {
    "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy": True,
    "@aws-cdk/aws-s3:createDefaultLoggingPolicy": True,
    "@aws-cdk/aws-iam:standardizedServicePrincipals": True,
    "@aws-cdk/aws-lambda:recognizeLayerVersion": True,
    "@aws-cdk/aws-apigateway:disableCloudWatchRole": False,
    "@aws-cdk/core:checkSecretUsage": True,
    "@aws-cdk/core:target-partitions": ["aws", "aws-cn"],
    # The later stacks' references to the pipelines (state machines, functions) are CloudFormation exports,
    # so that CloudFormation refuses to remove what the API or the alarms still name.
    "@aws-cdk/core:defaultCrossStackReferences": "strong",
}


def build_app(
    context: dict[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, BenchGenStacks]:
    app = cdk.App(context={**FEATURE_FLAGS, **(context or {})}, outdir=outdir)
    stacks = build_stacks(app)
    apply_nag(app, stacks)
    return app, stacks


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
