"""The inputs the state machines give the tasks that work on one thing: a run, one shard of a run, an
evaluation, or the failure of a pipeline. Each task's handler parses its event with one of these, so a
field renamed here is renamed for all of them."""

from __future__ import annotations

from pydantic import Field, model_validator

from benchgen.lazy_model import LazyModel


class RunInput(LazyModel):
    run_id: str


class ShardInput(LazyModel):
    run_id: str
    shard: int


class ShardCountInput(LazyModel):
    """A run whose shards are all done: how many there were, for the step that merges their parts."""

    run_id: str
    shard_count: int


class InferShardInput(ShardInput):
    """One shard of a live run, with its share of the run's bounds as the plan split them."""

    in_flight: int = Field(default=1, ge=1, le=1000)
    shards_at_once: int = Field(default=1, ge=1, le=10_000)


class JudgeShardInput(LazyModel):
    """One shard of a judging job, with its share of the judge's bounds as the plan split them: of a run's
    judging pass (``run_id``), or of a version's judge calibration (``calibration``: its
    ``<environment_id>/<version>``)."""

    run_id: str | None = None
    calibration: str | None = None
    shard: int
    in_flight: int = Field(default=1, ge=1, le=1000)
    shards_at_once: int = Field(default=1, ge=1, le=10_000)

    @model_validator(mode="after")
    def _one_job(self) -> JudgeShardInput:
        if (self.run_id is None) == (self.calibration is None):
            raise ValueError("a judging shard belongs to a run (run_id) or to a calibration, not both")
        return self


class CalibrationCountInput(LazyModel):
    """A calibration whose shards are all judged: how many there were."""

    calibration: str
    shard_count: int


class EvaluationInput(LazyModel):
    evaluation_id: str


#: The key of a task event that carries a Failure rather than the task's own input.
FAILED = "failed"


class Failure(LazyModel):
    """A state machine's failure path, handed to the function that writes the pipeline's record: the id of
    the record (a run, a preparation, a package, an evaluation) and the sentence to record it failed with.

    The state machines write no record themselves (see docs/decisions.md), so a caught failure is
    recorded by the same function, through the same table module, as the pipeline's other writes.
    """

    id: str = Field(min_length=1)
    reason: str = Field(min_length=1)


class SubmitBatchInput(RunInput):
    """A live run's cases to its provider's batch inference: the case shards Plan wrote, and their count;
    ``judging``: the prompts of the run's judging pass instead (of the cases with an answer)."""

    shard_count: int = Field(ge=1)
    cases: int = Field(ge=1)
    judging: bool = False


class PollBatchInput(RunInput):
    """One look at a live run's batch jobs (``judging``: its judging pass's), and how many looks came
    before it."""

    polls: int = Field(default=0, ge=0)
    judging: bool = False


class AssembleJudgmentsInput(ShardCountInput):
    """The judgments of a run's shards to write as the run's; ``from_batch``: the answers of the judging
    pass's batch jobs to write as its shards' first judgments instead."""

    from_batch: bool = False
