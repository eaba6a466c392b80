"""The inputs the state machines give the tasks that work on one thing: a run, one shard of a run, an
evaluation. Each task's handler parses its event with one of these, so a field renamed here is renamed
for all of them."""

from __future__ import annotations

from pydantic import BaseModel


class RunTask(BaseModel):
    run_id: str


class ShardTask(BaseModel):
    run_id: str
    shard: int


class EvaluationTask(BaseModel):
    evaluation_id: str
