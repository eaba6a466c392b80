"""The pydantic shape of ``competition.yaml``: Codabench version 2 plus BenchGen's own keys.

BenchGen adds ``template``, ``criteria``, ``finetune``, ``judge`` (the model that grades a judged benchmark's
answers, :mod:`benchgen.judging`) and ``runtime`` (the runtime its programs run in,
see :mod:`benchgen.bundle.runtime`). Codabench-only platform keys (``image``, ``terms``, ``pages``, ...)
are accepted and ignored; ``docker_image`` is kept: it selects the runtime when ``runtime`` is not named.
A CodaLab v1.5 file is converted to this shape first (:mod:`benchgen.bundle.v15`). An optional field written
as ``null`` (``computation_indexes: null``, common in published bundles) takes
its default, as Codabench reads it.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from benchgen.bundle.v15 import Conversion
from benchgen.judging import JudgeSettings
from benchgen.lazy_model import LazyModel
from benchgen.vocabulary import TemplateName


class SelectionCriterion(StrEnum):
    WRONG_PLUS_AUGMENTED = "wrong_plus_augmented"
    ALL_ITEMS = "all_items"
    FAILED_AND_NEAR_MISS = "failed_and_near_miss"


class _Lenient(LazyModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_means_unset(cls, data: object) -> object:
        # A null value reads as an absent key: optional fields take their default, required ones are missing.
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class Column(_Lenient):
    title: str
    key: str
    index: int = 0
    sorting: Literal["asc", "desc"] = "desc"
    computation: Literal["avg", "sum", "min", "max"] | None = None
    computation_indexes: list[int] = Field(default_factory=list)
    precision: int = 2
    hidden: bool = False


class Leaderboard(_Lenient):
    title: str = "Results"
    key: str = "main"
    columns: list[Column]


class Task(_Lenient):
    index: int = 0
    name: str = ""
    description: str = ""
    scoring_program: str | None = None
    ingestion_program: str | None = None
    input_data: str | None = None
    reference_data: str | None = None
    ingestion_only_during_scoring: bool = False


class Phase(_Lenient):
    index: int = 0
    name: str = "Main"
    description: str = ""
    tasks: list[int] = Field(default_factory=lambda: [0])
    execution_time_limit: int = 600


class Criterion(_Lenient):
    id: str
    description: str = ""


class Augmentation(_Lenient):
    factor: int = Field(default=5, ge=0, le=50)
    connectors: list[tuple[str, str]] = Field(default_factory=list)
    prefixes: list[str] = Field(default_factory=list)
    suffixes: list[str] = Field(default_factory=list)
    system_prompts: list[str] = Field(default_factory=list)


class Pool(_Lenient):
    path: str
    share: float = Field(default=0.2, ge=0.0, le=1.0)


class Finetune(_Lenient):
    selection_criterion: SelectionCriterion = SelectionCriterion.WRONG_PLUS_AUGMENTED
    augmentation: Augmentation = Field(default_factory=Augmentation)
    pool: Pool | None = None
    target_template: dict[str, str] = Field(default_factory=dict)
    language: str = "en"
    system_prompt: str = ""
    suggested_hyperparams: dict[str, float | int | str] = Field(default_factory=dict)


class CompetitionSpec(_Lenient):
    version: int = 2
    title: str
    description: str = ""
    tasks: list[Task]
    phases: list[Phase] = Field(default_factory=lambda: [Phase()])
    leaderboards: list[Leaderboard]
    template: TemplateName | None = None
    docker_image: str | None = None
    runtime: str | None = None
    criteria: list[Criterion] = Field(default_factory=list)
    finetune: Finetune | None = None
    judge: JudgeSettings | None = None  # the model a template that asks a judge grades with
    # Set by the reader when it converted an older format (never read from the yaml itself).
    conversion: Conversion | None = None

    @property
    def columns(self) -> list[Column]:
        return sorted(self.leaderboards[0].columns, key=lambda c: c.index)

    @property
    def primary_column(self) -> Column:
        """The first leaderboard column: its value is the run's overall score."""
        return self.columns[0]

    def source_field(self, field: str) -> str:
        """How the author's file names ``field`` (``tasks.0.scoring_program``): as it is, or the 1.5
        field it was converted from (``phases.1.scoring_program``)."""
        return self.conversion.field_in_source(field) if self.conversion else field
