"""Environment versions as registration recorded them, and who may publish them."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import MAX_CRITERIA, Key, Text, Texts, all_or_none
from benchgen.records.judge_calibration import JudgeCalibration
from benchgen.records.timestamps import utc_now


class EnvironmentStatus(StrEnum):
    REGISTERED = "Registered"
    REJECTED = "Rejected"


class ShardPlan(LazyModel):
    """How one task's cases are cut for runs scored in shards: ``count`` shards of ``size`` cases (the last
    one shorter), shard n holding the non-blank lines [n * size, (n + 1) * size) of its cases.jsonl."""

    task: int  # the task's index in competition.yaml
    cases: int = Field(ge=0)
    size: int = Field(ge=1)
    count: int = Field(ge=0)


class EnvironmentRecord(LazyModel):
    environment_id: str
    version: str
    status: EnvironmentStatus
    title: Text = ""
    template: str | None = None
    has_finetune: bool = False
    bundle_key: str
    bundle_version_id: str | None = None  # the S3 object version the registration validated
    columns: list[dict[str, Any]] = Field(default_factory=list)
    phases: list[dict[str, Any]] = Field(default_factory=list)  # each phase's index and name, in order
    # The ids of its `criteria:`, so a preparation's scope is checked without opening the bundle; None when
    # not recorded (registered before they were, or too many to keep), and the bundle is checked instead.
    criteria: Annotated[list[Key] | None, AfterValidator(all_or_none(MAX_CRITERIA))] = None
    docker_image: str | None = None  # named by the bundle: it selects the runtime unless runtime: does
    runtime: Text | None = None  # the runtime its programs run in, and why
    converted: Text | None = None  # how its competition.yaml was converted from an older format, if it was
    # Each task a run may score in shards, with its cases as registration cut them at the deploy-time
    # shard size (one shard: runs of it run whole); a run of any other task runs whole.
    case_shards: list[ShardPlan] = Field(default_factory=list)
    problems: Texts = Field(default_factory=list)
    warnings: Texts = Field(default_factory=list)
    # Its judge's agreement with people, measured at registration; None when its template asks no judge.
    judge_calibration: JudgeCalibration | None = Field(
        default=None,
        description="its judge's agreement with people, measured at registration on the bundle's "
        "human-labelled answers: failed, with the reason, when the judge could not be reached",
    )
    # Who published it: a Cognito user id from the upload's stamp, or OPERATOR for a direct bucket upload.
    published_by: str | None = None
    created_at: str = Field(default_factory=utc_now)


class EnvironmentOwner(LazyModel):
    """Who may publish versions of one environment id: its owner, and the members of a group it names."""

    environment_id: str
    owner: str
    publisher_group: str | None = None
    created_at: str = Field(default_factory=utc_now)
