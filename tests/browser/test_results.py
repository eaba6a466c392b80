"""The workspace's Results tab over a training run that ran: the loop's pieces drive the local cloud up to a
Succeeded training run, and the browser takes the deliberate step of authorizing its evaluation."""

from __future__ import annotations

import re
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from playwright.sync_api import expect

from benchgen.aws.tables.runs import RunsRepo
from benchgen.settings import EVALUATORS_GROUP
from cli.api_client import Api
from cli.demo import ENVIRONMENT_VERSION, EXAMPLES, Progress, register_example
from cli.local import DEMO_USER
from cli.loop import Loop
from cli.simulated_models import SimulatedModels
from infra.stacks.api import EVALUATION_WAIT_SECONDS
from localcloud.cloud import LocalCloud
from localcloud.model_server import BASE_MODEL, TUNED_MODEL
from tests.browser.conftest import STRANGER, Page, require_current_build, served_console

EVALUATION_TIMEOUT_MS = 240_000


@dataclass
class Trained:
    url: str
    password: str
    cloud: LocalCloud
    owner: Api
    preparation_id: str
    training_run_id: str
    base_run_id: str
    models_connection_id: str
    environment_id: str


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trained]:
    require_current_build()
    out = tmp_path_factory.mktemp("loop")
    progress = Progress()
    # A synthesis of its own, as the loop's: the local training context polls the provider job every
    # second, and the evaluation checks its runs every second, not every minute (moto's Wait sleeps).
    with served_console({EVALUATION_WAIT_SECONDS: 1}) as served:
        cloud, owner = served.cloud, served.owner
        # The loop up to its training run; the evaluation is what the browser asks for.
        loop = Loop(SimulatedModels(), EXAMPLES / "gsm8k-tr", out, progress)
        environment_id = register_example(cloud, owner, loop.example, out, progress)
        loop.base_run(cloud, owner, environment_id, served.models.base_url)
        loop.package(cloud, owner, environment_id)
        loop.train(owner)
        yield Trained(
            url=served.url,
            password=served.password,
            cloud=cloud,
            owner=owner,
            preparation_id=loop.found["preparation_id"],
            training_run_id=loop.found["training_run_id"],
            base_run_id=loop.found["base_run_id"],
            models_connection_id=loop.found["connection_id"],
            environment_id=environment_id,
        )


@pytest.fixture
def results_tab(browser: Any, trained: Trained) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield Page(context.new_page(), trained)
    context.close()


def _open_results(tab: Page, trained: Trained, user: str) -> Any:
    tab.sign_in(user)
    return tab.open(f"/workspace/{trained.preparation_id}/results")


def test_the_results_tab_shows_the_training_run_with_its_job_status_and_authorize_only_to_an_evaluator(
    results_tab: Page, trained: Trained, browser: Any
) -> None:
    # Given the training run as the API shows it to its owner
    run = trained.owner.expect("GET", f"/training-runs/{trained.training_run_id}", 200)
    assert run["status"] == "Succeeded" and run["job_id"]

    # When its owner, an evaluator, opens the workspace's Results tab
    page = _open_results(results_tab, trained, DEMO_USER)

    # Then the training run shows with the provider job's status, its job and the model it made
    item = page.get_by_role("listitem").filter(has_text=trained.training_run_id)
    expect(item).to_contain_text("Succeeded")
    expect(item).to_contain_text(f"job {run['job_id']}")
    expect(item).to_contain_text(f"trained model {run['result_model']}")
    expect(item.get_by_role("button", name="Authorize evaluation")).to_be_visible()
    assert results_tab.errors == []

    # and the owner, once out of the evaluators group, sees the run but no Authorize button
    pool = trained.cloud.client("cognito-idp")
    membership = {
        "UserPoolId": trained.cloud.user_pool_id,
        "Username": DEMO_USER,
        "GroupName": EVALUATORS_GROUP,
    }
    pool.admin_remove_user_from_group(**membership)
    outsider = Page(browser.new_context().new_page(), trained)
    try:
        page = _open_results(outsider, trained, DEMO_USER)
        item = page.get_by_role("listitem").filter(has_text=trained.training_run_id)
        expect(item).to_contain_text("Succeeded")
        expect(page.get_by_role("button", name="Authorize evaluation")).to_have_count(0)
    finally:
        pool.admin_add_user_to_group(**membership)
        outsider.page.context.close()

    # and another user sees neither the run nor the button
    stranger = Page(browser.new_context().new_page(), trained)
    try:
        stranger.sign_in(STRANGER)
        page = stranger.open("/workspace/" + trained.preparation_id + "/results")
        expect(page.get_by_role("alert")).to_have_text("only the preparation's owner can read it")
        expect(page.get_by_text(trained.training_run_id)).to_have_count(0)
        expect(page.get_by_role("button", name="Authorize evaluation")).to_have_count(0)
    finally:
        stranger.page.context.close()


def _shown(value: float | None) -> str:
    """A number as the console writes it: four decimals at most, trailing zeros dropped; a dash for none."""
    if value is None:
        return "—"
    return str(int(value)) if float(value).is_integer() else f"{value:.4f}".rstrip("0")


def test_authorizing_from_the_results_tab_shows_the_evaluation_and_its_paired_comparison_report(
    results_tab: Page, trained: Trained
) -> None:
    # Given the owner on the Results tab
    page = _open_results(results_tab, trained, DEMO_USER)
    form = page.get_by_role("form", name=f"Evaluate {trained.training_run_id}")

    # When they authorize an evaluation of the simulated tuned model against the base run of the loop
    form.get_by_label("Trained model's connection").select_option(trained.models_connection_id)
    form.get_by_label("Trained model id").fill(TUNED_MODEL)
    form.get_by_label("Base run to reuse").fill(trained.base_run_id)
    form.get_by_role("button", name="Authorize evaluation").click()

    # Then the evaluation runs to Completed and the page shows what the API reports for it
    report_link = page.get_by_role("link", name=re.compile("^Download the report of eval-"))
    expect(report_link).to_be_visible(timeout=EVALUATION_TIMEOUT_MS)
    comparison = page.locator(".comparison")
    found = re.search(r"Evaluation (eval-[0-9a-f]+)", comparison.inner_text())
    assert found, comparison.inner_text()
    evaluation = trained.owner.expect("GET", f"/evaluations/{found.group(1)}", 200)
    report = trained.owner.expect("GET", f"/evaluations/{found.group(1)}/report", 200)["report"]
    assert evaluation["status"] == "Completed"
    assert evaluation["base"]["run_id"] == trained.base_run_id
    expect(comparison).to_contain_text("Completed")
    expect(comparison).to_contain_text(f"on {evaluation['paired_cases']} paired cases")
    expect(comparison).to_contain_text(f"verdict {evaluation['verdict']}: {evaluation['verdict_reason']}")
    c = report["comparison"]
    expect(comparison).to_contain_text(f"Fixed {c['fixed_count']}, broken {c['broken_count']}")
    # and the answer rate and the accuracy among answered, before and after, as the report gives them
    before, after = c["answering_before"], c["answering_after"]
    expect(comparison).to_contain_text(
        f"Answer rate {_shown(before['answer_rate'])} → {_shown(after['answer_rate'])}; accuracy among "
        f"answered {_shown(before['accuracy_among_answered'])} → {_shown(after['accuracy_among_answered'])}"
    )
    # and the report is shown in place, with Download beside it giving the same page as a file
    shown = page.frame_locator("iframe.report").locator("body")
    expect(shown).to_contain_text("Training completion alone does not establish benchmark improvement")
    with urllib.request.urlopen(report_link.get_attribute("href")) as answer:
        assert answer.status == 200 and b"<html" in answer.read().lower()
        assert "attachment" in answer.headers.get("Content-Disposition", "")

    # and, without a reload, the evaluation is listed under its training run with its report
    listed = page.locator(".evaluations .comparison")
    expect(listed).to_contain_text(f"Evaluation {found.group(1)}")
    expect(listed).to_contain_text(f"verdict {evaluation['verdict']}")
    expect(listed).to_contain_text(f"Fixed {c['fixed_count']}, broken {c['broken_count']}")
    expect(listed.get_by_role("link", name=f"Download the report of {found.group(1)}")).to_be_visible()
    expect(listed.locator("iframe.report")).to_have_count(1)
    assert results_tab.errors == []


def test_a_run_started_from_a_version_with_a_live_model_is_followed_to_completed(
    results_tab: Page, trained: Trained
) -> None:
    # Given the registered version's Start a run page, opened from the Environments page
    results_tab.sign_in(DEMO_USER)
    page = results_tab.open("/environments")
    page.get_by_role("link", name=f"Start a run of {trained.environment_id} {ENVIRONMENT_VERSION}").click()
    form = page.get_by_role("form", name="Start a run")
    # When a live model is chosen through the user's connection, with its sampling and limits
    form.get_by_label("A live model through one of your connections").check()
    form.get_by_label("Model name").fill("example base, asked live")
    form.get_by_label("Connection", exact=True).select_option(trained.models_connection_id)
    form.get_by_label("Model id").fill(BASE_MODEL)
    form.get_by_label("Temperature").fill("0")
    form.get_by_label("Max tokens").fill("64")
    form.get_by_label("Requests at once").fill("2")
    form.get_by_role("button", name="Start run").click()

    # Then the run's page follows it to Completed
    page.wait_for_url(re.compile(r".*#/runs/[0-9a-f]{32}$"))
    run_id = page.url.rsplit("/", 1)[1]
    sidebar = page.get_by_role("complementary", name="Run details")
    expect(sidebar.locator(".status")).to_have_text("Completed", timeout=EVALUATION_TIMEOUT_MS)
    # and the run is the live one the form described, its sampling and limits its owner's configuration
    run = trained.owner.expect("GET", f"/runs/{run_id}", 200)
    assert run["status"] == "Completed" and run["model"] == "example base, asked live"
    live = run["live_model"]
    assert (live["connection_id"], live["model_id"]) == (trained.models_connection_id, BASE_MODEL)
    config = trained.owner.expect("GET", f"/runs/{run_id}/config", 200)
    assert config["sampling"] == {"temperature": 0, "max_tokens": 64}
    stored = RunsRepo(trained.cloud.environment["RUNS_TABLE"]).get(run_id)
    assert stored is not None and stored.live_model is not None
    assert stored.live_model.limits.max_in_flight == 2
    assert results_tab.errors == []


def test_a_live_run_the_api_refuses_shows_its_sentence(results_tab: Page, trained: Trained) -> None:
    # Given the Start a run page with a live model whose temperature is out of the API's range
    results_tab.sign_in(DEMO_USER)
    page = results_tab.open(f"/environments/{trained.environment_id}/{ENVIRONMENT_VERSION}/run")
    form = page.get_by_role("form", name="Start a run")
    form.get_by_label("A live model through one of your connections").check()
    form.get_by_label("Model name").fill("too hot")
    form.get_by_label("Model id").fill(BASE_MODEL)
    form.get_by_label("Temperature").fill("5")
    before = trained.owner.expect("GET", "/runs?limit=100", 200)["items"]
    # When Start run is pressed (the browser's own range check is not what refuses it)
    form.evaluate("form => { form.noValidate = true; }")
    form.get_by_role("button", name="Start run").click()
    # Then the API's reason is shown under the field's label, and no run was created
    alert = page.locator("#run-outcome [role=alert]")
    expect(alert.locator("li strong")).to_have_text(["Temperature"])
    assert trained.owner.expect("GET", "/runs?limit=100", 200)["items"] == before
    # the browser reports the refused request itself, and nothing else went wrong
    assert [error for error in results_tab.errors if "422 (Unprocessable Entity)" not in error] == []


EVALUATIONS_PER_PAGE = 5  # the Results tab's page of a training run's evaluations


def test_a_training_runs_evaluations_page_past_the_first_page(results_tab: Page, trained: Trained) -> None:
    # Given more evaluations of the training run than a page holds, authorized through the API and ended
    listed = f"/training-runs/{trained.training_run_id}/evaluations?limit=100"
    existing = len(trained.owner.expect("GET", listed, 200)["items"])
    for _ in range(max(0, EVALUATIONS_PER_PAGE + 1 - existing)):
        trained.owner.expect(
            "POST",
            f"/training-runs/{trained.training_run_id}/evaluations",
            202,
            {
                "tuned": {"connection_id": trained.models_connection_id, "model_id": TUNED_MODEL},
                "base_run_id": trained.base_run_id,
            },
        )
    deadline = time.monotonic() + EVALUATION_TIMEOUT_MS / 1000
    while any(e["status"] == "Running" for e in trained.owner.expect("GET", listed, 200)["items"]):
        assert time.monotonic() < deadline, "the evaluations did not end"
        time.sleep(2)
    evaluations = [e["evaluation_id"] for e in trained.owner.expect("GET", listed, 200)["items"]]
    assert len(evaluations) > EVALUATIONS_PER_PAGE

    # When the Results tab shows them
    page = _open_results(results_tab, trained, DEMO_USER)
    pages = page.get_by_role("navigation", name="Pages of evaluations")
    summaries = page.locator(".evaluations > div > p:first-child")

    # Then the first page shows the newest five and says there are more
    expect(pages.locator(".count")).to_have_text("Evaluations 1–5, more on the next page")
    expect(summaries).to_have_count(EVALUATIONS_PER_PAGE)
    for summary, evaluation_id in zip(summaries.all(), evaluations, strict=False):
        expect(summary).to_contain_text(f"Evaluation {evaluation_id}:")
    # and the next page goes on from the sixth, as the API lists them
    pages.get_by_role("button", name="Next page").click()
    expect(pages.locator(".count")).to_contain_text("Evaluations 6–")
    expect(summaries.first).to_contain_text(f"Evaluation {evaluations[EVALUATIONS_PER_PAGE]}:")
    # and `evaluations=N` in the address sets the page's size
    page = results_tab.open(f"/workspace/{trained.preparation_id}/results?evaluations=1")
    expect(pages.locator(".count")).to_have_text("Evaluations 1–1, more on the next page")
    expect(summaries).to_have_count(1)
    expect(summaries.first).to_contain_text(f"Evaluation {evaluations[0]}:")
    assert results_tab.errors == []


@pytest.mark.parametrize("width", [390, 1440])
def test_the_start_a_run_page_fits_the_window_and_has_no_serious_accessibility_violation(
    browser: Any, trained: Trained, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        tab = Page(context.new_page(), trained)
        tab.sign_in(DEMO_USER)
        page = tab.open(f"/environments/{trained.environment_id}/{ENVIRONMENT_VERSION}/run")
        page.get_by_label("A live model through one of your connections").check()
        page.get_by_label("Model id").wait_for()
        assert page.evaluate("() => document.documentElement.scrollWidth") == width
        assert tab.axe_violations() == []
        page = tab.open(f"/workspace/{trained.preparation_id}/results?evaluations=1")
        page.get_by_role("navigation", name="Pages of evaluations").wait_for()
        assert page.evaluate("() => document.documentElement.scrollWidth") == width
        assert tab.axe_violations() == []
    finally:
        context.close()
