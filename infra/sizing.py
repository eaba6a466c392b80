"""What each run-step function is given (memory, timeout, scratch disk), derived in one place from the
deploy-time shard size and the measured per-case cost of each step.

**Sharded runs.** ``cdk deploy -c benchgen:shardCases=100000`` (the default): a run of an environment whose
phase is one task scored by a built-in template (no scoring or ingestion program), without a case scope,
and with more cases than this, is scored in shards of this many cases on the ShardedScoring state machine.
Registration cuts each such task's cases into shard files at this size and records the split on the
environment version, so a version keeps the split it was registered with. Any other run runs whole.

**Costs.** Measured with ``bench/score_bench.py`` at 1,000,000 generated math cases, each step in its own
process pinned to one core of the development machine, in CPU seconds: ingest 14.0 s, score 38.5 s and
artifact 54.1 s for the whole run; per 100,000-case shard at most 3.40 s to score and 3.21 s to collect
its finetune examples; merging the ten parts 2.67 s for the scores and 19.3 s for the artifact. Peak
memory stayed under 125 MB in every step. Scratch disk per case, from the files a 100,000-case run leaves:
about 1,100 bytes for scoring (its part, the detailed results, the zips) and as many for the artifact
(its part, 880 bytes a case, and the zip). A Lambda vCPU (1,769 MB gives one whole vCPU) is taken as
``LAMBDA_CPU_FACTOR`` times slower than that core, and every figure gets ``HEADROOM``. A step that sees a
whole run is sized for ``MAX_RUN_CASES``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from infra.timeouts import INGEST_TIMEOUT_S, SCORE_TIMEOUT_S

SHARD_CASES = "benchgen:shardCases"
DEFAULT_SHARD_CASES = 100_000
# How many shards a run scores at once (Lambda concurrency a run may take).
SHARD_CONCURRENCY = "benchgen:shardConcurrency"
DEFAULT_SHARD_CONCURRENCY = 10

LAMBDA_CPU_FACTOR = 1.5
# Seconds per case on one core, and scratch bytes per case (see above).
INGEST_S_PER_CASE = 14.0 / 1_000_000
SCORE_S_PER_CASE = 38.5 / 1_000_000
ARTIFACT_S_PER_CASE = 54.1 / 1_000_000
SCORE_PART_S_PER_CASE = 3.40 / 100_000
ARTIFACT_PART_S_PER_CASE = 3.21 / 100_000
# Cutting cases into shards reads and writes every case once: costed as ingest.
SPLIT_S_PER_CASE = INGEST_S_PER_CASE
MERGE_SCORES_S_PER_CASE = 2.67 / 1_000_000
MERGE_ARTIFACT_S_PER_CASE = 19.3 / 1_000_000
SCORE_BYTES_PER_CASE = 1_100
ARTIFACT_BYTES_PER_CASE = 1_100

HEADROOM = 2.0
# The largest run the whole-run steps (registration, ingest, merges) are sized for.
MAX_RUN_CASES = 1_000_000
# What every step does besides its cases: fetch and unpack the bundle (up to the registration limit of
# 2 GiB unpacked), start up, upload.
STEP_OVERHEAD_S = 120
BUNDLE_MIB = 2 * 2048  # the bundle zip and what it unpacks to

ONE_VCPU_MB = 1769
LAMBDA_MAX_TIMEOUT_S = 900
LAMBDA_MAX_EPHEMERAL_MIB = 10240
LAMBDA_MIN_EPHEMERAL_MIB = 512


@dataclass(frozen=True)
class Sizing:
    memory_mb: int
    timeout_s: int
    ephemeral_storage_mib: int


RunStepSizing = Callable[[int], Sizing]
"""A run step's sizing at a deployed shard size (``benchgen:shardCases``)."""


class SizingError(ValueError):
    """A step's need exceeds what Lambda allows: a smaller shard size (or run) is needed."""


def _seconds(step: str, cases: int, s_per_case: float, *, fixed: int | None = None) -> int:
    """Seconds for ``cases`` at ``s_per_case``; a step that may run a custom program keeps its ``fixed``
    timeout instead, as a bundle's execution_time_limit may take most of it (see infra/timeouts.py)."""
    needed = math.ceil(cases * s_per_case * LAMBDA_CPU_FACTOR * HEADROOM) + STEP_OVERHEAD_S
    if needed > LAMBDA_MAX_TIMEOUT_S:
        raise SizingError(
            f"{step} needs about {needed} s for {cases} cases, more than Lambda's {LAMBDA_MAX_TIMEOUT_S} s; "
            f"deploy with a smaller -c {SHARD_CASES}"
        )
    return needed if fixed is None else fixed


def _disk(step: str, cases: int, bytes_per_case: float) -> int:
    needed = BUNDLE_MIB + math.ceil(cases * bytes_per_case * HEADROOM / 2**20)
    if needed > LAMBDA_MAX_EPHEMERAL_MIB:
        raise SizingError(
            f"{step} needs about {needed} MiB of scratch disk for {cases} cases, more than Lambda's "
            f"{LAMBDA_MAX_EPHEMERAL_MIB} MiB; deploy with a smaller -c {SHARD_CASES}"
        )
    return max(LAMBDA_MIN_EPHEMERAL_MIB, needed)


# Each run step's sizing when runs of more than ``shard_cases`` cases are sharded. A whole run (scoring,
# the artifact) holds at most ``shard_cases`` cases of a shardable environment; registration, ingestion and
# the merges see every case of a run of up to ``MAX_RUN_CASES``. The function each one sizes names it
# (infra/constructs/catalog.py).


def registration(shard_cases: int) -> Sizing:
    return Sizing(ONE_VCPU_MB, _seconds("registration", MAX_RUN_CASES, SPLIT_S_PER_CASE), BUNDLE_MIB)


def ingestion(shard_cases: int) -> Sizing:
    return Sizing(
        ONE_VCPU_MB,
        _seconds("ingestion", MAX_RUN_CASES, INGEST_S_PER_CASE + SPLIT_S_PER_CASE, fixed=INGEST_TIMEOUT_S),
        _disk("ingestion", MAX_RUN_CASES, 2 * SCORE_BYTES_PER_CASE),
    )


def scoring(shard_cases: int) -> Sizing:
    return Sizing(
        2048,
        _seconds("scoring", shard_cases, SCORE_S_PER_CASE, fixed=SCORE_TIMEOUT_S),
        _disk("scoring", shard_cases, SCORE_BYTES_PER_CASE),
    )


def shard_scoring(shard_cases: int) -> Sizing:
    return Sizing(
        ONE_VCPU_MB,
        _seconds("scoring a shard", shard_cases, SCORE_PART_S_PER_CASE),
        _disk("scoring a shard", shard_cases, SCORE_BYTES_PER_CASE),
    )


def shard_artifact(shard_cases: int) -> Sizing:
    return Sizing(
        ONE_VCPU_MB,
        _seconds("a shard's artifact part", shard_cases, ARTIFACT_PART_S_PER_CASE),
        _disk("a shard's artifact part", shard_cases, ARTIFACT_BYTES_PER_CASE),
    )


def score_merge(shard_cases: int) -> Sizing:
    return Sizing(
        ONE_VCPU_MB,
        _seconds("merging the scores", MAX_RUN_CASES, MERGE_SCORES_S_PER_CASE),
        _disk("merging the scores", MAX_RUN_CASES, SCORE_BYTES_PER_CASE),
    )


def artifact(shard_cases: int) -> Sizing:
    """A whole run of up to one shard's cases, or the merge of a sharded run's parts."""
    return Sizing(
        ONE_VCPU_MB,
        max(
            _seconds("the artifact", shard_cases, ARTIFACT_S_PER_CASE),
            _seconds("the artifact", MAX_RUN_CASES, MERGE_ARTIFACT_S_PER_CASE),
        ),
        _disk("the artifact", MAX_RUN_CASES, ARTIFACT_BYTES_PER_CASE),
    )
