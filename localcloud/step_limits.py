"""The Step Functions quotas a design can break, enforced on moto's state machine interpreter.

moto executes the synthesized definitions but is kinder than AWS in ways that hide a design's failure
until it is deployed; while installed, :class:`StepLimits` makes it as strict as AWS (stricter where the
two cannot be told apart):

- an execution's history holds at most 25,000 events: when event 25,000 would be anything but
  ExecutionSucceeded, the execution fails with AWS's sentence instead (a Distributed Map's children
  are executions of their own, each with its own history, as on AWS);
- ``States.ALL`` catches and retries neither ``States.DataLimitExceeded`` (a state's input or output, or
  a task's result, above 256 KiB: moto detects it, then lets a Catch on ``States.ALL`` have it) nor
  ``States.Runtime``, as AWS documents: both fail the execution;
- an inline Map runs at most 40 iterations at once whatever its MaxConcurrency says (moto starts one
  thread per item when MaxConcurrency is 0), and a Distributed Map at most 10,000 child executions;
- a Wait until a timestamp ends no earlier than it: moto reads the UTC timestamp as the machine's local
  time and drops the fraction of a second left, so it would end early (the batch branch records that
  timestamp on the run as its next look, and the look must not come before it).

Lambda's limit of 15 minutes per invocation is the Lambda runtime's (``lambda_runtime.py``). The methods
replaced are private to moto (pinned for this reason): this is the one module that touches them, and
leaving puts them back (see patches.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any, cast

from localcloud.patches import Patch, Patches

HISTORY_LIMIT = 25_000
HISTORY_CAUSE = f"The execution reached the maximum number of history events ({HISTORY_LIMIT})."
HISTORY_ERROR = "States.Runtime"
INLINE_MAP_CONCURRENCY = 40
DISTRIBUTED_MAP_CONCURRENCY = 10_000
# The errors AWS lets no Catch or Retry on States.ALL have.
UNCATCHABLE_BY_ALL = ("States.DataLimitExceeded", "States.Runtime")

# Set on the event manager of an execution's own history (never on a Distributed Map's children's).
_EXECUTION = "_benchgen_execution"
_FULL = "_benchgen_history_full"


class StepLimits(Patches):
    """Context manager: while active, moto's interpreter enforces the quotas above."""

    def declare(self) -> Iterator[Patch]:
        from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import (
            ErrorEqualsDecl,
        )
        from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
            DistributedIterationComponent,
        )
        from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.inline_iteration_component import (  # noqa: E501
            InlineIterationComponent,
        )
        from moto.stepfunctions.parser.asl.component.state.wait.wait_function.timestamp import Timestamp
        from moto.stepfunctions.parser.asl.eval.environment import Environment
        from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
        from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

        yield Patch.wrapping(ExecutionWorker, "_get_evaluation_environment", _evaluation_environment)
        yield Patch.wrapping(EventManager, "add_event", _add_event)
        yield Patch.wrapping(Environment, "set_error", _set_error)
        yield Patch.wrapping(ErrorEqualsDecl, "_eval_body", _error_equals)
        yield Patch.wrapping(InlineIterationComponent, "_eval_body", _inline_map)
        yield Patch.wrapping(DistributedIterationComponent, "_map_run", _distributed_map)
        yield Patch.wrapping(Timestamp, "_get_wait_seconds", _wait_until)


def _evaluation_environment(original: Any) -> Any:
    def wrapped(self: Any) -> Any:
        env = original(self)
        setattr(env.event_manager, _EXECUTION, env)
        return env

    return wrapped


def _add_event(original: Any) -> Any:
    from moto.stepfunctions.parser.api import ExecutionFailedEventDetails, HistoryEventType
    from moto.stepfunctions.parser.asl.eval.event.event_detail import EventDetails

    def wrapped(self: Any, context: Any, event_type: Any, *args: Any, **kwargs: Any) -> int:
        env = getattr(self, _EXECUTION, None)
        if env is None:
            return int(original(self, context, event_type, *args, **kwargs))
        with self._mutex:
            count = len(self._history_event_list)
            full = getattr(self, _FULL, False)
        if full:
            # The execution has ended at its limit: nothing more is written to its history.
            return count
        if count < HISTORY_LIMIT - 1 or event_type == HistoryEventType.ExecutionSucceeded:
            return int(original(self, context, event_type, *args, **kwargs))
        details = ExecutionFailedEventDetails(error=HISTORY_ERROR, cause=HISTORY_CAUSE)
        setattr(self, _FULL, True)
        env.set_error(details)
        return int(
            original(
                self,
                context,
                HistoryEventType.ExecutionFailed,
                cast(Any, EventDetails)(executionFailedEventDetails=details),
            )
        )

    return wrapped


def _set_error(original: Any) -> Any:
    def wrapped(self: Any, error: Any) -> None:
        # The failure at the history limit is the execution's outcome: what failed after it (a state that
        # could no longer move on) does not replace it.
        manager = self.event_manager
        at_limit = getattr(manager, _FULL, False) and getattr(manager, _EXECUTION) is self
        if at_limit and error.get("cause") != HISTORY_CAUSE:
            return
        original(self, error)

    return wrapped


def _error_equals(original: Any) -> Any:
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import (
        StatesErrorName,
    )

    all_errors = StatesErrorName.from_name("States.ALL")

    def wrapped(self: Any, env: Any) -> None:
        name = getattr(env.stack[-1], "error_name", None) if env.stack else None
        if all_errors in self.error_names and name in UNCATCHABLE_BY_ALL:
            env.stack.pop()
            env.stack.append(False)
            return
        original(self, env)

    return wrapped


def _inline_map(original: Any) -> Any:
    from moto.stepfunctions.parser.asl.component.state.exec.state_map.iteration.distributed_iteration_component import (  # noqa: E501
        DistributedIterationComponent,
    )

    def wrapped(self: Any, env: Any) -> None:
        if not isinstance(self, DistributedIterationComponent) and env.stack:
            eval_input = env.stack[-1]
            declared = getattr(eval_input, "max_concurrency", None)
            if isinstance(declared, int) and (declared == 0 or declared > INLINE_MAP_CONCURRENCY):
                eval_input.max_concurrency = INLINE_MAP_CONCURRENCY
        original(self, env)

    return wrapped


def _distributed_map(original: Any) -> Any:
    def wrapped(self: Any, env: Any, eval_input: Any) -> None:
        record = eval_input.map_run_record
        if record.max_concurrency == 0 or record.max_concurrency > DISTRIBUTED_MAP_CONCURRENCY:
            record.max_concurrency = min(DISTRIBUTED_MAP_CONCURRENCY, max(1, len(env.stack[-1])))
        original(self, env, eval_input)

    return wrapped


def _wait_until(original: Any) -> Any:
    def wrapped(self: Any, env: Any) -> int:
        self.string.eval(env=env)
        text = env.stack.pop()
        moment: datetime | None = self._from_timestamp_string(timestamp=text)
        if moment is None:
            # moto's own refusal of a malformed timestamp (it evaluates the path again)
            return cast(int, original(self, env))
        left = (moment.replace(tzinfo=UTC) - datetime.now(UTC)).total_seconds()
        return max(0, math.ceil(left))

    return wrapped
