"""What the live-inference bench concludes from its figures: the goal point within 1.3 times N·L/C, the
server never past its slots, every case answered."""

from __future__ import annotations

from typing import Any

from tests.bench_scripts import bench_script

bench = bench_script("live_inference_bench")


def _measured(**changes: Any) -> Any:
    figures = {
        "cases": 2000,
        "latency_s": 0.2,
        "slots": 32,
        "limit_s": 12.5,
        "inference_s": 15.0,
        "shards_s": 13.8,
        "status": "Completed",
        "answered": 2000,
        "served": 2001,
        "most_in_flight": 32,
        "refused": 0,
        **changes,
    }
    return bench.Measured(**figures)


def test_the_limit_is_n_times_l_over_c() -> None:
    assert bench.Point.parse("2000:0.2:32").limit_s == 12.5


def test_the_goal_point_within_its_ratio_with_the_server_in_bounds_passes() -> None:
    assert bench.verdict([_measured()]) == []


def test_the_goal_point_past_its_ratio_is_a_miss() -> None:
    (miss,) = bench.verdict([_measured(inference_s=17.0)])
    assert miss == "the goal point took x1.36 its limit (at most x1.3)"


def test_a_server_past_its_slots_or_refusing_is_a_miss_at_any_point() -> None:
    other = {"cases": 500, "latency_s": 0.05, "slots": 8, "limit_s": 3.125, "served": 501, "answered": 500}
    misses = bench.verdict(
        [_measured(**other, most_in_flight=9), _measured(**other, most_in_flight=8, refused=3)]
    )
    assert misses == [
        "N=500 L=0.05 C=8: the server saw 9 in flight and refused 0",
        "N=500 L=0.05 C=8: the server saw 8 in flight and refused 3",
    ]


def test_a_case_left_unanswered_is_a_miss() -> None:
    assert bench.verdict([_measured(answered=1999)]) == ["N=2000: 1999 of 2000 cases answered"]
