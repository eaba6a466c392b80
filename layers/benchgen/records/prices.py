"""What a model's tokens cost, as its connection names the prices, and what a live run's tokens came to.

Prices are in US dollars per million tokens, input and output apart, as providers publish them; batch
inference has its own (Bedrock's and the OpenAI-compatible Batch APIs' are about half the on-demand
ones). A run copies the prices onto itself when it is created, so its cost is the one it ran at.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from benchgen.lazy_model import LazyModel
from benchgen.stored_numbers import Storable
from benchgen.vocabulary import InferenceMode

# Far above any published per-million price (the dearest are a few hundred dollars): a bound that
# catches a price typed per thousand tokens or in cents, not one that judges the provider.
MAX_PRICE_PER_MILLION = 10_000.0
TOKENS_PER_PRICE = 1_000_000
NO_PRICES = "no prices on the connection"


# How a run's tokens were asked, once ``auto`` has chosen: the two ways a provider prices them.
AskedMode = Literal[InferenceMode.ON_DEMAND, InferenceMode.BATCH]


# Strict: a price is a number, never a string or a boolean read as one.
Price = Annotated[float, Field(strict=True, ge=0, le=MAX_PRICE_PER_MILLION, allow_inf_nan=False), Storable]


class TokenPrices(LazyModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_million: Price = Field(description="USD per million input (prompt) tokens")
    output_per_million: Price = Field(description="USD per million output (completion) tokens")


class ModelPrices(LazyModel):
    """What the connection's models cost per token, on demand and (where the provider offers it) in batch."""

    model_config = ConfigDict(extra="forbid")

    currency: Literal["USD"] = "USD"
    on_demand: TokenPrices
    batch: TokenPrices | None = Field(default=None, description="absent: the connection names no batch price")


class RunCost(LazyModel):
    """What a live run's reported tokens cost, at the prices it was created with (which stay with the
    run's owner, as the connection's do)."""

    currency: Literal["USD"] = "USD"
    mode: AskedMode
    input_cost: float
    output_cost: float
    total: float


def run_cost(
    prices: ModelPrices | None, *, input_tokens: int, output_tokens: int, mode: AskedMode
) -> RunCost | str:
    """The cost of ``input_tokens`` and ``output_tokens`` asked in ``mode``, or why there is none."""
    if prices is None:
        return NO_PRICES
    unit = prices.on_demand if mode is InferenceMode.ON_DEMAND else prices.batch
    if unit is None:
        return "no batch prices on the connection (only on-demand ones)"
    input_cost = input_tokens * unit.input_per_million / TOKENS_PER_PRICE
    output_cost = output_tokens * unit.output_per_million / TOKENS_PER_PRICE
    return RunCost(
        mode=mode,
        input_cost=input_cost,
        output_cost=output_cost,
        total=input_cost + output_cost,
    )
