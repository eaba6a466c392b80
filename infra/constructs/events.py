"""The domain event bus that automation subscribes to (RunCompleted, RunFailed, DatasetSaved)."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_events as events
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk import aws_stepfunctions_tasks as tasks
from constructs import Construct

from infra.constructs import set_logical_id

EVENT_BUS_NAME = "benchgen"
EVENT_SOURCE = "benchgen"


class Events(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=EVENT_BUS_NAME)
        set_logical_id(self.bus, "EventBus")


def put_event(
    scope: Construct, state_id: str, bus: events.IEventBus, detail_type: str, detail: dict[str, Any]
) -> tasks.EventBridgePutEvents:
    """A task that puts one BenchGen event on `bus`, `detail` built from the execution's JSON, and passes
    its input on unchanged."""
    return tasks.EventBridgePutEvents(
        scope,
        state_id,
        entries=[
            tasks.EventBridgePutEventsEntry(
                event_bus=bus,
                source=EVENT_SOURCE,
                detail_type=detail_type,
                detail=sfn.TaskInput.from_object(detail),
            )
        ],
        result_path=sfn.JsonPath.DISCARD,
    )
