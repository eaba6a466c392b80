"""A package is built from a stream: memory does not follow the number of rows."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from benchgen.finetune.split import Split
from tests.unit.preparations import example, held, info, package_of, write_preparation

# pydantic-core keeps the short strings (up to 64 characters) it parses in a cache of up to 16,384: ids
# longer than that, and one source question for every row, keep that cache out of the measure.
ZIP_COPY_CHUNK = 1 << 20  # benchgen.zipwrite copies a member file in chunks of this size
LONG_ID = "case-with-an-id-longer-than-the-string-cache-of-the-json-parser-keeps-"


def _peak(folder: Path, rows: int, profile: str) -> int:
    shared = "A shared source question, the same for every row of this measure."
    examples = [
        example(f"{LONG_ID}{n:06d}", Split.TRAIN, source_question=shared, prompt=f"{shared} Row {n}.")
        for n in range(rows)
    ]
    examples += [example(f"h{n:03d}", Split.TEST) for n in range(20)]
    prep = write_preparation(folder / "prep", examples, [held(f"h{n:03d}") for n in range(20)])
    del examples
    tracemalloc.start()
    report = package_of(prep, info(), profile, folder / "out")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert report.files["train.jsonl"]["rows"] == rows
    return peak


def test_building_a_package_streams_the_examples(tmp_path: Path) -> None:
    _peak(tmp_path / "warm", 200, "openai-chat")
    small = _peak(tmp_path / "small", 500, "openai-chat")  # a train file of about 0.2 MB
    large = _peak(tmp_path / "large", 5_000, "openai-chat")  # about 2 MB
    # The zip writer copies files in chunks of up to 1 MiB, so its buffer grows with a file up to that
    # size and no further; the rows themselves (about 2 kB each as parsed examples) must never pile up.
    assert large < small + ZIP_COPY_CHUNK, f"peak {small:,} B at 500 rows, {large:,} B at 5,000 rows"
