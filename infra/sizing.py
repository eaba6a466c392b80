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


class SizingError(ValueError):
    """A step's need exceeds what Lambda allows: a smaller shard size (or run) is needed."""


def _seconds(name: str, cases: int, s_per_case: float) -> int:
    needed = math.ceil(cases * s_per_case * LAMBDA_CPU_FACTOR * HEADROOM) + STEP_OVERHEAD_S
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
            _seconds("score_shard", shard, SCORE_PART_S_PER_CASE),
            _disk("score_shard", shard, SCORE_BYTES_PER_CASE),
        ),
        "build_shard_artifact": Sizing(
            ONE_VCPU_MB,
            _seconds("build_shard_artifact", shard, ARTIFACT_PART_S_PER_CASE),
            _disk("build_shard_artifact", shard, ARTIFACT_BYTES_PER_CASE),
        ),
        "reduce_scores": Sizing(
            ONE_VCPU_MB,
            _seconds("reduce_scores", whole, MERGE_SCORES_S_PER_CASE),
            _disk("reduce_scores", whole, SCORE_BYTES_PER_CASE),
        ),
        # A whole run of up to one shard's cases, or the merge of a sharded run's parts.
        "build_artifact": Sizing(
            ONE_VCPU_MB,
            max(
                _seconds("build_artifact", shard, ARTIFACT_S_PER_CASE),
                _seconds("build_artifact", whole, MERGE_ARTIFACT_S_PER_CASE),
            ),
            _disk("build_artifact", whole, ARTIFACT_BYTES_PER_CASE),
        ),
    }
