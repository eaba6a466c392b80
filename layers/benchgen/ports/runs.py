"""The runs table: runs moved from status to status by named transitions, and the listing of runs.

The runs are a base class, not a protocol, because their transitions are logic of their own that the
table and the tests' fake must share rather than each write again.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol

from benchgen.outputs import RunOutput
from benchgen.ports.pages import Page
from benchgen.records.environments import ShardPlan
from benchgen.records.programs import ProgramOutcome
from benchgen.records.runs import (
    ArtifactStatus,
    BatchSummary,
    InferenceProgress,
    InferenceSummary,
    JudgingSummary,
    RunRecord,
    RunStatus,
    ShardCounts,
)
from benchgen.records.timestamps import utc_now


@dataclass(frozen=True)
class ShardReport:
    """One shard's counts ``now`` where they were ``was`` (None: it reported none), and the deadline of
    the latest call it sent (None: no call since its last report)."""

    shard: int
    was: ShardCounts | None
    now: ShardCounts
    call_deadline: str | None = None

    def added(self, name: str) -> int:
        """How much the count ``name`` (``asked``, ``answered``, ``unanswered``) grew since ``was``."""
        return int(getattr(self.now, name)) - int(getattr(self.was or ShardCounts(), name))


class Holder(Enum):
    """``_update``'s claim condition when it has none: whoever holds the run, or nobody."""

    ANY = "any"


class RunsStore(ABC):
    """Runs, moved from status to status by named transitions over one conditional write, ``_update``.

    Each transition is conditional: it answers ``None`` and changes nothing when the run is missing or
    not where the transition starts from, which is what makes a duplicate event a no-op; otherwise it
    answers the run as the write left it, so that a step hands on what it wrote rather than reading the
    run again. The transitions are written once, here, for the table and for the tests' stand-in alike.
    """

    @abstractmethod
    def create(self, record: RunRecord) -> bool:
        """Store a new run; ``False`` (and nothing changed) when the run id is taken."""

    @abstractmethod
    def get(self, run_id: str) -> RunRecord | None: ...

    @abstractmethod
    def list(
        self,
        *,
        environment_id: str | None = None,
        status: RunStatus | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> Page[RunRecord]:
        """Runs newest first, optionally of one environment and/or in one status, a page at a time."""

    @abstractmethod
    def add_files(self, run_id: str, files: Mapping[RunOutput, str]) -> RunRecord | None:
        """Record files the run produced (output -> key), each entry on its own; the run as it is then, or
        ``None`` if it is missing."""

    @abstractmethod
    def claim(
        self,
        run: RunRecord,
        *,
        step: str,
        holder: str,
        expires_at: float,
        now: float,
        status: RunStatus,
        request_id: str | None = None,
    ) -> int | None:
        """Take ``run`` (as the step last read or wrote it) for ``step`` until ``expires_at``; the attempt
        number, or None if it is not free. The write is conditioned on the claim ``run`` holds, so a run
        that changed hands since is not taken."""

    @abstractmethod
    def release_claim(self, run_id: str, *, holder: str) -> bool:
        """Let the claim lapse now, keeping its attempt count; ``False`` if ``holder`` no longer holds it."""

    @abstractmethod
    def _update(
        self,
        run_id: str,
        expected: RunStatus | Iterable[RunStatus] | None,
        *,
        holder: str | Holder | None = Holder.ANY,
        **fields: Any,
    ) -> RunRecord | None:
        """Set ``fields`` on an existing run (a ``None`` value removes the field), validated as the record
        validates them, if its status is one of ``expected`` (when given) and its claim is ``holder``'s
        (``None``: no claim; ``Holder.ANY``: whatever it is): the run as the write left it; else ``None``,
        nothing changed."""

    def deploy(self, run_id: str) -> RunRecord | None:
        """A live run waits for its model: ``Pending`` -> ``Deploying``; ``None`` unless it was Pending."""
        return self._update(run_id, RunStatus.PENDING, status=RunStatus.DEPLOYING)

    def start(
        self,
        run_id: str,
        *,
        submission_key: str,
        submission_filename: str,
        started_at: str | None = None,
        expected: RunStatus | Iterable[RunStatus] = RunStatus.PENDING,
    ) -> RunRecord | None:
        """``expected`` -> ``Running``, reading the submission at ``submission_key``, started now unless
        ``started_at`` says when; ``None`` (nothing changed) unless the run was in ``expected``.

        That is how a duplicate event becomes a no-op: the second ``Pending -> Running`` finds the run
        already ``Running`` and changes nothing.
        """
        return self._update(
            run_id,
            expected,
            status=RunStatus.RUNNING,
            started_at=started_at or utc_now(),
            submission_key=submission_key,
            submission_filename=submission_filename,
        )

    def record_phase(self, run_id: str, phase: str) -> RunRecord | None:
        """Name the phase the run is scored in."""
        return self._update(run_id, None, phase=phase)

    def record_ingest(
        self,
        run_id: str,
        *,
        counts: Mapping[str, int],
        warnings: Sequence[str],
        shards: ShardPlan | None,
        runtime: str | None = None,
        programs: Sequence[ProgramOutcome] = (),
    ) -> RunRecord | None:
        """What ingest counted and noticed, the runtime its programs run in (and why), how its programs
        ended, and the shards the run is scored in (``None``: whole)."""
        return self._update(
            run_id,
            None,
            counts=dict(counts),
            warnings=list(warnings),
            shards=shards,
            runtime=runtime,
            programs=list(programs),
        )

    def record_progress(
        self, run_id: str, progress: InferenceProgress, *, expected: RunStatus
    ) -> RunRecord | None:
        """Where a live run's asking stands, set whole by the one step then asking (Deploy, Plan), while
        the run is in ``expected``; no shard has counted anything yet."""
        return self._update(run_id, expected, progress=progress, shard_progress={})

    @abstractmethod
    def add_progress(self, run_id: str, report: ShardReport) -> bool:
        """The Running run's progress changes by the difference the shard ``report`` gives (shards report
        together, so sums are added to, never set), as does the latest call's deadline. ``False``
        (nothing changed) unless the run is Running with a progress recorded and the shard's counts are
        still the report's ``was``: a report made twice, or by an attempt that no longer holds the shard,
        changes nothing."""

    def record_inference(self, run_id: str, summary: InferenceSummary) -> RunRecord | None:
        """What asking a live model for the run's answers came to."""
        return self._update(run_id, None, inference=summary)

    def record_judging(self, run_id: str, summary: JudgingSummary) -> RunRecord | None:
        """What asking the environment's judge about the Running run's answers came to."""
        return self._update(run_id, RunStatus.RUNNING, judging=summary)

    def record_batch(self, run_id: str, batch: BatchSummary) -> RunRecord | None:
        """The run's batch jobs as the provider last reported them (whatever the run's status: a job's
        end may be heard after its output was scored)."""
        return self._update(run_id, None, batch=batch)

    def record_judging_batch(self, run_id: str, batch: BatchSummary) -> RunRecord | None:
        """The batch jobs of the Running run's judging pass as the provider last reported them."""
        return self._update(run_id, RunStatus.RUNNING, judging_batch=batch)

    def complete(
        self,
        run_id: str,
        *,
        overall_score: float | None,
        metrics: Mapping[str, float],
        other_metrics: Mapping[str, float],
        breakdowns: Mapping[str, Any],
        counts: Mapping[str, int],
        execution_name: str,
        warnings: Sequence[str] = (),
        programs: Sequence[ProgramOutcome] = (),
        no_score: str | None = None,
    ) -> RunRecord | None:
        """``Running`` -> ``Completed`` with its scores (``no_score``: why it has no overall score),
        ``warnings`` and ``programs`` (all of them: ingest's too), its artifact pending from the execution
        ``execution_name``, its claim let go; ``None`` (nothing changed) unless the run was Running."""
        return self._update(
            run_id,
            RunStatus.RUNNING,
            status=RunStatus.COMPLETED,
            finished_at=utc_now(),
            overall_score=overall_score,
            no_score=no_score,
            metrics=dict(metrics),
            other_metrics=dict(other_metrics),
            breakdowns=dict(breakdowns),
            counts=dict(counts),
            execution_name=execution_name,
            warnings=list(warnings),
            programs=list(programs),
            artifact_status=ArtifactStatus.PENDING,
            claim=None,
        )

    def fail(
        self,
        run_id: str,
        reason: str,
        *,
        expected: RunStatus | Iterable[RunStatus] = RunStatus.RUNNING,
        holder: str | Holder | None = Holder.ANY,
        programs: Sequence[ProgramOutcome] | None = None,
    ) -> RunRecord | None:
        """``expected`` -> ``Failed`` for ``reason``, its claim let go; ``None`` (nothing changed) unless
        the run was in ``expected``, so a run that finished meanwhile keeps its outcome, and (when
        ``holder`` is given) unless its claim is still the one ``holder`` names, so a run another delivery
        took meanwhile is left to it. ``programs``, when given, is how every program of the run ended."""
        ended = {} if programs is None else {"programs": list(programs)}
        return self._update(
            run_id,
            expected,
            holder=holder,
            status=RunStatus.FAILED,
            finished_at=utc_now(),
            failure_reason=reason,
            claim=None,
            **ended,
        )

    def artifact_not_emitted(self, run_id: str, reason: str) -> RunRecord | None:
        """The run leaves no finetune artifact, for ``reason``; ``None`` if the run is missing."""
        return self._update(run_id, None, artifact_status=ArtifactStatus.NOT_EMITTED, artifact_reason=reason)

    def artifact_failed(self, run_id: str, reason: str) -> RunRecord | None:
        """Building or saving the run's artifact failed, for ``reason``; ``None`` if the run is missing."""
        return self._update(run_id, None, artifact_status=ArtifactStatus.FAILED, artifact_reason=reason)

    def link_dataset(self, run_id: str, *, dataset_id: str, dataset_name: str) -> RunRecord | None:
        """The run's artifact is saved as the dataset ``dataset_id``."""
        return self._update(
            run_id,
            None,
            dataset_id=dataset_id,
            dataset_name=dataset_name,
            artifact_status=ArtifactStatus.SAVED,
        )


class RunLister(Protocol):
    """Runs newest first, optionally of one environment and/or in one status, a page at a time."""

    def list(
        self,
        *,
        environment_id: str | None = None,
        status: RunStatus | None = None,
        limit: int = 20,
        next_token: str | None = None,
    ) -> Page[RunRecord]: ...
