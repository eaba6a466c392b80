"""What a live run's tokens cost at its connection's prices, on demand and in batch."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from benchgen.records.prices import NO_PRICES, ModelPrices, RunCost, TokenPrices, run_cost
from benchgen.vocabulary import InferenceMode

# Amazon Nova Micro's published on-demand and batch prices (USD per million tokens, us-east-1).
NOVA_MICRO = ModelPrices(
    on_demand=TokenPrices(input_per_million=0.035, output_per_million=0.14),
    batch=TokenPrices(input_per_million=0.0175, output_per_million=0.07),
)


def test_an_on_demand_run_costs_its_tokens_at_the_on_demand_prices() -> None:
    # Given 2 million input and half a million output tokens asked on demand
    cost = run_cost(NOVA_MICRO, input_tokens=2_000_000, output_tokens=500_000, mode=InferenceMode.ON_DEMAND)
    # Then each side costs its tokens at its price, and the total is their sum
    assert isinstance(cost, RunCost)
    assert (cost.mode, cost.currency) == (InferenceMode.ON_DEMAND, "USD")
    assert cost.input_cost == pytest.approx(0.07)
    assert cost.output_cost == pytest.approx(0.07)
    assert cost.total == pytest.approx(0.14)


def test_a_batch_run_costs_its_tokens_at_the_batch_prices() -> None:
    cost = run_cost(NOVA_MICRO, input_tokens=2_000_000, output_tokens=500_000, mode=InferenceMode.BATCH)
    assert isinstance(cost, RunCost)
    assert cost.mode is InferenceMode.BATCH
    assert cost.total == pytest.approx(0.07)


def test_a_batch_run_on_a_connection_without_batch_prices_says_so_rather_than_pricing_it_on_demand() -> None:
    on_demand_only = ModelPrices(on_demand=NOVA_MICRO.on_demand)
    assert run_cost(on_demand_only, input_tokens=10, output_tokens=10, mode=InferenceMode.BATCH) == (
        "no batch prices on the connection (only on-demand ones)"
    )


def test_a_run_without_prices_has_no_cost_and_says_why() -> None:
    assert run_cost(None, input_tokens=10, output_tokens=10, mode=InferenceMode.ON_DEMAND) == NO_PRICES
    assert NO_PRICES == "no prices on the connection"


@pytest.mark.parametrize("price", [-0.01, 10_000.01, float("nan"), float("inf")])
def test_a_price_out_of_bounds_is_refused(price: float) -> None:
    with pytest.raises(ValidationError, match="input_per_million"):
        TokenPrices(input_per_million=price, output_per_million=1)
