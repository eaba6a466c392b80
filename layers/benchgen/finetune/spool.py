"""Examples parked on disk as sorted runs, and read back merged, so memory stays flat as cases grow.

An example is parked as a key (its id, UTF-8) and a list of byte strings (its JSON pieces). Up to a budget
of bytes is held and sorted in memory per split, then written out as one run file (train, then validation,
then test, each by key, ties in the order added). Reading back merges any number of runs by (split, key,
run), so the runs of one build, or of several builds taken in order, come out as if every example had been
sorted at once. Key order is byte order, which is also SQLite's and code point order.

A run file holds its records' keys, then their fields, in the same order: each key after two little-endian
uint32 (its length, the length of its fields), each record's fields as a msgpack array. Merging reads only
the keys; the fields of consecutive records of one run are then one stretch of bytes, which a msgpack array
header turns into one array of records, decoded in one call.
"""

from __future__ import annotations

import heapq
import struct
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO

import msgspec

from benchgen.finetune.split import SPLITS

HEADER = struct.Struct("<II")
_PACK = msgspec.msgpack.Encoder().encode
_UNPACK_MANY = msgspec.msgpack.Decoder(list[list[bytes]]).decode
# Bytes of records held in memory before they are sorted and written out as a run: the build's memory
# bound, whatever the number of cases (a run costs one open file when merging).
SPOOL_BYTES = 48 << 20
# Records handed on at a time when reading back: enough to keep per-call costs small, few enough that a
# batch (and the chunk joined from it) stays far below the spool's budget.
BATCH_RECORDS = 512
_ENTRY_OVERHEAD = 120  # a held record's Python objects beyond its bytes: tuple, bytes header, list slot


class Run(msgspec.Struct, frozen=True):
    """A run file, by its name in its folder, how many records of each split it holds, and where in it the
    fields of its first record start."""

    name: str
    counts: list[int]
    fields_at: int


class SortedSpool:
    """Collects records and writes them as sorted runs named ``<prefix>NNNN.run`` in ``folder``."""

    def __init__(self, folder: Path, prefix: str) -> None:
        self._folder = folder
        self._prefix = prefix
        self._budget = SPOOL_BYTES
        self._held: list[list[tuple[bytes, bytes]]] = [[] for _ in SPLITS]
        self._bytes = 0
        self.runs: list[Run] = []

    def add(self, split: int, key: bytes, fields: Sequence[bytes]) -> None:
        """Park a record in split number ``split`` (its position in ``SPLITS``)."""
        self.add_all(split, ((key, fields),))

    def add_all(self, split: int, records: Iterable[tuple[bytes, Sequence[bytes]]]) -> None:
        """Park ``(key, fields)`` records, in order, in split number ``split``."""
        held, pack, header = self._held[split], _PACK, HEADER.pack
        for key, fields in records:
            packed = pack(fields)
            # Held as one object with its header and key: holding msgspec's output itself took 14 MB more
            # at 100,000 cases.
            record = header(len(key), len(packed)) + key + packed
            held.append((key, record))
            self._bytes += len(record) + _ENTRY_OVERHEAD
            if self._bytes >= self._budget:
                self._spill()

    def close(self) -> list[Run]:
        """Write what is still held; every run, in the order written."""
        self._spill()
        return self.runs

    def _spill(self) -> None:
        if not self._bytes:
            return
        keys_size = 0
        for held in self._held:
            held.sort(key=itemgetter(0))  # stable: equal keys keep the order they were added in
            keys_size += sum(HEADER.size + len(key) for key, _ in held)
        run = Run(
            name=f"{self._prefix}{len(self.runs):04d}.run",
            counts=[len(held) for held in self._held],
            fields_at=keys_size,
        )
        with (self._folder / run.name).open("wb") as sink:
            for held in self._held:
                sink.writelines(memoryview(record)[: HEADER.size + len(key)] for key, record in held)
            for held in self._held:
                sink.writelines(memoryview(record)[HEADER.size + len(key) :] for key, record in held)
                held.clear()
        self.runs.append(run)
        self._bytes = 0


Stretches = tuple["array[int]", "array[int]", "array[int]"]  # run, records, bytes of each stretch


def _stretches(merged: Iterator[tuple[bytes, int, int]], on_tie: Tie | None) -> Stretches:
    """Consecutive records of one run, at most ``BATCH_RECORDS`` a stretch, so one read fetches each."""
    tags, lengths, sizes = array("H"), array("I"), array("Q")
    previous_key, previous_tag = None, -1
    for key, tag, size in merged:
        if tag == previous_tag and lengths[-1] < BATCH_RECORDS:
            lengths[-1] += 1
            sizes[-1] += size
        else:
            if key == previous_key and tag != previous_tag and on_tie is not None:
                on_tie(key, previous_tag, tag)
            tags.append(tag)
            lengths.append(1)
            sizes.append(size)
        previous_key, previous_tag = key, tag
    return tags, lengths, sizes


def _keys(source: BinaryIO, count: int, tag: int) -> Iterator[tuple[bytes, int, int]]:
    """Each record's key, with its run and the size of its fields."""
    read, unpack = source.read, HEADER.unpack
    for _ in range(count):
        key_size, size = unpack(read(HEADER.size))
        yield read(key_size), tag, size


def _array_header(length: int) -> bytes:
    """The msgpack header of an array of ``length`` items: a stretch holds at most ``BATCH_RECORDS``,
    fewer than the 65,536 of msgpack's array 16."""
    return bytes((0x90 | length,)) if length < 16 else b"\xdc" + length.to_bytes(2, "big")


Tie = Callable[[bytes, int, int], None]


class MergeOrder:
    """Which run each merged record comes from, per split, as (run, how many in a row) stretches.

    ``on_tie(key, earlier run, later run)`` is called where records of two runs share a key.
    """

    def __init__(self, runs: Sequence[tuple[Path, Run]], *, on_tie: Tie | None = None) -> None:
        self.runs = runs
        self.stretches: list[Stretches] = []
        handles = [path.open("rb") for path, _ in runs]
        try:
            for position in range(len(SPLITS)):
                keys = [
                    _keys(handle, run.counts[position], tag)
                    for tag, (handle, (_, run)) in enumerate(zip(handles, runs, strict=True))
                ]
                self.stretches.append(_stretches(heapq.merge(*keys), on_tie))
        finally:
            for handle in handles:
                handle.close()

    def records(self) -> Iterator[tuple[int, list[list[bytes]]]]:
        """The fields of every record in merged order, in batches, with the split position of each batch."""
        handles = [path.open("rb") for path, _ in self.runs]
        try:
            for handle, (_, run) in zip(handles, self.runs, strict=True):
                handle.seek(run.fields_at)
            for position, (tags, lengths, sizes) in enumerate(self.stretches):
                batch: list[list[bytes]] = []
                for tag, length, size in zip(tags, lengths, sizes, strict=True):
                    batch += _UNPACK_MANY(_array_header(length) + handles[tag].read(size))
                    if len(batch) >= BATCH_RECORDS:
                        yield position, batch
                        batch = []
                if batch:
                    yield position, batch
        finally:
            for handle in handles:
                handle.close()
