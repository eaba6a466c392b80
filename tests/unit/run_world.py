"""One run's world for the run steps' unit tests: a tiny math benchmark in an in-memory bucket, the runs
and environments tables, the state machines and the bus, all fakes of the steps' ports."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchgen.records.environments import EnvironmentRecord, EnvironmentStatus
from benchgen.records.runs import RunRecord
from benchgen.steps.artifact import ArtifactBuild, build_run_artifact
from benchgen.steps.attempts import Invocation
from benchgen.steps.ingest import ingest_submission
from benchgen.steps.register import register_environment
from benchgen.steps.score import score_run
from benchgen.steps.shards import build_shard_artifact, reduce_scores, score_shard
from examplegen.writing import write_bundle_zip
from tests.fakes import (
    MemoryDatasets,
    MemoryEnvironments,
    MemoryRuns,
    MemoryStarter,
    MemoryStore,
    Published,
)

BUNDLE_KEY = "environments/tiny/v1/bundle.zip"
SUBMISSION_KEY = "submissions/run-1/predictions.json"
PREDICTION_KEY = "predictions/run-1/prediction_output.zip"
CASES = [
    {"id": "q1", "question": "1+1", "answer": "2"},
    {"id": "q2", "question": "2+2", "answer": "4"},
    {"id": "q3", "question": "30*40", "answer": "1200"},
    {"id": "q4", "question": "5-8", "answer": "-3"},
]
# Two right (q1, q2), two wrong (q3, q4).
ANSWERS = {"q1": "#### 2", "q2": "#### 4", "q3": "#### 1100", "q4": "#### 3"}
FINETUNE = "finetune:\n  language: en\n"


def tiny_bundle(root: Path, *, finetune: str = FINETUNE, cases: Sequence[Mapping[str, str]] = CASES) -> bytes:
    """The zipped bundle of the tiny math benchmark over ``cases``, built under ``root``."""
    bundle = root / "bundle"
    (bundle / "reference").mkdir(parents=True)
    (bundle / "reference" / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (bundle / "competition.yaml").write_text(
        "version: 2\ntitle: Tiny math\ntemplate: math\n"
        f"{finetune}"
        "tasks:\n  - index: 0\n    reference_data: reference\n"
        "phases:\n  - index: 0\n    tasks: [0]\n"
        "leaderboards:\n  - columns:\n      - {title: Accuracy, key: accuracy, index: 0}\n"
    )
    return write_bundle_zip(bundle, root / "bundle.zip").read_bytes()


def invocation() -> Invocation:
    return Invocation(request_id="req-1", deadline=time.time() + 600, attempts=3)


class Run:
    """The bucket, the tables, the state machines and the bus of run ``run-1``, all in memory.

    ``registered`` records the environment version directly; ``shard_cases`` has the register step
    record it instead, cutting its cases into shards of that many (as a stack deployed with a shard size
    does), so that the run is scored in shards.
    """

    def __init__(
        self,
        root: Path,
        *,
        finetune: str = FINETUNE,
        registered: bool = True,
        shard_cases: int | None = None,
    ) -> None:
        self.root = root
        self.deliveries = 0
        predictions = {"predictions": [{"id": i, "prediction_text": t} for i, t in ANSWERS.items()]}
        self.store = MemoryStore(
            {
                BUNDLE_KEY: tiny_bundle(root, finetune=finetune),
                SUBMISSION_KEY: json.dumps(predictions).encode(),
            }
        )
        environment = EnvironmentRecord(
            environment_id="tiny",
            version="v1",
            status=EnvironmentStatus.REGISTERED,
            bundle_key=BUNDLE_KEY,
            has_finetune=bool(finetune),
        )
        self.environments = MemoryEnvironments(*([environment] if registered and not shard_cases else []))
        if shard_cases:
            register_environment(
                BUNDLE_KEY,
                None,
                store=self.store,
                environments=self.environments,
                workdir=self._workdir(),
                shard_cases=shard_cases,
            )
        self.runs = MemoryRuns(
            RunRecord(run_id="run-1", environment_id="tiny", environment_version="v1", model="m", owner="u")
        )
        self.datasets = MemoryDatasets()
        self.starter = MemoryStarter()
        self.sharded_starter = MemoryStarter()
        self.published = Published()

    def _workdir(self) -> Path:
        # Each delivery works in a folder of its own, as each Lambda invocation has its own /tmp.
        self.deliveries += 1
        return self.root / f"delivery-{self.deliveries}"

    def ingest(self) -> None:
        ingest_submission(
            SUBMISSION_KEY,
            store=self.store,
            runs=self.runs,
            environments=self.environments,
            workdir=self._workdir(),
            invocation=invocation(),
            publisher=self.published,
        )

    def score(self) -> RunRecord | None:
        return score_run(
            PREDICTION_KEY,
            store=self.store,
            runs=self.runs,
            environments=self.environments,
            starter=self.starter,
            publisher=self.published,
            workdir=self._workdir(),
            invocation=invocation(),
            sharded_starter=self.sharded_starter,
        )

    def score_shard(self, shard: int) -> dict[str, Any]:
        return score_shard(
            "run-1",
            shard,
            store=self.store,
            runs=self.runs,
            environments=self.environments,
            publisher=self.published,
            workdir=self._workdir(),
        )

    def build_shard_artifact(self, shard: int) -> dict[str, Any]:
        return build_shard_artifact(
            "run-1",
            shard,
            store=self.store,
            runs=self.runs,
            environments=self.environments,
            publisher=self.published,
            workdir=self._workdir(),
        )

    def reduce_scores(self) -> dict[str, Any]:
        return reduce_scores(
            "run-1",
            store=self.store,
            runs=self.runs,
            environments=self.environments,
            starter=self.starter,
            publisher=self.published,
            workdir=self._workdir(),
        )

    def build_artifact(self) -> ArtifactBuild:
        return build_run_artifact(
            "run-1",
            store=self.store,
            runs=self.runs,
            environments=self.environments,
            datasets=self.datasets,
            workdir=self._workdir(),
        )

    def run(self) -> RunRecord:
        stored = self.runs.get("run-1")
        assert stored is not None
        return stored
