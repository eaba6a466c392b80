"""A judged environment's evaluation in the console: the loop's pieces drive the judged example on a local
cloud (its judge the example model server's simulated judge) from a live run of the base model through
training to an authorized evaluation, whose comparison has the judge say which of both models' answers to
each held-out case is better; the Results tab shows that pairwise judging beside the paired comparison."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from cli.api_client import Api
from cli.demo import Progress, register_example
from cli.local import DEMO_USER
from cli.loop import Loop
from cli.simulated_models import SimulatedModels
from infra.stacks.api import EVALUATION_WAIT_SECONDS
from tests.browser.conftest import (
    Page,
    judge_connection,
    judged_example,
    require_current_build,
    served_console,
    write_spec,
)


@dataclass
class Evaluated:
    url: str
    password: str
    owner: Api
    preparation_id: str
    evaluation_id: str


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evaluated]:
    require_current_build()
    out = tmp_path_factory.mktemp("judged-loop")
    progress = Progress()
    # The evaluation checks its runs every second, not every minute (moto's Wait sleeps).
    with served_console({EVALUATION_WAIT_SECONDS: 1}) as served:
        cloud, owner = served.cloud, served.owner
        example, spec = judged_example(out, judge_connection(served))
        # The loop's Bedrock package takes at least 8 training rows: twice the base run's mistakes.
        spec["finetune"]["augmentation"]["factor"] = 2
        write_spec(example, spec)
        loop = Loop(SimulatedModels(), example, out, progress)
        environment_id = register_example(cloud, owner, example, out, progress, timeout=300)
        loop.base_run(cloud, owner, environment_id, served.models.base_url)
        loop.package(cloud, owner, environment_id)
        loop.train(owner)
        loop.evaluate(cloud, owner)
        yield Evaluated(
            url=served.url,
            password=served.password,
            owner=owner,
            preparation_id=loop.found["preparation_id"],
            evaluation_id=loop.found["evaluation_id"],
        )


@pytest.fixture
def tab(browser: Any, evaluated: Evaluated) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield Page(context.new_page(), evaluated)
    context.close()


def _field(region: Any, label: str) -> Any:
    return region.locator("dt", has_text=label).locator("xpath=following-sibling::dd[1]")


def test_the_results_tab_shows_the_evaluations_pairwise_judging_and_its_method(
    tab: Page, evaluated: Evaluated
) -> None:
    report = evaluated.owner.expect("GET", f"/evaluations/{evaluated.evaluation_id}/report", 200)["report"]
    comparison = report["comparison"]
    pairwise = comparison["pairwise"]
    assert pairwise is not None and pairwise["asked_pairs"] > 0
    # the simulated judge prefers the better answer in either order: the trained model wins pairs
    assert pairwise["wins"] > 0 and pairwise["inconsistent"] == 0
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/workspace/{evaluated.preparation_id}/results")
    listed = page.locator(".evaluations .comparison", has_text=evaluated.evaluation_id)
    expect(listed).to_contain_text(f"Method: {comparison['verdict_rule']}")
    section = listed.get_by_role("region", name="Pairwise judging")
    expect(section).to_contain_text(
        f"compared both models' answers to {pairwise['asked_pairs']} held-out cases"
    )
    expect(section).to_contain_text("each pair asked in both orders")
    for label, key in (
        ("Trained model won", "wins"),
        ("Base model won", "losses"),
        ("Ties (inconsistent included)", "ties"),
        ("Inconsistent pairs", "inconsistent"),
        ("Unjudged pairs", "unjudged"),
    ):
        expect(_field(section, label)).to_have_text(str(pairwise[key]))
    expect(_field(section, "Position bias")).to_have_text(pairwise["position_bias"]["finding"])
    # the same-family warning, when the judge is of either model's family, as the API gives it
    warnings = section.get_by_role("list", name="Pairwise warnings").locator("li")
    expect(warnings).to_have_count(len(pairwise["warnings"]))
    assert warnings.all_inner_texts() == pairwise["warnings"]
    assert tab.errors == []
