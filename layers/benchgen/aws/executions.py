"""Starting a state machine execution once per name: a run's artifact pipeline, a preparation's pipeline."""

from __future__ import annotations

import json
from typing import Any

from benchgen.aws import clients


class ExecutionStarter:
    def __init__(self, state_machine_arn: str, *, client: Any = None) -> None:
        self._client = client
        self.state_machine_arn = state_machine_arn

    @property
    def _sfn(self) -> Any:
        return self._client or clients.stepfunctions()

    def start_once(self, name: str, payload: dict[str, Any]) -> bool:
        """Start the named execution; False when it already exists (a duplicate event)."""
        try:
            self._sfn.start_execution(
                stateMachineArn=self.state_machine_arn, name=name, input=json.dumps(payload, sort_keys=True)
            )
        except self._sfn.exceptions.ExecutionAlreadyExists:
            return False
        return True
