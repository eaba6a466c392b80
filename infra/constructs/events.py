"""The domain event bus that automation subscribes to (RunCompleted, RunFailed, DatasetSaved)."""

from __future__ import annotations

from aws_cdk import aws_events as events
from constructs import Construct

from infra.constructs import set_logical_id

EVENT_BUS_NAME = "benchgen"
EVENT_SOURCE = "benchgen"


class Events(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=EVENT_BUS_NAME)
        set_logical_id(self.bus, "EventBus")
