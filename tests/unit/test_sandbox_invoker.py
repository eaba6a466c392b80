"""The invoker hands a job to its runtime's sandbox function, and refuses a runtime the stack has none for."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from benchgen.aws.sandbox import SandboxFailure, SandboxInvoker
from benchgen.aws.storage import ObjectStore


class NoStore:
    """A bucket that must not be reached: the runtime is checked before anything is uploaded."""

    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"the store was used ({name}) for a job no sandbox function runs")


def test_a_job_of_a_runtime_without_a_sandbox_function_fails_before_anything_is_uploaded(
    tmp_path: Path,
) -> None:
    invoker = SandboxInvoker(cast(ObjectStore, NoStore()), {"minimal": "sandbox-fn"}, ttl_seconds=60)

    with pytest.raises(SandboxFailure) as raised:
        invoker.invoke(
            tmp_path / "job.zip", {"runtime": "scientific", "time_limit": 30}, tmp_path / "out.zip"
        )

    assert str(raised.value) == "no sandbox function runs the scientific runtime; the stack has: minimal"
