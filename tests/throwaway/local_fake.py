"""The throwaway kind's local fake: what ``localcloud/providers/throwaway.py`` would hold."""

from __future__ import annotations

from localcloud.patches import Patch
from localcloud.provider_clock import ProviderClock

INSTALLED: list[ProviderClock] = []


def patches(clock: ProviderClock) -> list[Patch]:
    """Nothing in moto stands for it; it notes that it was asked, for a test to see."""
    INSTALLED.append(clock)
    return []
