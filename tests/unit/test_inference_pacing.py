"""How fast a live run asks: the split of max_in_flight between shards and requests, and a shard's pacer
(its window, its pause after throttling, its share of the per-minute quotas)."""

from __future__ import annotations

import math
import threading
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.inference.pacing import ROUNDS_PER_SHARD, Budget, Fanout, Pacer, fanout


@given(
    cases=st.integers(min_value=1, max_value=200_000),
    max_shard_size=st.integers(min_value=1, max_value=1000),
    max_in_flight=st.integers(min_value=1, max_value=1000),
)
def test_a_fanout_never_asks_more_at_once_than_max_in_flight_nor_more_rounds_a_shard_than_its_bound(
    cases: int, max_shard_size: int, max_in_flight: int
) -> None:
    spread = fanout(cases, max_shard_size, max_in_flight)
    shards = math.ceil(cases / spread.shard_size)
    assert spread.in_flight <= max_in_flight
    assert 1 <= spread.shards <= shards
    assert 1 <= spread.shard_size <= max_shard_size
    assert math.ceil(spread.shard_size / spread.per_shard) <= ROUNDS_PER_SHARD
    # and it is never slower than shards of the most cases, asked one at a time with every request
    widest = min(max_in_flight, max_shard_size)
    size = min(max_shard_size, widest * ROUNDS_PER_SHARD, cases)
    one_at_a_time = math.ceil(cases / size) * math.ceil(size / widest)
    rounds = math.ceil(shards / spread.shards) * math.ceil(spread.shard_size / spread.per_shard)
    assert rounds <= one_at_a_time


def test_a_fanout_picks_the_cut_and_split_with_the_fewest_rounds() -> None:
    # 2,000 cases in shards of at most 20 at 32 in flight: 8 shards of 4 take 13 x 5 = 65 rounds; 2 shards
    # of 16 would take 50 x 2 = 100, one shard of 20 100, 32 shards of 1 80
    assert fanout(2000, 20, 32) == Fanout(shards=8, per_shard=4, shard_size=20)
    # in shards of at most 100: 4 shards of 100 with 8 requests each, 5 x 13 = 65 rounds in 20 shards
    assert fanout(2000, 100, 32) == Fanout(shards=4, per_shard=8, shard_size=100)
    # few cases: one shard, all its cases at once
    assert fanout(20, 100, 32) == Fanout(shards=1, per_shard=20, shard_size=20)
    # a bound of one: one request at a time, in shards of 20 cases (20 rounds) whatever the largest
    assert fanout(500, 100, 1) == Fanout(shards=1, per_shard=1, shard_size=20)


def test_a_fanout_refuses_nothing_to_ask() -> None:
    with pytest.raises(ValueError, match="at least one case"):
        fanout(0, 20, 4)


def test_a_pacer_holds_its_threads_to_its_window() -> None:
    pacer = Pacer(Budget(in_flight=3))
    running = most = 0
    lock = threading.Lock()

    def one() -> None:
        nonlocal running, most
        pacer.acquire()
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1
        pacer.answered(None)

    threads = [threading.Thread(target=one) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert most == 3
    assert pacer.most_in_flight == 3


def test_throttling_pauses_the_shard_and_halves_its_window_then_answers_widen_it_again() -> None:
    now = [100.0]
    pacer = Pacer(Budget(in_flight=8), clock=lambda: now[0])
    pacer.acquire()

    # When the provider throttles a request and asks for 2 s
    pacer.throttled(2.0)

    # Then the window halves and the next request waits until the pause is over
    assert pacer.window == 4
    assert pacer.throttles == 1
    waiting = threading.Thread(target=pacer.acquire)
    waiting.start()
    waiting.join(timeout=0.2)
    assert waiting.is_alive()
    now[0] = 102.5
    waiting.join(timeout=3)
    assert not waiting.is_alive()
    # and a window's worth of answers widens it by one
    for _ in range(4):
        pacer.answered(10)
        pacer.acquire()
    assert pacer.window == 5


def test_a_requests_per_minute_share_spaces_the_requests_out() -> None:
    # 600 requests a minute: one every 0.1 s
    pacer = Pacer(Budget(in_flight=10, requests_per_minute=600))
    started = time.monotonic()
    for _ in range(5):
        pacer.acquire()
        pacer.answered(None)
    assert time.monotonic() - started >= 0.39


def test_a_tokens_per_minute_share_waits_for_spent_tokens_to_come_back() -> None:
    now = [0.0]
    # 6,000 tokens a minute: 100 a second
    pacer = Pacer(Budget(in_flight=4, tokens_per_minute=6000), clock=lambda: now[0])
    pacer.acquire()
    pacer.answered(6100)  # 100 tokens over the minute's budget
    waiting = threading.Thread(target=pacer.acquire)
    waiting.start()
    waiting.join(timeout=0.2)
    assert waiting.is_alive()
    now[0] = 1.1  # 110 tokens came back
    waiting.join(timeout=3)
    assert not waiting.is_alive()
