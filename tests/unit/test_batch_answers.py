"""What a provider's batch job answer may hold in its numeric fields, as each kind reads it: a count within
the job, or a failure that names the provider, the field and what is wrong; never anything else."""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.providers import bedrock_batch, openai_batch
from benchgen.providers.batch import BatchAnswerError
from benchgen.steps.batch_inference import MAX_RECORD_BYTES, _output_lines

RECORDS = 40

# What a hostile or broken provider puts where a number belongs.
HOSTILE = st.one_of(
    st.integers(min_value=-(10**50), max_value=10**50),
    st.just(10**42),
    st.just(-1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(math.nan),
    st.booleans(),
    st.text(max_size=30),
    st.none(),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
# The timestamps each kind's answer carries: read by neither, so no value of theirs may change a look.
OPENAI_TIMES = ("created_at", "in_progress_at", "finalizing_at", "completed_at", "expires_at", "failed_at")
BEDROCK_TIMES = ("submitTime", "lastModifiedTime", "endTime", "jobExpirationTime")


def _held(value: Any, read: int | None) -> None:
    """``read`` is the value itself when that is a count within the job, and None only where it was none."""
    if value is None:
        assert read is None
    else:
        assert read == value and isinstance(value, int) and not isinstance(value, bool)
        assert 0 <= value <= RECORDS


@given(completed=HOSTILE, failed=HOSTILE, total=HOSTILE, when=HOSTILE)
def test_an_openai_batch_count_is_read_within_the_batch_or_refused_naming_the_field(
    completed: Any, failed: Any, total: Any, when: Any
) -> None:
    # Given a completed batch's answer whose numbers may be anything JSON can say
    answer = {
        "status": "completed",
        "output_file_id": "file-out",
        "request_counts": {"total": total, "completed": completed, "failed": failed},
        **dict.fromkeys(OPENAI_TIMES, when),
    }

    # When it is read for a batch of 40 requests
    try:
        _, _, details = openai_batch.batch_state(answer, RECORDS)
    except BatchAnswerError as refused:
        # Then either it is refused, naming the provider and the count that cannot be
        message = str(refused)
        assert message.startswith("the OpenAI-compatible Batch API answered request_counts.")
        assert "not a whole number" in message or f"outside 0 to the {RECORDS} records" in message
        assert len(message) < 250
        return
    # or both counts were counts of this batch, read as they were
    _held(completed, details["succeeded"])
    _held(failed, details["failed"])


@given(success=HOSTILE, errors=HOSTILE, when=HOSTILE)
def test_a_bedrock_job_count_is_read_within_the_job_or_refused_naming_the_field(
    success: Any, errors: Any, when: Any
) -> None:
    # Given a GetModelInvocationJob answer whose numbers may be anything
    answer = {
        "status": "Completed",
        "successRecordCount": success,
        "errorRecordCount": errors,
        **dict.fromkeys(BEDROCK_TIMES, when),
    }

    # When it is read for a job of 40 records
    try:
        state = bedrock_batch.job_state(answer, RECORDS)
    except BatchAnswerError as refused:
        # Then either it is refused, naming the provider and the count
        message = str(refused)
        assert message.startswith("Bedrock batch inference answered ")
        assert "successRecordCount" in message or "errorRecordCount" in message
        assert len(message) < 250
        return
    _held(success, state.succeeded)
    _held(errors, state.failed)


@pytest.mark.parametrize(
    ("count", "problem"),
    [
        (10**42, "<a number of more than 20 digits>, outside 0 to the 40 records the job holds"),
        (-3, "-3, outside 0 to the 40 records the job holds"),
        (41, "41, outside 0 to the 40 records the job holds"),
        ("40", "'40', which is not a whole number"),
        (True, "True, which is not a whole number"),
        (math.nan, "nan, which is not a whole number"),
    ],
)
def test_a_count_out_of_bounds_is_refused_saying_what_is_wrong_with_it(count: Any, problem: str) -> None:
    # Given a batch answer counting its completed requests as `count`
    answer = {"status": "completed", "request_counts": {"completed": count, "failed": 0}}

    # When it is read for a batch of 40 requests, Then the refusal says the field and the value's problem
    with pytest.raises(BatchAnswerError, match=rf"answered request_counts\.completed {problem}"):
        openai_batch.batch_state(answer, RECORDS)


@pytest.mark.parametrize("file_id", [42, {"id": "file-1"}, ["file-1"], "f" * 300])
def test_a_file_id_that_is_not_one_is_refused_naming_the_field(file_id: Any) -> None:
    # Given a completed batch naming its output file by something that is not a file id
    answer = {"status": "completed", "output_file_id": file_id}

    # When it is read, Then it is refused, naming the field
    with pytest.raises(BatchAnswerError, match=r"answered output_file_id .* which is not a file id"):
        openai_batch.batch_state(answer, RECORDS)


def test_an_output_line_far_over_the_record_bound_is_read_holding_about_the_bound_in_memory() -> None:
    # Given an output file, streamed in chunks of 1 MiB, whose first line is 64 MiB, then a short line
    chunk = 2**20

    def chunks() -> Iterator[bytes]:
        for _ in range(64):
            yield b"x" * chunk
        yield b'\n{"custom_id": "R0000000001"}\n'

    # When its lines are read
    tracemalloc.start()
    try:
        lines = [(len(line), length) for line, length in _output_lines(chunks(), MAX_RECORD_BYTES)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # Then the long line is kept to its first 8 MiB with its whole length told, the next line read whole,
    # and no more than the bound and the chunks in hand were ever held
    assert lines == [(MAX_RECORD_BYTES, 64 * chunk), (28, 28)]
    assert peak < MAX_RECORD_BYTES + 3 * chunk
