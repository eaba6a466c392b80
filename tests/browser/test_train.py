"""Train launches training: a dataset, its base model overridden, a connection, a package, hyperparameters
beside the author's suggestions, Launch; then the training run's page follows it to its end, or cancels it.

The local cloud polls training jobs every second here (its own synthesis), and moto's Bedrock jobs run for
a few reads before they end (localcloud/provider_clock.py)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from moto.moto_api._internal.models import moto_api_backend
from playwright.sync_api import expect

from benchgen.settings import EVALUATORS_GROUP
from cli.api_client import Api
from cli.demo import EXAMPLES, Progress, _drive, package_of
from cli.local import DEMO_USER, demo_password
from cli.simulated_models import BEDROCK_BASE_MODEL, TRAINING_ROLE
from localcloud.cloud import LocalCloud
from localcloud.console_server import serve_console
from localcloud.stack_template import ACCOUNT_ID
from tests.browser.conftest import Page, _free_port, require_current_build, write_screenshot

TRAINING_TIMEOUT_MS = 120_000
DATASET_MODEL = "Qwen2.5-7B-LoRA"
PACKAGE_PROFILE = "bedrock-conversation"


@dataclass
class Trainer:
    url: str
    password: str
    cloud: LocalCloud
    owner: Api
    dataset_id: str
    run_id: str
    package_id: str
    bedrock_connection: str
    limited_connection: str
    limited_name: str


@pytest.fixture(scope="module")
def trainer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Trainer]:
    require_current_build()
    out = tmp_path_factory.mktemp("train")
    example = EXAMPLES / "gsm8k-tr"
    submission = sorted((example / "submission").glob("predictions.*"))[0]
    # moto's server keeps its resources in the process after it stops: an earlier module's cloud is gone.
    moto_api_backend.reset()
    with pytest.MonkeyPatch.context() as env:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            env.delenv(name, raising=False)
        with LocalCloud(mode="server", port=_free_port()) as cloud:
            password = demo_password()
            token = cloud.create_user(DEMO_USER, password, groups=[EVALUATORS_GROUP])
            with cloud.serve_api(access_log=False) as api_server, serve_console(cloud, api_server) as server:
                owner = Api(api_server.url, token)
                summary = _drive(cloud, owner, example, submission, DATASET_MODEL, out, Progress())
                assert summary["status"] == "Completed", summary
                preparation_id = summary["preparation"]["preparation_id"]
                built = package_of(owner, preparation_id, Progress(), PACKAGE_PROFILE)
                assert built["status"] == "Ready", built
                bedrock = {
                    "provider": "bedrock",
                    "region": "us-east-1",
                    "role_arn": TRAINING_ROLE.format(account=ACCOUNT_ID),
                }
                accepting = owner.expect("POST", "/connections", 201, {"name": "bedrock", **bedrock})
                # The same provider, its profile limited to one training row: the package has more.
                limited_name = "bedrock, one row at most"
                profile = {**accepting["profile"], "limits": {"max_rows": 1}}
                limited = owner.expect(
                    "POST", "/connections", 201, {"name": limited_name, **bedrock, "profile": profile}
                )
                yield Trainer(
                    url=server.url,
                    password=password,
                    cloud=cloud,
                    owner=owner,
                    dataset_id=summary["dataset_id"],
                    run_id=summary["run_id"],
                    package_id=built["package_id"],
                    bedrock_connection=accepting["connection_id"],
                    limited_connection=limited["connection_id"],
                    limited_name=limited_name,
                )


@pytest.fixture
def tab(browser: Any, trainer: Trainer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = Page(context.new_page(), trainer)
    page.sign_in(DEMO_USER)
    yield page
    context.close()


def choose_bedrock_model(page: Any) -> None:
    """On Train with the dataset picked: the base model overridden with a Bedrock one, whose connections
    then show."""
    page.get_by_label("Base model").fill(BEDROCK_BASE_MODEL)
    page.get_by_label("Base model").press("Tab")
    page.locator("#train-connections .choice").first.wait_for()


def launched_run_id(page: Any) -> str:
    page.wait_for_url(re.compile(r".*#/training-runs/train-[0-9a-f]+$"))
    return str(page.url.rsplit("/", 1)[1])


THIS_TEST = "test_a_run_launched_from_train_is_followed_to_succeeded"


def test_a_run_launched_from_train_is_followed_to_succeeded(tab: Page, trainer: Trainer) -> None:
    # Given the dataset saved from the demo's run, opened on Train
    page = tab.open(f"/train?dataset={trainer.dataset_id}")
    base_model = page.get_by_label("Base model")
    expect(base_model).to_have_value(DATASET_MODEL)
    expect(page.locator(".banner")).to_contain_text("Benchmark fine-tune dataset selected")
    # no connection of this user trains the dataset's own base model
    expect(page.locator("#train-connections")).to_contain_text(f"trains demonstration on {DATASET_MODEL}")
    expect(page.get_by_role("button", name="Launch training run")).to_be_disabled()

    # When the base model is overridden with a Bedrock one, the connections that take it appear
    choose_bedrock_model(page)
    note = page.locator("#train-base-model-note")
    expect(note).to_contain_text(f"Overrides the dataset's base model {DATASET_MODEL}")
    connections = page.locator("#train-connections .choice")
    expect(connections).to_have_count(2)
    expect(connections.first).to_contain_text("model families nova")
    page.get_by_label(re.compile(r"^bedrock \(bedrock\)")).check()
    # and the Ready bedrock-conversation package of the dataset's run is offered, with the suggestions
    package = page.locator("#train-material .choice")
    expect(package).to_have_count(1)
    expect(package).to_contain_text(PACKAGE_PROFILE)
    expect(package).to_contain_text(re.compile(r"\d+(\.\d)? KB"))
    suggested = page.locator(".suggestions dl")
    expect(suggested).to_contain_text("learning_rate")
    expect(suggested).to_contain_text("0.0002")
    page.get_by_role("button", name="Add hyperparameter").click()
    page.locator("#train-hyper-name-0").fill("epochCount")
    page.locator("#train-hyper-value-0").fill("1")
    write_screenshot(page, "console-train-launch.png", f"test_train.py::{THIS_TEST}")
    page.get_by_role("button", name="Launch training run").click()

    # Then the run's page shows the API's warning and follows the run to Succeeded
    training_run_id = launched_run_id(page)
    expect(page.get_by_role("list", name="Launch warnings")).to_contain_text(
        f"base model {BEDROCK_BASE_MODEL} overrides {DATASET_MODEL}"
    )
    details = page.get_by_role("complementary", name="Training run details")
    expect(details.locator("dd").first).to_have_text("Succeeded", timeout=TRAINING_TIMEOUT_MS)
    run = trainer.owner.expect("GET", f"/training-runs/{training_run_id}", 200)
    assert run["hyperparameters"] == {"epochCount": "1"}
    assert run["suggested_hyperparams"]["learning_rate"] == 0.0002
    assert run["package_id"] == trainer.package_id
    timeline = page.locator("ol.timeline li")
    expect(timeline).to_have_count(len(run["timeline"]))
    assert run["timeline"][0]["status"] == "Queued"
    assert run["timeline"][-1]["status"] == "Succeeded"
    for item, change in zip(timeline.all(), run["timeline"], strict=True):
        expect(item).to_have_attribute("data-status", change["status"])
        if change.get("provider_status"):
            expect(item).to_contain_text(f"provider: {change['provider_status']}")
    expect(details).to_contain_text(run["job_id"])
    expect(details).to_contain_text(run["result_model"])
    expect(details).to_contain_text("not reported by the provider")
    expect(page.get_by_role("button", name="Cancel training run")).to_have_count(0)
    write_screenshot(page, "console-training-run.png", f"test_train.py::{THIS_TEST}")
    # and the list of training runs links it by the base model it trains, its id beneath
    page = tab.open("/training-runs")
    row = page.get_by_role("table", name="Training runs").locator("tbody tr").filter(has_text=training_run_id)
    expect(row.get_by_role("link")).to_have_text(f"{run['base_model']} trained on gsm8k-tr v1")
    assert tab.errors == []


def test_a_run_is_cancelled_from_its_page(tab: Page, trainer: Trainer) -> None:
    # Given a Bedrock job that does not end by itself
    clock = trainer.cloud.provider_clock
    clock.polls_to_complete = 10**6
    try:
        page = tab.open(f"/train?dataset={trainer.dataset_id}")
        choose_bedrock_model(page)
        page.get_by_label(re.compile(r"^bedrock \(bedrock\)")).check()
        page.locator("#train-material .choice").wait_for()
        page.get_by_role("button", name="Launch training run").click()
        training_run_id = launched_run_id(page)
        details = page.get_by_role("complementary", name="Training run details")
        expect(details.locator("dd").first).to_have_text("Running", timeout=TRAINING_TIMEOUT_MS)
        # When its owner cancels it from its page
        page.get_by_role("button", name="Cancel training run").click()
        expect(page.get_by_role("status")).to_contain_text("Cancel requested")
        # Then the pipeline stops the job and the page shows Cancelled
        expect(details.locator("dd").first).to_have_text("Cancelled", timeout=TRAINING_TIMEOUT_MS)
    finally:
        clock.polls_to_complete = 2
    run = trainer.owner.expect("GET", f"/training-runs/{training_run_id}", 200)
    assert run["status"] == "Cancelled"
    expect(page.locator("ol.timeline li").last).to_contain_text(run["timeline"][-1]["message"])
    assert tab.errors == []


def test_a_launch_the_profile_refuses_shows_the_apis_sentence(tab: Page, trainer: Trainer) -> None:
    # Given the connection limited to one training row, chosen on Train
    page = tab.open(f"/train?dataset={trainer.dataset_id}")
    choose_bedrock_model(page)
    page.get_by_label(re.compile(re.escape(trainer.limited_name))).check()
    page.locator("#train-material .choice").wait_for()
    before = trainer.owner.expect("GET", "/training-runs?limit=100", 200)["items"]
    # When Launch is pressed
    page.get_by_role("button", name="Launch training run").click()
    # Then the API's own sentence is shown, and nothing was launched
    status, answer = trainer.owner.call(
        "POST",
        "/training-runs",
        {
            "package_id": trainer.package_id,
            "connection_id": trainer.limited_connection,
            "base_model": BEDROCK_BASE_MODEL,
            "hyperparameters": {},
        },
    )
    assert status == 400
    assert "more than this connection accepts (at most 1)" in answer["message"]
    expect(page.locator("#train-outcome [role=alert]")).to_have_text(answer["message"])
    assert trainer.owner.expect("GET", "/training-runs?limit=100", 200)["items"] == before
    assert "#/train" in page.url


def tab_until(page: Any, found: Callable[[dict[str, Any]], bool], most: int = 60) -> None:
    """Press Tab until the focused element is the one ``found`` picks (from its tag, id, type, text)."""
    for _ in range(most):
        page.keyboard.press("Tab")
        focused = page.evaluate(
            "() => { const e = document.activeElement; return {tag: e.tagName.toLowerCase(), id: e.id,"
            " type: e.getAttribute('type'), text: e.textContent.trim(), name: e.getAttribute('name'),"
            " href: e.getAttribute('href')}; }"
        )
        if found(focused):
            return
    raise AssertionError(f"Tab never reached the element ({most} presses)")


def test_the_launch_workflow_completes_with_the_keyboard_alone(tab: Page, trainer: Trainer) -> None:
    # Given Train, reached from the navigation with the keyboard
    page = tab.open("/runs")
    page.get_by_role("link", name="Runs", exact=True).wait_for()
    tab_until(page, lambda e: e["text"] == "Train" and e["tag"] == "a")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*#/train$"))
    # When the dataset is chosen, the base model overridden, a connection and package kept, and Launch pressed
    tab_until(page, lambda e: e["id"] == "train-dataset")
    label = page.locator(f"#train-dataset option[value='{trainer.dataset_id}']").text_content()
    assert label is not None
    page.keyboard.press("ArrowDown")
    expect(page.locator("#train-dataset")).to_have_value(trainer.dataset_id)
    expect(page.get_by_label("Base model")).to_have_value(DATASET_MODEL)
    page.keyboard.press("Tab")
    page.keyboard.press("Control+A")
    page.keyboard.type(BEDROCK_BASE_MODEL)
    page.keyboard.press("Tab")
    page.locator("#train-material .choice").wait_for()
    tab_until(page, lambda e: e["name"] == "train-connection")
    # the arrow keys move through the connections (newest first) to the one without a row limit
    for _ in range(3):
        if page.evaluate("() => document.activeElement.value") == trainer.bedrock_connection:
            break
        page.keyboard.press("ArrowDown")
    expect(page.locator("input[name=train-connection]:focus")).to_have_value(trainer.bedrock_connection)
    expect(page.locator("input[name=train-connection]:focus")).to_be_checked()
    expect(page.locator("#train-material")).to_contain_text("in a profile bedrock reads")
    tab_until(page, lambda e: e["text"] == "Add hyperparameter")
    page.keyboard.press("Enter")
    page.keyboard.type("epochCount")
    page.keyboard.press("Tab")
    page.keyboard.type("1")
    tab_until(page, lambda e: e["id"] == "train-launch")
    page.keyboard.press("Enter")
    # Then the run is launched with what was typed, and its page follows it
    training_run_id = launched_run_id(page)
    details = page.get_by_role("complementary", name="Training run details")
    expect(details.locator("dd").first).to_have_text("Succeeded", timeout=TRAINING_TIMEOUT_MS)
    run = trainer.owner.expect("GET", f"/training-runs/{training_run_id}", 200)
    assert run["base_model"] == BEDROCK_BASE_MODEL
    assert run["hyperparameters"] == {"epochCount": "1"}
    assert tab.errors == []


def test_the_train_page_and_a_training_run_page_have_no_serious_accessibility_violation(
    tab: Page, trainer: Trainer
) -> None:
    page = tab.open(f"/train?dataset={trainer.dataset_id}")
    choose_bedrock_model(page)
    page.locator("#train-material .choice").wait_for()
    assert tab.axe_violations() == []
    launched = trainer.owner.expect(
        "POST",
        "/training-runs",
        202,
        {
            "package_id": trainer.package_id,
            "connection_id": trainer.bedrock_connection,
            "base_model": BEDROCK_BASE_MODEL,
        },
    )
    page = tab.open(f"/training-runs/{launched['training_run']['training_run_id']}")
    page.get_by_role("heading", name=f"{BEDROCK_BASE_MODEL} trained on gsm8k-tr v1").wait_for()
    assert tab.axe_violations() == []


def test_the_results_tab_pages_the_preparations_training_runs(tab: Page, trainer: Trainer) -> None:
    # Given the preparation's training runs, as many as the earlier tests launched, as the API lists them
    preparation_id = trainer.owner.expect("GET", f"/packages/{trainer.package_id}", 200)["preparation_id"]
    listed = trainer.owner.expect("GET", f"/training-runs?preparation_id={preparation_id}&limit=100", 200)
    runs = listed["items"]
    assert len(runs) >= 2, "the earlier tests launched training runs of this preparation"
    # When the Results tab shows one a page
    page = tab.open(f"/workspace/{preparation_id}/results?limit=1")
    count = page.get_by_role("navigation", name="Pages of training runs").locator(".count")
    # Then it says where it is, and the next page shows the next one, newest first
    expect(count).to_have_text("Training runs 1–1, more on the next page")
    expect(page.locator("li.training-run")).to_have_attribute(
        "aria-label", f"Training run {runs[0]['training_run_id']}"
    )
    page.get_by_role("button", name="Next page").click()
    expect(count).to_have_text(re.compile("^Training runs 2–2(, more on the next page| of 2)$"))
    expect(page.locator("li.training-run")).to_have_attribute(
        "aria-label", f"Training run {runs[1]['training_run_id']}"
    )
    # and the First page button leads back to the newest
    page.get_by_role("button", name="First page").click()
    expect(count).to_have_text("Training runs 1–1, more on the next page")


def test_train_and_a_training_run_page_fit_a_phone(browser: Any, trainer: Trainer) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        tab = Page(context.new_page(), trainer)
        tab.sign_in(DEMO_USER)
        page = tab.open(f"/train?dataset={trainer.dataset_id}")
        choose_bedrock_model(page)
        page.locator("#train-material .choice").wait_for()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        training_run_id = trainer.owner.expect("GET", "/training-runs?limit=1", 200)["items"][0][
            "training_run_id"
        ]
        page = tab.open(f"/training-runs/{training_run_id}")
        # titled by the base model it trains, its id among the details
        page.get_by_role("heading", name=re.compile(" trained on gsm8k-tr v1$")).wait_for()
        details = page.get_by_role("complementary", name="Training run details")
        expect(details).to_contain_text(training_run_id)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
        page = tab.open("/training-runs")
        page.get_by_role("table", name="Training runs").wait_for()
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    finally:
        context.close()


def open_results_launch(tab: Page, trainer: Trainer) -> Any:
    """The workspace's Results tab of the package's preparation, its bedrock-conversation package chosen."""
    preparation_id = trainer.owner.expect("GET", f"/packages/{trainer.package_id}", 200)["preparation_id"]
    page = tab.open(f"/workspace/{preparation_id}/results")
    page.get_by_label("Ready package").select_option(trainer.package_id)
    return page


RESULTS_TEST = "test_a_run_launched_from_a_package_in_results_is_followed_to_its_page"


def test_a_run_launched_from_a_package_in_results_is_followed_to_its_page(
    tab: Page, trainer: Trainer
) -> None:
    # Given the preparation's Results tab with its bedrock-conversation package chosen
    page = open_results_launch(tab, trainer)
    form = page.get_by_role("form", name="Launch a training run from a package")
    base_model = form.get_by_label("Base model")
    expect(base_model).to_have_value(DATASET_MODEL)
    # no connection of this user trains the preparation's own base model from these files
    connections = page.locator("#results-connections")
    expect(connections).to_contain_text(
        f"trains demonstration on {DATASET_MODEL} from {PACKAGE_PROFILE} files"
    )
    expect(form.get_by_role("button", name="Launch training run")).to_be_disabled()
    # and the benchmark author's suggestions are shown beside the (empty) hyperparameters
    expect(form.locator(".suggestions dl")).to_contain_text("learning_rate")

    # When the base model is overridden with a Bedrock one, the connections whose profile takes it appear
    base_model.fill(BEDROCK_BASE_MODEL)
    base_model.press("Tab")
    expect(page.locator("#results-base-model-note")).to_contain_text(
        f"Overrides the preparation's base model {DATASET_MODEL}"
    )
    expect(connections.locator(".choice")).to_have_count(2)
    expect(connections.locator(".choice").first).to_contain_text("model families nova")
    form.get_by_label(re.compile(r"^bedrock \(bedrock\)")).check()
    form.get_by_role("button", name="Add hyperparameter").click()
    page.locator("#results-hyper-name-0").fill("epochCount")
    page.locator("#results-hyper-value-0").fill("1")
    write_screenshot(page, "console-results-launch.png", f"test_train.py::{RESULTS_TEST}")
    form.get_by_role("button", name="Launch training run").click()

    # Then the training run's page shows the API's warning and follows the run to Succeeded
    training_run_id = launched_run_id(page)
    expect(page.get_by_role("list", name="Launch warnings")).to_contain_text(
        f"base model {BEDROCK_BASE_MODEL} overrides {DATASET_MODEL}"
    )
    details = page.get_by_role("complementary", name="Training run details")
    expect(details.locator("dd").first).to_have_text("Succeeded", timeout=TRAINING_TIMEOUT_MS)
    run = trainer.owner.expect("GET", f"/training-runs/{training_run_id}", 200)
    assert run["package_id"] == trainer.package_id
    assert run["connection_id"] == trainer.bedrock_connection
    assert (run["base_model"], run["base_model_source"]) == (BEDROCK_BASE_MODEL, "request")
    assert run["hyperparameters"] == {"epochCount": "1"}
    assert "learning_rate" not in run["hyperparameters"]
    # and the Results tab lists it, newest first
    page = tab.open(f"/workspace/{run['preparation_id']}/results")
    newest = page.locator("li.training-run").first
    expect(newest).to_have_attribute("aria-label", f"Training run {training_run_id}")
    assert tab.errors == []


def _preparation_of_a_bedrock_model(trainer: Trainer) -> tuple[str, str]:
    """A copy of the package's preparation that recorded the Bedrock base model, and a copy of the package
    of it, written where the pipelines write them: a preparation whose own base model a connection trains."""
    dynamodb = trainer.cloud.client("dynamodb")
    environment = trainer.cloud.environment
    package = dynamodb.get_item(
        TableName=environment["PACKAGES_TABLE"], Key={"package_id": {"S": trainer.package_id}}
    )["Item"]
    preparation_id = package["preparation_id"]["S"]
    preparation = dynamodb.get_item(
        TableName=environment["PREPARATIONS_TABLE"], Key={"preparation_id": {"S": preparation_id}}
    )["Item"]
    copies = (preparation_id[:-4] + "b0b0", trainer.package_id[:-4] + "b0b0")
    for item in (preparation, package):
        # Created a moment later, as another would be (two items with one GSI sort key confuse moto).
        item["created_at"] = {"S": item["created_at"]["S"].replace("Z", "").rstrip("0") + "9Z"}
        item["preparation_id"] = {"S": copies[0]}
    preparation["base_model"] = {"S": BEDROCK_BASE_MODEL}
    package["package_id"] = {"S": copies[1]}
    dynamodb.put_item(TableName=environment["PREPARATIONS_TABLE"], Item=preparation)
    dynamodb.put_item(TableName=environment["PACKAGES_TABLE"], Item=package)
    return copies


def test_a_package_launch_on_its_recorded_base_model_says_which_package_trains_which_model(
    tab: Page, trainer: Trainer
) -> None:
    # Given a preparation that recorded a base model the Bedrock connection trains, and its package
    preparation_id, package_id = _preparation_of_a_bedrock_model(trainer)
    page = tab.open(f"/workspace/{preparation_id}/results")
    page.get_by_label("Ready package").select_option(package_id)
    form = page.get_by_role("form", name="Launch a training run from a package")
    expect(form.get_by_label("Base model")).to_have_value(BEDROCK_BASE_MODEL)

    # When it is launched on that base model, not overridden
    form.get_by_label(re.compile(r"^bedrock \(bedrock\)")).check()
    form.get_by_role("button", name="Launch training run").click()

    # Then the training run's page says which package trains which base model, and from where: nothing
    # of a benchmark dataset, which this launch did not choose
    launched_run_id(page)
    notices = page.get_by_role("list", name="Launch notices")
    expect(notices).to_have_text(
        f"package {package_id} ({PACKAGE_PROFILE}, prepared from gsm8k-tr v1 in preparation "
        f"{preparation_id}) trains {BEDROCK_BASE_MODEL}, the base model recorded with its preparation: the "
        "launch named none"
    )
    expect(page.get_by_role("list", name="Launch warnings")).to_have_count(0)
    assert tab.errors == []


def test_a_results_launch_the_profile_refuses_shows_the_apis_sentence(tab: Page, trainer: Trainer) -> None:
    # Given the connection limited to one training row, chosen on Results for the Bedrock base model
    page = open_results_launch(tab, trainer)
    form = page.get_by_role("form", name="Launch a training run from a package")
    form.get_by_label("Base model").fill(BEDROCK_BASE_MODEL)
    form.get_by_label("Base model").press("Tab")
    form.get_by_label(re.compile(re.escape(trainer.limited_name))).check()
    before = trainer.owner.expect("GET", "/training-runs?limit=100", 200)["items"]
    # When Launch is pressed
    form.get_by_role("button", name="Launch training run").click()
    # Then the API's own sentence is shown under the button, and nothing was launched
    status, answer = trainer.owner.call(
        "POST",
        "/training-runs",
        {
            "package_id": trainer.package_id,
            "connection_id": trainer.limited_connection,
            "base_model": BEDROCK_BASE_MODEL,
            "hyperparameters": {},
        },
    )
    assert status == 400
    expect(page.locator("#results-outcome [role=alert]")).to_have_text(answer["message"])
    assert trainer.owner.expect("GET", "/training-runs?limit=100", 200)["items"] == before
    assert "/results" in page.url
    # the browser reports the refused request itself, and nothing else went wrong
    assert [error for error in tab.errors if "400 (Bad Request)" not in error] == []


def test_the_results_launch_completes_with_the_keyboard_alone(tab: Page, trainer: Trainer) -> None:
    # Given the Results tab, reached from the Overview's Launch training link with the keyboard
    preparation_id = trainer.owner.expect("GET", f"/packages/{trainer.package_id}", 200)["preparation_id"]
    page = tab.open(f"/workspace/{preparation_id}/overview")
    page.get_by_role("list", name="Packages").wait_for()
    link = f"/results?package={trainer.package_id}"
    tab_until(page, lambda e: e["text"] == "Launch training" and link in (e["href"] or ""))
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r".*/results\?package="))
    # the link chose its package
    expect(page.get_by_label("Ready package")).to_have_value(trainer.package_id)
    # When the base model is overridden, the unlimited connection kept, a hyperparameter typed, Launch pressed
    tab_until(page, lambda e: e["id"] == "results-base-model")
    page.keyboard.press("Control+A")
    page.keyboard.type(BEDROCK_BASE_MODEL)
    page.keyboard.press("Tab")
    page.locator("#results-connections .choice").first.wait_for()
    tab_until(page, lambda e: e["name"] == "results-connection")
    for _ in range(3):
        if page.evaluate("() => document.activeElement.value") == trainer.bedrock_connection:
            break
        page.keyboard.press("ArrowDown")
    expect(page.locator("input[name=results-connection]:focus")).to_be_checked()
    expect(page.locator("input[name=results-connection]:focus")).to_have_value(trainer.bedrock_connection)
    tab_until(page, lambda e: e["text"] == "Add hyperparameter")
    page.keyboard.press("Enter")
    page.keyboard.type("epochCount")
    page.keyboard.press("Tab")
    page.keyboard.type("1")
    tab_until(page, lambda e: e["id"] == "results-launch")
    page.keyboard.press("Enter")
    # Then the run is launched with what was typed, and its page follows it
    training_run_id = launched_run_id(page)
    details = page.get_by_role("complementary", name="Training run details")
    expect(details.locator("dd").first).to_have_text("Succeeded", timeout=TRAINING_TIMEOUT_MS)
    run = trainer.owner.expect("GET", f"/training-runs/{training_run_id}", 200)
    assert (run["package_id"], run["base_model"]) == (trainer.package_id, BEDROCK_BASE_MODEL)
    assert run["connection_id"] == trainer.bedrock_connection
    assert run["hyperparameters"] == {"epochCount": "1"}
    assert tab.errors == []


@pytest.mark.parametrize("width", [390, 1440])
def test_the_results_launch_fits_the_window_and_has_no_serious_accessibility_violation(
    browser: Any, trainer: Trainer, width: int
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        tab = Page(context.new_page(), trainer)
        tab.sign_in(DEMO_USER)
        page = open_results_launch(tab, trainer)
        page.get_by_label("Base model").fill(BEDROCK_BASE_MODEL)
        page.get_by_label("Base model").press("Tab")
        page.locator("#results-connections .choice").first.wait_for()
        assert page.evaluate("() => document.documentElement.scrollWidth") == width
        assert tab.axe_violations() == []
    finally:
        context.close()
