"""The monitoring stack: the alarm topic, the alarms and the dashboard over every function and state
machine. Nothing depends on it, so it deploys last and can be replaced without touching the application."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.constructs.monitoring import Monitoring
from infra.stacks import MONITORING_STACK
from infra.stacks.api import ApiStack
from infra.stacks.pipelines import PipelinesStack


class MonitoringStack(Stack):
    def __init__(
        self,
        scope: Construct,
        pipelines: PipelinesStack,
        api: ApiStack,
        construct_id: str = MONITORING_STACK,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.monitoring = Monitoring(
            self,
            "Monitoring",
            functions={**pipelines.functions.by_name, **api.functions.by_name},
            state_machines=pipelines.state_machines,
        )
        # What an operator subscribes to and opens after `cdk deploy`.
        CfnOutput(self, "AlarmTopicArn", value=self.monitoring.topic.topic_arn, description="Alarm topic")
        CfnOutput(self, "DashboardName", value=self.monitoring.dashboard.dashboard_name)
