"""What the artifact builder needs to know about the run it builds from."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from benchgen.records import RunRecord


class RunInfo(BaseModel):
    """A finished run, reduced to the facts that name and describe its dataset."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    environment_id: str
    environment_version: str
    model: str
    benchmark: str  # the benchmark's title
    overall_score: float | None  # a fraction in [0, 1], or None when the run has no primary score
    finished_at: datetime

    @classmethod
    def from_record(cls, record: RunRecord, *, benchmark: str) -> RunInfo:
        """From the stored run; a run without a finish time is dated by its creation."""
        stamp = record.finished_at or record.created_at
        return cls(
            run_id=record.run_id,
            environment_id=record.environment_id,
            environment_version=record.environment_version,
            model=record.model,
            benchmark=benchmark,
            overall_score=record.overall_score,
            finished_at=datetime.fromisoformat(stamp),
        )
