"""Batch inference as every provider kind that offers it shares it: limits per job, the few states a job
ends in, record ids, and what one output record says.

A kind with a batch API names a :class:`BatchApi` as its definition's ``batch``; its requests and its
output readers are pure and live beside the kind (``bedrock_batch.py``, ``openai_batch.py``); its adapter
makes the calls. A run's cases go to jobs in the run's case order, each record named by its index in that
order (:func:`record_id`), so the answers are matched back to the cases without a table of ids.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from benchgen.errors import BenchGenError
from benchgen.inference.model import Answer
from benchgen.vocabulary import Sampling

# Bedrock documents a record id as an 11-character alphanumeric string: "R" and ten digits serve both.
_RECORD_ID = re.compile(r"R(\d{10})")


def record_id(index: int) -> str:
    """The record id of the run's ``index``-th case (from 0)."""
    return f"R{index:010d}"


def record_index(text: Any) -> int | None:
    """The case index a record id names; None for anything else."""
    match = _RECORD_ID.fullmatch(text) if isinstance(text, str) else None
    return int(match[1]) if match else None


@dataclass(frozen=True)
class BatchLimits:
    """What one job of a kind's batch API may hold, as the provider documents it."""

    min_records: int
    max_records: int
    max_bytes: int


class BatchStatus(StrEnum):
    RUNNING = "running"
    ENDED = "ended"  # its output is there (completed, or partially completed)
    FAILED = "failed"  # failed, stopped, expired or cancelled: no output to read


@dataclass(frozen=True)
class BatchState:
    """What one look at a job saw: the provider's word for it, ours, and its counts where it says them."""

    provider_status: str
    status: BatchStatus
    succeeded: int | None = None
    failed: int | None = None
    message: str | None = None
    output_file: str | None = None  # where the kind hands its output out through its own API
    error_file: str | None = None


@dataclass(frozen=True)
class RecordResult:
    """One output record: the case index it answers, and its answer or the provider's reason for none."""

    index: int
    answer: Answer | None
    error: str | None


class BatchRefused(BenchGenError):
    """A run that cannot go to a provider's batch inference; the message says why and what would serve."""


class BatchAnswerError(BenchGenError):
    """A provider's answer about a job that cannot be true (a count out of bounds, a field of the wrong
    type); the message names the provider, the field and what is wrong with its value."""


def job_count(value: Any, *, title: str, field: str, records: int) -> int | None:
    """A record count a provider reports for a job of ``records`` records: a whole number from 0 to
    ``records``, or None where it says none. Anything else raises :class:`BatchAnswerError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BatchAnswerError(f"{title} answered {field} {_shown(value)}, which is not a whole number")
    if not 0 <= value <= records:
        raise BatchAnswerError(
            f"{title} answered {field} {_shown(value)}, outside 0 to the {records} records the job holds"
        )
    return value


# No model's context comes near a hundred million tokens: a count above it counts nothing real.
MAX_RECORD_TOKENS = 100_000_000


def answered(index: int, title: str, answer: Answer) -> RecordResult:
    """The record's answer, or its failure when a token count it reports is beyond any model's."""
    for what, tokens in (("input", answer.input_tokens), ("output", answer.output_tokens)):
        if tokens is not None and tokens > MAX_RECORD_TOKENS:
            return RecordResult(
                index,
                None,
                f"{title} counted {_shown(tokens)} {what} tokens for this record, more than the "
                f"{MAX_RECORD_TOKENS} any model takes: its answer is not trusted",
            )
    return RecordResult(index, answer, None)


def _shown(value: Any) -> str:
    """A provider's value as a message quotes it, short: a huge number by its size alone."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        return f"{'-' if value < 0 else ''}<a number of more than 20 digits>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class BatchJobSpec:
    """One job as its adapter sends it: a fixed name (a retried submit finds the job it made), the
    model, where its records are and where its output goes."""

    name: str
    model_id: str
    records: int
    input_key: str
    input_uri: str
    output_uri: str
    role_arn: str | None = None


class BatchApi(ABC):
    """One kind's batch inference."""

    #: as a sentence names it ("Bedrock batch inference")
    title: str
    limits: BatchLimits
    #: its documented job statuses, lowercase, as ours
    statuses: Mapping[str, BatchStatus]
    #: the output files its jobs leave in the output folder (the kind's own, or the copies made of them)
    output_files: tuple[str, ...]
    #: the field of an input and output record that holds its record id
    record_id_field: str
    #: how a sentence says that a job ended without output ("with neither an output file nor ...")
    no_output: str

    def status(self, provider_status: str) -> BatchStatus:
        """Ours for one of its statuses; one it did not document counts as still running."""
        return self.statuses.get(provider_status.strip().lower(), BatchStatus.RUNNING)

    def output_folder(self, job_id: str) -> str:
        """The folder under the job's output URI that its output lands in."""
        return job_id

    @abstractmethod
    def record(self, index: int, model_id: str, prompt: str, sampling: Sampling) -> dict[str, Any]:
        """One input record asking ``prompt`` of ``model_id``."""

    @abstractmethod
    def results(self, line: dict[str, Any]) -> Iterator[RecordResult]:
        """What one output line says (nothing for a line that names no record of ours)."""


def job_size(cases: int, limits: BatchLimits) -> int:
    """How many records each job takes at most: ``cases`` spread evenly over as few jobs as
    ``max_records`` allows, so that the last job is never left with a handful."""
    if cases < limits.min_records:
        raise BatchRefused(
            f"{cases} cases is fewer than the {limits.min_records} records a batch job needs at least"
        )
    jobs = -(-cases // limits.max_records)
    return -(-cases // jobs)


class JobCutter:
    """Cuts a stream of records into jobs of at most ``size`` records and ``limits.max_bytes`` bytes."""

    def __init__(self, size: int, limits: BatchLimits) -> None:
        self._size = size
        self._limits = limits
        self.jobs: list[tuple[int, int]] = []  # (first record, records) of every job cut so far
        self._records = 0
        self._bytes = 0

    def starts_job(self, index: int, record_bytes: int) -> bool:
        """Whether the record ``index`` of ``record_bytes`` bytes begins a new job (the first one does)."""
        if record_bytes > self._limits.max_bytes:
            raise BatchRefused(
                f"case {index + 1} is {record_bytes} bytes as a record, more than the "
                f"{self._limits.max_bytes} bytes a batch job may hold"
            )
        new = (
            not self.jobs
            or self._records >= self._size
            or self._bytes + record_bytes > self._limits.max_bytes
        )
        if new:
            self.jobs.append((index, 0))
            self._records = self._bytes = 0
        first, records = self.jobs[-1]
        self.jobs[-1] = (first, records + 1)
        self._records += 1
        self._bytes += record_bytes
        return new

    def check(self) -> None:
        """Refuse a cut that left a job with fewer records than a job needs (records too large to fit
        ``max_bytes`` in whole jobs)."""
        small = [records for _, records in self.jobs if records < self._limits.min_records]
        if small:
            raise BatchRefused(
                f"cut to fit {self._limits.max_bytes} bytes a batch job, one job would hold {small[0]} "
                f"records, fewer than the {self._limits.min_records} a job needs at least"
            )
