"""What each run-step function is given (memory, timeout, scratch disk), derived in one place from the
deploy-time shard size and the measured per-case cost of each step.

**Sharded runs.** ``cdk deploy -c benchgen:shardCases=100000`` (the default): a run of an environment whose
phase is one task scored by a built-in template (no scoring or ingestion program), without a case scope,
and with more cases than this, is scored in shards of this many cases on the ShardedScoring state machine.
Registration cuts each such task's cases into shard files at this size and records the split on the
environment version, so a version keeps the split it was registered with. Any other run runs whole.

**Costs.** Measured with ``bench/score_bench.py`` on one core of the development machine (the engine before
its lean hot path: the upper bound): ingest 2.5 s, score 11.1 s and artifact 17.4 s for 100,000 cases,
flat peak memory of 56 MB. Scratch disk per case: the artifact step's 3.9 GB at 1M cases is the largest
(3,900 bytes a case); scoring writes about 1,000 bytes a case (verdicts, detailed results, their zips).
A Lambda vCPU (1,769 MB gives one whole vCPU) is taken as ``LAMBDA_CPU_FACTOR`` times slower than that
core, and every figure gets ``HEADROOM``. A step that sees a whole run is sized for ``MAX_RUN_CASES``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from infra.timeouts import INGEST_TIMEOUT_S, SCORE_TIMEOUT_S

SHARD_CASES = "benchgen:shardCases"
DEFAULT_SHARD_CASES = 100_000
# How many shards a run scores at once (Lambda concurrency a run may take).
SHARD_CONCURRENCY = "benchgen:shardConcurrency"
DEFAULT_SHARD_CONCURRENCY = 10

LAMBDA_CPU_FACTOR = 1.5
# Seconds per case on one core, and scratch bytes per case (see above).
INGEST_S_PER_CASE = 2.5 / 100_000
SCORE_S_PER_CASE = 11.1 / 100_000
ARTIFACT_S_PER_CASE = 17.4 / 100_000
# Cutting cases into shards reads and writes every case once: costed as ingest.
SPLIT_S_PER_CASE = INGEST_S_PER_CASE
# The merges of a 1,000,000-case run in shards of 100,000 (bench/cloud_shards_bench.py, the lean engine):
# ReduceScores 47.2 s, the artifact pipeline's BuildArtifact 276.3 s, measured on two cores shared with
# other work, so already slower than one Lambda vCPU: they get HEADROOM only (CONTENDED).
MERGE_SCORES_S_PER_CASE = 47.2 / 1_000_000
MERGE_ARTIFACT_S_PER_CASE = 276.3 / 1_000_000
CONTENDED = 1 / LAMBDA_CPU_FACTOR
SCORE_BYTES_PER_CASE = 1_000
ARTIFACT_BYTES_PER_CASE = 3_900

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


class SizingError(ValueError):
    """A step's need exceeds what Lambda allows: a smaller shard size (or run) is needed."""


def _seconds(name: str, cases: int, s_per_case: float, *, measured_on: float = 1.0) -> int:
    """``measured_on``: how much slower than one core of the development machine the cost was measured."""
    needed = math.ceil(cases * s_per_case * LAMBDA_CPU_FACTOR * measured_on * HEADROOM) + STEP_OVERHEAD_S
    if needed > LAMBDA_MAX_TIMEOUT_S:
        raise SizingError(
            f"{name} needs about {needed} s for {cases} cases, more than Lambda's {LAMBDA_MAX_TIMEOUT_S} s; "
            f"deploy with a smaller -c {SHARD_CASES}"
        )
    return _PROGRAM_STEP_TIMEOUTS.get(name, needed)


def _disk(name: str, cases: int, bytes_per_case: float) -> int:
    needed = BUNDLE_MIB + math.ceil(cases * bytes_per_case * HEADROOM / 2**20)
    if needed > LAMBDA_MAX_EPHEMERAL_MIB:
        raise SizingError(
            f"{name} needs about {needed} MiB of scratch disk for {cases} cases, more than Lambda's "
            f"{LAMBDA_MAX_EPHEMERAL_MIB} MiB; deploy with a smaller -c {SHARD_CASES}"
        )
    return max(LAMBDA_MIN_EPHEMERAL_MIB, needed)


# Steps that may run a custom program keep their timeout: a bundle's execution_time_limit may take most of
# it (see infra/timeouts.py).
_PROGRAM_STEP_TIMEOUTS = {"ingest": INGEST_TIMEOUT_S, "score": SCORE_TIMEOUT_S}


def run_step_sizes(shard_cases: int = DEFAULT_SHARD_CASES) -> dict[str, Sizing]:
    """Each run-step function's sizing when runs of more than ``shard_cases`` cases are sharded.

    A whole run (score, build_artifact) holds at most ``shard_cases`` cases of a shardable environment;
    registration, ingest and the merges see every case of a run of up to ``MAX_RUN_CASES``.
    """
    shard = shard_cases
    whole = MAX_RUN_CASES
    return {
        "register_environment": Sizing(
            ONE_VCPU_MB, _seconds("register_environment", whole, SPLIT_S_PER_CASE), BUNDLE_MIB
        ),
        "ingest": Sizing(
            ONE_VCPU_MB,
            _seconds("ingest", whole, INGEST_S_PER_CASE + SPLIT_S_PER_CASE),
            _disk("ingest", whole, 2 * SCORE_BYTES_PER_CASE),
        ),
        "score": Sizing(
            2048, _seconds("score", shard, SCORE_S_PER_CASE), _disk("score", shard, SCORE_BYTES_PER_CASE)
        ),
        "score_shard": Sizing(
            ONE_VCPU_MB,
            _seconds("score_shard", shard, SCORE_S_PER_CASE),
            _disk("score_shard", shard, SCORE_BYTES_PER_CASE),
        ),
        "build_shard_artifact": Sizing(
            ONE_VCPU_MB,
            _seconds("build_shard_artifact", shard, ARTIFACT_S_PER_CASE),
            _disk("build_shard_artifact", shard, ARTIFACT_BYTES_PER_CASE),
        ),
        "reduce_scores": Sizing(
            ONE_VCPU_MB,
            _seconds("reduce_scores", whole, MERGE_SCORES_S_PER_CASE, measured_on=CONTENDED),
            _disk("reduce_scores", whole, SCORE_BYTES_PER_CASE),
        ),
        # A whole run of up to one shard's cases, or the merge of a sharded run's parts.
        "build_artifact": Sizing(
            ONE_VCPU_MB,
            max(
                _seconds("build_artifact", shard, ARTIFACT_S_PER_CASE),
                _seconds("build_artifact", whole, MERGE_ARTIFACT_S_PER_CASE, measured_on=CONTENDED),
            ),
            _disk("build_artifact", whole, ARTIFACT_BYTES_PER_CASE / 2),
        ),
    }
