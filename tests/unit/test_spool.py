"""Records parked in sorted runs come back merged, as if they had been sorted at once."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.finetune import spool
from benchgen.finetune.spool import MergeOrder, SortedSpool

records = st.lists(
    st.tuples(st.integers(0, 2), st.binary(max_size=3), st.binary(max_size=700)), max_size=1500
)


@settings(max_examples=30, deadline=None)
@given(first=records, second=records)
def test_runs_of_two_spools_merge_by_split_key_spool_and_order_added(
    first: list[tuple[int, bytes, bytes]], second: list[tuple[int, bytes, bytes]]
) -> None:
    # given two spools, each holding little enough to write many runs, of records with repeated keys
    with tempfile.TemporaryDirectory() as scratch, pytest.MonkeyPatch.context() as patch:
        patch.setattr(spool, "SPOOL_BYTES", 4096)
        root = Path(scratch)
        runs = []
        for number, added in enumerate((first, second)):
            parked = SortedSpool(root, f"s{number}-")
            for order, (split, key, body) in enumerate(added):
                parked.add(split, key, [body, str(order).encode()])
            runs += [(root / run.name, run) for run in parked.close()]
        ties: list[bytes] = []
        # when they are merged and read back
        merged = MergeOrder(runs, on_tie=lambda key, earlier, later: ties.append(key))
        back = [(position, fields) for position, batch in merged.records() for fields in batch]
    # then every record comes back once, by split, key, spool and the order it was added in
    expected = sorted(
        (
            (split, key, number, order, body)
            for number, added in enumerate((first, second))
            for order, (split, key, body) in enumerate(added)
        ),
        key=lambda item: item[:4],
    )
    assert back == [(split, [body, str(order).encode()]) for split, _, _, order, body in expected]
    # and every key that two runs share is reported where they meet
    shared = {
        (split, key)
        for split, key, number, _, _ in expected
        if any(other != number for s, k, other, _, _ in expected if (s, k) == (split, key))
    }
    assert {key for _, key in shared} <= set(ties)
