"""The application's stacks, built in deployment order."""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import App, Stack

from infra.stacks.api import ApiStack
from infra.stacks.data import DataStack
from infra.stacks.monitoring import MonitoringStack
from infra.stacks.pipelines import PipelinesStack


@dataclass(frozen=True)
class BenchGenStacks:
    """The application's stacks; each depends only on those before it."""

    data: DataStack
    pipelines: PipelinesStack
    api: ApiStack
    monitoring: MonitoringStack

    @property
    def in_order(self) -> tuple[Stack, ...]:
        """In deployment order."""
        return (self.data, self.pipelines, self.api, self.monitoring)


def build_stacks(app: App) -> BenchGenStacks:
    data = DataStack(app, description="BenchGen data: buckets, tables, event bus, user pool (all kept)")
    pipelines = PipelinesStack(
        app, data, description="BenchGen pipelines: the library layer, run-step functions, state machines"
    )
    api = ApiStack(app, data, pipelines, description="BenchGen API and web console")
    monitoring = MonitoringStack(app, pipelines, api, description="BenchGen alarms and dashboard")
    return BenchGenStacks(data=data, pipelines=pipelines, api=api, monitoring=monitoring)
