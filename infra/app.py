"""CDK app entry point (`cdk synth` runs `python -m infra.app`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from infra.node_notices import silence_node_release_banners

# Before aws_cdk starts jsii's Node.js: `cdk synth` runs this module directly, through no command that
# could have done it first.
silence_node_release_banners()

import aws_cdk as cdk  # noqa: E402

from infra.constructs.nag import apply_nag  # noqa: E402
from infra.stacks.api import ApiStack  # noqa: E402
from infra.stacks.data import DataStack  # noqa: E402
from infra.stacks.monitoring import MonitoringStack  # noqa: E402
from infra.stacks.pipelines import PipelinesStack  # noqa: E402

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
}


@dataclass(frozen=True)
class BenchGenStacks:
    """The application's stacks; each depends only on those before it."""

    data: DataStack
    pipelines: PipelinesStack
    api: ApiStack
    monitoring: MonitoringStack

    @property
    def in_order(self) -> tuple[cdk.Stack, ...]:
        """In deployment order."""
        return (self.data, self.pipelines, self.api, self.monitoring)


def build_app(
    context: dict[str, Any] | None = None, outdir: str | None = None
) -> tuple[cdk.App, BenchGenStacks]:
    app = cdk.App(context={**FEATURE_FLAGS, **(context or {})}, outdir=outdir)
    data = DataStack(app, description="BenchGen data: buckets, tables, event bus, user pool (all kept)")
    pipelines = PipelinesStack(
        app, data, description="BenchGen pipelines: the library layer, run-step functions, state machines"
    )
    api = ApiStack(app, data, pipelines, description="BenchGen API and web console")
    monitoring = MonitoringStack(app, pipelines, api, description="BenchGen alarms and dashboard")
    stacks = BenchGenStacks(data=data, pipelines=pipelines, api=api, monitoring=monitoring)
    apply_nag(app, stacks)
    return app, stacks


def main() -> None:
    app, _ = build_app()
    app.synth()


if __name__ == "__main__":
    main()
