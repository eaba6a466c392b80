"""The web console in a real browser, against the local cloud after the demo's run."""

from __future__ import annotations

import re
from typing import Any

from playwright.sync_api import expect

from cli.local import DEMO_USER
from tests.browser.conftest import STRANGER, Console, Page, write_screenshot

BANNER = (
    "Benchmark fine-tune dataset selected: training will reuse the saved BenchGen artifact and its recorded "
    "base model."
)


def test_a_wrong_password_is_refused_with_the_pools_message(tab: Page, console: Console) -> None:
    page = tab.page
    page.goto(console.url + "/")
    page.get_by_label("Email or user name").fill(DEMO_USER)
    page.get_by_label("Password").fill(console.password + "-wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_have_text("Incorrect username or password.")
    expect(page.get_by_role("link", name="Runs", exact=True)).to_have_count(0)
    # The pool's 400 answer is the only console error.
    assert len(tab.errors) == 1 and "400" in tab.errors[0], tab.errors


def test_the_email_address_signs_in_whatever_its_case(tab: Page, console: Console) -> None:
    # Given the demo user's email address typed in capitals
    page = tab.page
    page.goto(console.url + "/")
    page.get_by_label("Email or user name").fill(DEMO_USER.upper())
    page.get_by_label("Password").fill(console.password)
    # When Sign in is pressed
    page.get_by_role("button", name="Sign in").click()
    # Then the user is signed in
    expect(page.get_by_role("link", name="Runs", exact=True)).to_be_visible()
    expect(page.locator("#who")).to_contain_text(DEMO_USER, ignore_case=True)
    assert tab.errors == []


def test_the_runs_list_shows_the_demo_run_and_filters_by_status(tab: Page, console: Console) -> None:
    tab.sign_in(DEMO_USER)
    expect(tab.page.locator("#who")).to_contain_text(DEMO_USER)
    page = tab.open("/runs")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name=console.run_id))
    expect(row).to_contain_text("Completed")
    expect(row).to_contain_text("Qwen2.5-7B-LoRA")
    page.get_by_label("Status").select_option("Failed")
    expect(page.get_by_text("No runs match these filters.")).to_be_visible()
    page.get_by_label("Status").select_option("Completed")
    page.get_by_label("Environment").select_option("gsm8k-tr")
    expect(page.get_by_role("link", name=console.run_id)).to_be_visible()
    assert tab.errors == []


def test_the_run_detail_shows_the_apis_tiles_files_and_report(tab: Page, console: Console) -> None:
    run = console.owner.expect("GET", f"/runs/{console.run_id}", 200)
    files = console.owner.expect("GET", f"/runs/{console.run_id}/files", 200)["files"]
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{console.run_id}")
    # titled by the model and the environment version it ran, its id among the details
    title = f"{run['model']} on {run['environment_id']} {run['environment_version']}"
    expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible()
    tiles = page.locator(".tile")
    expect(tiles).to_have_count(1 + len(run["metrics"]))
    assert run["metrics"], "the demo's benchmark reports metrics"
    assert tiles.locator(".tile-title").all_inner_texts() == ["Overall Score"] + [
        t["title"] for t in run["metrics"]
    ]
    overall = tiles.first.locator(".tile-value").inner_text()
    assert float(overall) == round(run["overall_score"], 4)
    rows = page.locator("table.files tbody tr")
    assert rows.locator("td:first-child").all_inner_texts() == [f["label"] for f in files]
    for file in files:
        row = page.locator(f'table.files tr[data-label="{file["label"]}"]')
        # The same object; the signature differs (each answer presigns anew).
        href = row.get_by_role("link", name=f"Download {file['label']}").get_attribute("href")
        assert href.split("?")[0] == file["url"].split("?")[0]
        assert "X-Amz-Signature=" in href
    expect(page.get_by_role("link", name="View Detailed Results")).to_be_visible()
    sidebar = page.get_by_role("complementary", name="Run details")
    for label in (
        "Status",
        "Model",
        "Environment",
        "Created",
        "Phase",
        "Submission",
        "Run ID",
        "Generated Dataset",
        "Score",
    ):
        expect(sidebar.locator("dt", has_text=re.compile(f"^{label}$"))).to_have_count(1)
    expect(sidebar.get_by_role("link", name=run["dataset_name"])).to_have_attribute(
        "href", f"#/datasets/{console.dataset_id}"
    )
    # The embedded report is the run's own detailed results, loaded from its presigned URL.
    report = page.frame_locator("iframe.report")
    expect(report.locator("body")).to_contain_text(run["metrics"][0]["title"], ignore_case=True)
    expect(page.get_by_role("region", name="Fine-tune Dataset").get_by_role("link")).to_have_text(
        run["dataset_name"]
    )
    write_screenshot(
        page,
        "console-run-detail.png",
        "test_console.py::test_the_run_detail_shows_the_apis_tiles_files_and_report",
    )
    assert tab.errors == []


def test_the_save_button_saves_once_then_becomes_a_link(tab: Page, console: Console) -> None:
    run_id = console.unsaved_run_id
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{run_id}")
    panel = page.get_by_role("region", name="Fine-tune Dataset")
    save = panel.get_by_role("button", name="Save to FineTune Datasets")
    save.click()
    link = panel.get_by_role("link")
    expect(link).to_be_visible()
    saved = console.owner.expect("GET", f"/runs/{run_id}", 200)
    assert saved["dataset_id"] == f"ds-{run_id}"
    expect(link).to_have_attribute("href", f"#/datasets/ds-{run_id}")
    expect(save).to_have_count(0)
    # A second save is refused by the API: the run keeps its one dataset.
    status, answer = console.owner.call("POST", f"/runs/{run_id}/dataset")
    assert status == 409, answer
    datasets = console.owner.expect("GET", "/datasets?limit=100", 200)["items"]
    assert [d["dataset_id"] for d in datasets if d["run_id"] == run_id] == [f"ds-{run_id}"]
    assert tab.errors == []


def test_the_run_configuration_button_is_for_the_owner_only(tab: Page, console: Console) -> None:
    tab.sign_in(STRANGER)
    page = tab.open(f"/runs/{console.run_id}")
    expect(page.get_by_role("complementary", name="Run details")).to_contain_text(console.run_id)
    expect(page.locator(".tile").first).to_be_visible()
    expect(page.get_by_role("button", name="Run configuration")).to_have_count(0)
    page.get_by_role("button", name="Sign out").click()
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{console.run_id}")
    page.get_by_role("button", name="Run configuration").click()
    expect(page.locator("#run-config pre")).to_contain_text('"temperature": 0')
    assert tab.errors == []


def test_the_datasets_page_filters_fine_tune_and_badges_benchmark_datasets(
    tab: Page, console: Console
) -> None:
    dataset = console.owner.expect("GET", f"/datasets/{console.dataset_id}", 200)
    tab.sign_in(DEMO_USER)
    page = tab.open("/datasets")
    link = page.locator(f'a[href="#/datasets/{console.dataset_id}"]')
    row = page.get_by_role("row").filter(has=link)
    expect(row.locator(".badge-benchmark")).to_have_text("Benchmark")
    page.get_by_label("Fine-tune").check()
    expect(page).to_have_url(re.compile(r"kind=finetune"))
    expect(link).to_have_text(dataset["name"])
    link.click()
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text(dataset["base_model"])
    expect(facts).to_contain_text(str(dataset["example_count"]))
    expect(facts).to_contain_text(dataset["selection_criterion"])
    expect(page.get_by_role("link", name="View benchmark")).to_have_attribute(
        "href", f"#/runs/{dataset['run_id']}"
    )
    assert tab.errors == []


def test_picking_a_benchmark_dataset_shows_the_banner_and_the_accepting_connections(
    tab: Page, console: Console
) -> None:
    dataset = console.owner.expect("GET", f"/datasets/{console.dataset_id}", 200)
    tab.sign_in(DEMO_USER)
    page = tab.open("/train")
    expect(page.get_by_text(BANNER)).to_have_count(0)
    page.get_by_label("Dataset", exact=True).select_option(console.dataset_id)
    expect(page.get_by_text(BANNER)).to_be_visible()
    expect(page.get_by_label("Base model")).to_have_value(dataset["base_model"])
    connections = page.locator("#train-connections .choice")
    expect(connections).to_have_count(1)
    expect(connections).to_have_attribute("data-connection", console.accepting_connection)
    assert tab.errors == []


def test_datasets_of_one_generated_name_are_told_apart_on_train_at_a_phones_width(
    browser: Any, console: Console
) -> None:
    # Given two datasets of one generated name: the demo run's and its copy's, saved a moment later
    status, answer = console.owner.call("POST", f"/runs/{console.unsaved_run_id}/dataset")
    assert status in (201, 409), answer  # 409: an earlier test saved it already
    name = console.owner.expect("GET", f"/datasets/{console.dataset_id}", 200)["name"]
    shared = [
        d for d in console.owner.expect("GET", "/datasets?limit=100", 200)["items"] if d["name"] == name
    ]
    assert len(shared) == 2
    context = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        tab = Page(context.new_page(), console)
        tab.sign_in(DEMO_USER)
        # When Train's dataset menu is read at a phone's width
        page = tab.open("/train")
        options = page.locator(f'#train-dataset optgroup[label="{name}"] option')
        # Then they are grouped under their name, each option starting with what differs
        expect(options).to_have_count(2)
        texts = options.all_inner_texts()
        assert len(set(texts)) == 2, texts
        assert all(not text.startswith(name) for text in texts), texts
        # and the one chosen is named beside the menu
        page.get_by_label("Dataset", exact=True).select_option(console.dataset_id)
        expect(page.locator("#train-dataset-name")).to_have_text(name)
        assert tab.errors == []
    finally:
        context.close()


def test_the_workspace_tabs_show_the_preparation(tab: Page, console: Console) -> None:
    preparation = console.owner.expect("GET", f"/preparations/{console.preparation_id}", 200)
    coverage = console.owner.expect("GET", f"/preparations/{console.preparation_id}/coverage", 200)
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/workspace/{console.preparation_id}")
    expect(page.get_by_role("tabpanel")).to_contain_text(preparation["state_hash"])
    expect(page.get_by_role("button", name="Prepare download")).to_be_visible()
    expect(page.locator("ul.packages")).to_contain_text("Ready")
    # The profiles offered are the API's, those that take the preparation's method, named by their titles
    profiles = console.owner.expect("GET", "/export-profiles", 200)["items"]
    offered = [p for p in profiles if preparation["method"] in p["methods"]]
    options = page.locator("#package-profile option")
    expect(options).to_have_text([p["title"] for p in offered])
    assert options.evaluate_all("found => found.map((o) => o.value)") == [p["profile_id"] for p in offered]

    page.get_by_role("link", name="Dataset", exact=True).click()
    train = preparation["splits"]["train"]
    expect(page.locator("article.example")).to_have_count(min(train, 25))
    expect(page.locator("article.example").first).to_contain_text("Source: case")

    page.get_by_role("link", name="Coverage").click()
    table = page.locator("table.coverage tbody tr")
    expect(table).to_have_count(len(coverage["criteria"]))
    for criterion, splits in coverage["criteria"].items():
        cells = page.locator(
            "table.coverage tr", has=page.get_by_role("rowheader", name=re.compile(criterion))
        )
        assert cells.locator("td").all_inner_texts() == [
            str(splits.get(s, 0)) for s in ("train", "validation", "test")
        ]
    expect(page.locator("ul.gaps li")).to_have_count(len(coverage["gaps"]))
    write_screenshot(
        page, "console-coverage.png", "test_console.py::test_the_workspace_tabs_show_the_preparation"
    )

    page.get_by_role("link", name="Results").click()
    expect(page.get_by_role("tabpanel")).to_contain_text("Training runs")
    assert tab.errors == []


def test_every_page_passes_axe_and_works_from_the_keyboard(tab: Page, console: Console) -> None:
    tab.sign_in(DEMO_USER)
    found: dict[str, Any] = {}
    for route in (
        "/runs",
        f"/runs/{console.run_id}",
        "/datasets",
        f"/datasets/{console.dataset_id}",
        "/train",
        f"/workspace/{console.preparation_id}/overview",
        f"/workspace/{console.preparation_id}/coverage",
    ):
        page = tab.open(route)
        page.locator("main h1").first.wait_for()
        violations = tab.axe_violations()
        if violations:
            found[route] = [(v["id"], v["help"]) for v in violations]
    assert found == {}
    # From the top of the page, Tab reaches the skip link, then the main navigation in order.
    page = tab.open("/runs")
    page.reload()
    page.locator("main h1").wait_for()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Runs"
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Datasets")).to_be_visible()
    assert tab.errors == []


def test_skip_to_content_moves_the_focus_into_the_page_it_is_on(tab: Page, console: Console) -> None:
    # Given the runs page, its skip link the first stop of the keyboard
    tab.sign_in(DEMO_USER)
    page = tab.open("/runs")
    page.reload()
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    # When Enter follows it
    page.keyboard.press("Enter")
    # Then the focus is on the content, which is still the runs page at its own address
    expect(page.locator("main")).to_be_focused()
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Not found")).to_have_count(0)
    assert page.url.endswith("#/runs")
    assert tab.errors == []


def test_a_going_run_updates_live_and_a_failed_one_shows_its_reason_and_logs(
    tab: Page, console: Console
) -> None:
    created = console.owner.expect(
        "POST",
        "/runs",
        201,
        {
            "environment_id": "gsm8k-tr",
            "version": "v1",
            "model": "broken-model",
            "filename": "predictions.json",
        },
    )
    run_id = created["run"]["run_id"]
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{run_id}")
    expect(page.get_by_role("status")).to_contain_text("This run is Pending")
    expect(page.get_by_role("region", name="Step logs")).to_be_visible()
    # The submission arrives while the page is open; the page follows the run without a reload.
    console.cloud.client("s3").put_object(
        Bucket=console.cloud.bucket, Key=created["upload_key"], Body=b"these are not predictions"
    )
    sidebar = page.get_by_role("complementary", name="Run details")
    expect(sidebar.locator(".status")).to_have_text("Failed", timeout=30_000)
    failed = console.owner.expect("GET", f"/runs/{run_id}", 200)
    assert failed["status"] == "Failed" and failed["failure_reason"]
    # The reason is the page's headline, and the Fine-tune panel says why there is no dataset
    expect(page.locator("h1 + .failure-reason.headline")).to_have_text(failed["failure_reason"])
    expect(page.locator(".finetune-state")).to_have_text(
        "No dataset: the run failed before it was scored, so no fine-tune artifact was built."
    )
    expect(page.get_by_text("score breakdown isn't available for that run")).to_be_visible()
    expect(page.locator("iframe.report")).to_have_count(0)
    files = console.owner.expect("GET", f"/runs/{run_id}/files", 200)["files"]
    # A submission refused at ingest keeps no log; the page says so rather than showing empty frames.
    assert [f["label"] for f in files] == ["Submission File"]
    expect(page.locator(".failure .no-logs")).to_have_text(
        "The run kept no logs: the reason above is its whole record."
    )
    expect(page.get_by_role("status")).to_have_count(0)
    assert tab.errors == []
