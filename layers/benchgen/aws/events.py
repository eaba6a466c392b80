"""Domain events on the EventBridge bus."""

from __future__ import annotations

import json
from typing import Any

from benchgen.aws import clients

SOURCE = "benchgen"


class EventPublisher:
    def __init__(self, bus_name: str, *, client: Any = None) -> None:
        self._client = client
        self.bus_name = bus_name

    @property
    def _events(self) -> Any:
        return self._client or clients.events()

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        response = self._events.put_events(
            Entries=[
                {
                    "Source": SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail, sort_keys=True, default=str),
                    "EventBusName": self.bus_name,
                }
            ]
        )
        if response.get("FailedEntryCount"):
            raise RuntimeError(f"EventBridge refused {detail_type}: {response['Entries']}")
