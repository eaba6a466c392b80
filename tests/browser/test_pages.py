"""The console's pages beyond the run: connections, environments, paged lists, every state a page can be in,
and every page at a phone's width and a wide screen."""

from __future__ import annotations

import json
import re
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

from boto3.dynamodb.types import TypeSerializer
from playwright.sync_api import expect

from benchgen.outputs import RunOutput
from cli.demo import EXAMPLES
from cli.local import DEMO_USER
from examplegen.writing import write_bundle_zip
from localcloud.stack_template import ACCOUNT_ID
from tests.browser.conftest import SECRET_ARN, STRANGER, Console, Page

A_KEY = "sk-live-0123456789abcdef"
REGISTRATION_MS = 120_000


def test_a_connection_is_created_read_and_deleted_from_its_pages(tab: Page, console: Console) -> None:
    # Given the connections page, which lists the user's connections with their profiles
    tab.sign_in(DEMO_USER)
    page = tab.open("/connections")
    listed = page.get_by_role("table", name="Connections")
    expect(listed.get_by_role("link", name="together", exact=True)).to_be_visible()
    expect(listed.locator("tbody tr")).to_have_count(2)
    expect(page.get_by_role("navigation", name="Pages of connections")).to_contain_text("2 connections")

    # When a key is put where the secret's ARN goes, the API refuses it and the page says once, by the
    # field's label, what goes there instead
    page.get_by_label("Name", exact=True).fill("lab")
    page.get_by_label("Provider", exact=True).select_option("openai-compatible")
    page.get_by_label("Base URL (https)").fill("https://api.example.com/v1")
    page.get_by_label(re.compile("Secrets Manager secret ARN")).fill(A_KEY)
    page.get_by_role("button", name="Create connection").click()
    refusal = page.locator("#connection-outcome [role=alert]")
    expect(refusal.locator("li")).to_have_text(
        [
            "Secrets Manager secret ARN holding the key (never the key): this is not a Secrets Manager "
            "secret's ARN, such as arn:aws:secretsmanager:us-east-1:123456789012:secret:together-key. Put "
            "the key itself in Secrets Manager and give the secret's ARN here"
        ]
    )
    expect(refusal).not_to_contain_text("pattern")
    expect(refusal).not_to_contain_text("secret_arn")
    assert A_KEY not in (refusal.text_content() or "")
    assert len(console.owner.expect("GET", "/connections?limit=100", 200)["items"]) == 2

    # and with the secret's ARN but an on-demand input price without its output price, the API names it
    page.get_by_label(re.compile("Secrets Manager secret ARN")).fill(SECRET_ARN)
    page.get_by_label("On demand, input").fill("0.06")
    page.get_by_label("Requests at once").fill("8")
    page.get_by_role("button", name="Create connection").click()
    expect(refusal.locator("li strong")).to_have_text(["On demand, output price"])
    assert len(console.owner.expect("GET", "/connections?limit=100", 200)["items"]) == 2

    # and with both prices, batch ones too, it is created with them and the quota, and its page shows
    # them beside what its profile accepts
    page.get_by_label("On demand, output").fill("0.24")
    page.get_by_label("Batch, input").fill("0.03")
    page.get_by_label("Batch, output").fill("0.12")
    page.get_by_role("button", name="Create connection").click()
    page.wait_for_url(re.compile(r".*#/connections/conn-[0-9a-f]+$"))
    connection_id = page.url.rsplit("/", 1)[1]
    created = console.owner.expect("GET", f"/connections/{connection_id}", 200)
    assert created["name"] == "lab" and created["secret_arn"] == SECRET_ARN
    assert created["prices"] == {
        "currency": "USD",
        "on_demand": {"input_per_million": 0.06, "output_per_million": 0.24},
        "batch": {"input_per_million": 0.03, "output_per_million": 0.12},
    }
    assert created["limits"] == {"max_in_flight": 8, "requests_per_minute": None, "tokens_per_minute": None}
    facts = page.locator("dl.facts")
    for label, values in (
        ("Training methods", created["profile"]["methods"]),
        ("Model families", created["profile"]["model_families"]),
        ("Export profiles", created["profile"]["export_profiles"]),
    ):
        expect(facts.locator("dt", has_text=label).locator("+ dd")).to_have_text(", ".join(values))
    expect(facts).to_contain_text(SECRET_ARN)
    expect(facts.locator("dt", has_text="Prices").locator("+ dd")).to_have_text(
        "per million tokens: on demand $0.06 in, $0.24 out; batch $0.03 in, $0.12 out"
    )
    expect(facts.locator("dt", has_text="Live-run quotas").locator("+ dd")).to_have_text(
        "requests at once: 8"
    )

    # Then Delete, confirmed, removes it: the list no longer has it and the API answers 404
    page.get_by_role("button", name="Delete connection").click()
    page.get_by_role("button", name="Confirm delete").click()
    page.wait_for_url(re.compile(r".*#/connections$"))
    expect(page.get_by_role("table", name="Connections").locator("tbody tr")).to_have_count(2)
    assert console.owner.call("GET", f"/connections/{connection_id}")[0] == 404


def _publish(page: Any, environment_id: str, version: str, bundle: Path) -> None:
    page.get_by_label("Environment id").fill(environment_id)
    page.get_by_label("Version", exact=True).fill(version)
    page.get_by_label("Bundle (zip)").set_input_files(str(bundle))
    page.get_by_role("button", name="Publish version").click()


def test_a_version_is_published_from_the_environments_page(
    tab: Page, console: Console, tmp_path: Path
) -> None:
    # Given the example's bundle as a zip, and the environment its owner published before
    bundle = write_bundle_zip(EXAMPLES / "gsm8k-tr" / "bundle", tmp_path / "bundle.zip")
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments")
    expect(page.get_by_role("article", name="gsm8k-tr v1")).to_contain_text("Registered")
    # When a new version is published from the page (its file picker, the API's upload URL)
    _publish(page, "gsm8k-tr", "v2", bundle)
    # Then the browser's upload is registered, and the page shows it with what the API records
    outcome = page.locator("#publish-outcome")
    expect(outcome.get_by_role("status")).to_have_text("gsm8k-tr v2 is Registered.", timeout=REGISTRATION_MS)
    versions = console.owner.expect("GET", "/environments?limit=100", 200)["items"]
    record = next(e for e in versions if (e["environment_id"], e["version"]) == ("gsm8k-tr", "v2"))
    assert record["status"] == "Registered"
    owner = console.owner.expect("GET", f"/connections/{console.accepting_connection}", 200)["owner"]
    assert record["published_by"] == owner
    card = outcome.get_by_role("article", name="gsm8k-tr v2")
    expect(card).to_contain_text(", ".join(record["criteria"]))
    expect(card).to_contain_text(record["columns"][0]["title"])
    expect(card).to_contain_text(f"0: {record['phases'][0]['name']}")
    page = tab.open("/environments")
    expect(page.get_by_role("article", name="gsm8k-tr v2")).to_contain_text("Registered")
    assert tab.errors == []


def test_a_rejected_bundle_shows_its_reason(tab: Page, console: Console, tmp_path: Path) -> None:
    # Given a bundle whose competition.yaml is not YAML
    bundle = tmp_path / "broken.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        archive.writestr("competition.yaml", "title: [unclosed\n")
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments")
    # When it is published from the page
    _publish(page, "broken-bundle", "v1", bundle)
    # Then the page says it was rejected, with the API's reasons as its headline
    outcome = page.locator("#publish-outcome")
    expect(outcome.get_by_role("status")).to_have_text(
        "broken-bundle v1 is Rejected.", timeout=REGISTRATION_MS
    )
    versions = console.owner.expect("GET", "/environments?limit=100", 200)["items"]
    record = next(e for e in versions if e["environment_id"] == "broken-bundle")
    assert record["status"] == "Rejected" and record["problems"]
    problems = outcome.locator("ul.problems li")
    expect(problems).to_have_text(record["problems"])
    page = tab.open("/environments")
    expect(page.get_by_role("article", name="broken-bundle v1").locator(".headline")).to_contain_text(
        record["problems"][0]
    )


def test_the_environments_list_names_each_owner_and_publisher_group(
    tab: Page, console: Console, browser: Any
) -> None:
    # Given the example environment its owner published, now naming a publisher group
    owner = console.owner.expect("GET", f"/connections/{console.accepting_connection}", 200)["owner"]
    console.owner.expect(
        "POST",
        "/environments",
        201,
        {"environment_id": "gsm8k-tr", "version": "v-unpublished", "publisher_group": "math-team"},
    )
    listed = console.owner.expect("GET", "/environments?limit=100", 200)["items"]
    record = next(e for e in listed if (e["environment_id"], e["version"]) == ("gsm8k-tr", "v1"))
    assert (record["owner"], record["publisher_group"]) == (owner, "math-team")

    # When its owner opens the Environments page
    tab.sign_in(DEMO_USER)
    card = tab.open("/environments").get_by_role("article", name="gsm8k-tr v1")

    # Then the card names the owner (as you) and the group the API returns
    facts = card.locator("dl.facts")
    expect(facts.locator("dt", has_text="Owner").locator("+ dd")).to_have_text(f"you ({owner})")
    expect(facts.locator("dt", has_text="Publisher group").locator("+ dd")).to_have_text("math-team")
    # and another signed-in user sees the same owner, by id
    other = Page(browser.new_context().new_page(), console)
    try:
        other.sign_in(STRANGER)
        card = other.open("/environments").get_by_role("article", name="gsm8k-tr v1")
        expect(card.locator("dt", has_text="Owner").locator("+ dd")).to_have_text(owner)
        expect(card.locator("dt", has_text="Publisher group").locator("+ dd")).to_have_text("math-team")
    finally:
        other.page.context.close()
    assert tab.errors == []


def test_a_run_started_from_a_version_with_an_uploaded_submission_is_followed_to_completed(
    tab: Page, console: Console
) -> None:
    # Given the registered example version on the Environments page, and the demo's submission file
    submission = EXAMPLES / "gsm8k-tr" / "submission" / "predictions.json"
    demo_run = console.owner.expect("GET", f"/runs/{console.run_id}", 200)
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments")
    # When a run is started from it with the file chosen in the page's picker
    page.get_by_role("link", name="Start a run of gsm8k-tr v1").click()
    page.get_by_role("heading", name="Start a run of gsm8k-tr v1").wait_for()
    page.get_by_label("Model name").fill("uploaded-from-the-console")
    page.get_by_label("Submission file").set_input_files(submission)
    page.get_by_role("button", name="Start run").click()

    # Then the browser's upload is ingested and scored, and the run's page follows it to Completed
    page.wait_for_url(re.compile(r".*#/runs/[0-9a-f]{32}$"))
    run_id = page.url.rsplit("/", 1)[1]
    sidebar = page.get_by_role("complementary", name="Run details")
    expect(sidebar.locator(".status")).to_have_text("Completed", timeout=REGISTRATION_MS)
    run = console.owner.expect("GET", f"/runs/{run_id}", 200)
    assert run["status"] == "Completed"
    assert (run["model"], run["submission_filename"]) == ("uploaded-from-the-console", "predictions.json")
    # the same file as the demo's run scores the same
    assert run["overall_score"] == demo_run["overall_score"]
    assert tab.errors == []


def test_a_run_the_api_refuses_shows_its_sentence_and_starts_nothing(
    tab: Page, console: Console, tmp_path: Path
) -> None:
    # Given a submission whose file name the API does not take
    badly_named = tmp_path / "my predictions.json"
    badly_named.write_bytes((EXAMPLES / "gsm8k-tr" / "submission" / "predictions.json").read_bytes())
    before = console.owner.expect("GET", "/runs?environment_id=gsm8k-tr&limit=100", 200)["items"]
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments/gsm8k-tr/v1/run")
    page.get_by_label("Model name").fill("refused")
    page.get_by_label("Submission file").set_input_files(badly_named)
    # When Start run is pressed
    page.get_by_role("button", name="Start run").click()
    # Then the API's reason is shown once, under the label of the field it names, and no run was created
    status, answer = console.owner.call(
        "POST",
        "/runs",
        {"environment_id": "gsm8k-tr", "version": "v1", "model": "refused", "filename": badly_named.name},
    )
    assert status == 422 and [p["field"] for p in answer["errors"]] == ["filename"]
    alert = page.locator("#run-outcome [role=alert]")
    expect(alert.locator("li")).to_have_text([f"Submission file: {answer['errors'][0]['message']}"])
    expect(alert).not_to_contain_text(answer["message"])
    assert console.owner.expect("GET", "/runs?environment_id=gsm8k-tr&limit=100", 200)["items"] == before
    assert "/run" in page.url and "#/runs/" not in page.url


def test_a_refused_limit_is_named_by_its_label_and_the_connection_by_its_name(
    tab: Page, console: Console
) -> None:
    # Given a connection whose quota allows two requests at once
    capped = console.owner.expect(
        "POST",
        "/connections",
        201,
        {
            "name": "capped",
            "provider": "openai-compatible",
            "base_url": "https://api.together.xyz/v1",
            "secret_arn": SECRET_ARN,
            "limits": {"max_in_flight": 2},
        },
    )
    try:
        page, form = _live_run_form(
            tab, "too eager", capped["connection_id"], "meta-llama/Llama-3-8b-chat-hf"
        )
        # When a run through it asks for five
        form.get_by_label("Requests at once").fill("5")
        form.get_by_role("button", name="Start run").click()
        # Then the refusal names the form's field and the connection as the page shows them
        alert = page.locator("#run-outcome [role=alert]")
        expect(alert).to_have_text(
            "Requests at once is 5, above the bound of 2 that connection \u201ccapped\u201d sets: ask for at "
            "most 2, or leave it out to use 2"
        )
    finally:
        console.owner.expect("DELETE", f"/connections/{capped['connection_id']}", 204)


def _live_run_form(tab: Page, model_name: str, connection_id: str, model_id: str) -> tuple[Any, Any]:
    """Signed in as the demo user, gsm8k-tr v1's start-a-run form filled for a live model of a connection."""
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments/gsm8k-tr/v1/run")
    form = page.get_by_role("form", name="Start a run")
    form.get_by_label("A live model through one of your connections").check()
    form.get_by_label("Model name").fill(model_name)
    form.get_by_label("Connection", exact=True).select_option(connection_id)
    form.get_by_label("Model id").fill(model_id)
    return page, form


def test_a_batch_run_is_asked_for_from_the_form_and_refused_by_a_provider_without_batch(
    tab: Page, console: Console
) -> None:
    # Given a SageMaker connection, whose endpoints answer a request at a time
    endpoint = console.owner.expect(
        "POST",
        "/connections",
        201,
        {
            "name": "endpoint",
            "provider": "sagemaker",
            "region": "us-east-1",
            "role_arn": f"arn:aws:iam::{ACCOUNT_ID}:role/benchgen-training",
            "endpoint_name": "my-endpoint",
        },
    )
    try:
        page, form = _live_run_form(tab, "asked in batch", endpoint["connection_id"], "my-model")
        # When its run is asked for in batch
        form.get_by_label("Inference mode").select_option("batch")
        form.get_by_role("button", name="Start run").click()
        # Then the API's refusal says why, in the form's words, and which option serves instead
        expect(page.locator("#run-outcome [role=alert]")).to_have_text(
            "Inference mode batch: a SageMaker endpoint has no batch inference API for live runs: set "
            "Inference mode to on_demand (its cases are asked concurrently, up to Requests at once), or "
            "serve the model on Bedrock or an OpenAI-compatible host with a Batch API for batch runs"
        )
    finally:
        console.owner.expect("DELETE", f"/connections/{endpoint['connection_id']}", 204)


def test_a_rejected_version_offers_no_run(tab: Page, console: Console) -> None:
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments/broken-bundle/v1/run")
    expect(page.get_by_role("alert")).to_have_text(
        "broken-bundle v1 is Rejected: runs start only from a registered version"
    )
    expect(page.get_by_role("button", name="Start run")).to_have_count(0)
    expect(page.get_by_role("link", name="Back to Environments")).to_be_visible()


def _count(page: Any, noun: str) -> Any:
    return page.get_by_role("navigation", name=f"Pages of {noun}").locator(".count")


def test_every_list_pages_past_its_first_page_and_says_how_many(tab: Page, console: Console) -> None:
    tab.sign_in(DEMO_USER)
    # Runs, one a page: the first page says there are more, the next shows another run
    page = tab.open("/runs?limit=1")
    expect(_count(page, "runs")).to_have_text("Runs 1–1, more on the next page")
    first = page.get_by_role("table", name="Runs").locator("tbody td:first-child").inner_text()
    page.get_by_role("button", name="Next page").click()
    expect(_count(page, "runs")).to_contain_text("Runs 2–2")
    expect(page.get_by_role("table", name="Runs").locator("tbody td:first-child")).not_to_have_text(first)
    page.get_by_role("button", name="First page").click()
    expect(_count(page, "runs")).to_have_text("Runs 1–1, more on the next page")

    # The Dataset tab's examples, 25 a page, with the split's count in its tabs
    preparation = console.owner.expect("GET", f"/preparations/{console.preparation_id}", 200)
    train = preparation["splits"]["train"]
    assert train > 25, "the demo's preparation has more train examples than a page"
    page = tab.open(f"/workspace/{console.preparation_id}/dataset")
    expect(_count(page, "train examples")).to_have_text("Train examples 1–25, more on the next page")
    first_example = page.locator("article.example h3").first.inner_text()
    page.get_by_role("button", name="Next page").click()
    expect(_count(page, "train examples")).to_contain_text("Train examples 26–")
    expect(page.locator("article.example h3").first).not_to_have_text(first_example)

    # The datasets list says how many it shows
    page = tab.open("/datasets")
    expect(_count(page, "datasets")).to_contain_text("dataset")

    # The workspace's packages keep their Download link when the page is loaded again
    page = tab.open(f"/workspace/{console.preparation_id}/overview")
    page.reload()
    packages = page.get_by_role("list", name="Packages")
    expect(packages.get_by_role("link", name="Download package")).to_have_count(1)
    expect(packages).to_contain_text(re.compile(r"\d+(\.\d)? KB"))
    assert tab.errors == []


def _run_copy(console: Console, suffix: str, **fields: str | None) -> str:
    """A copy of the demo's run without its artifact, in another artifact state, written where the
    pipeline writes runs; ``suffix`` (four hex digits) ends its id."""
    dynamodb = console.cloud.client("dynamodb")
    table = console.cloud.environment["RUNS_TABLE"]
    item = dynamodb.get_item(TableName=table, Key={"run_id": {"S": console.run_id}})["Item"]
    copy_id = console.run_id[:-4] + suffix
    item["run_id"] = {"S": copy_id}
    for name in ("dataset_id", "dataset_name"):
        item.pop(name, None)
    item["files"]["M"].pop(RunOutput.FINETUNE_ARTIFACT.value, None)
    # Created a moment later, as another run would be (two items with one GSI sort key confuse moto).
    item["created_at"] = {"S": item["created_at"]["S"].replace("Z", "").rstrip("0") + f"{int(suffix, 16)}Z"}
    for name, value in fields.items():
        if value is None:
            item.pop(name, None)
        else:
            item[name] = {"S": value}
    dynamodb.put_item(TableName=table, Item=item)
    return copy_id


def test_each_fine_tune_panel_state_has_its_own_sentence(tab: Page, console: Console) -> None:
    nothing_wrong = (
        "the run left no case to train on: the model got none wrong and the selection adds no others"
    )
    states = {
        _run_copy(console, "0e01", artifact_status="NotEmitted", artifact_reason=nothing_wrong): (
            f"No dataset: {nothing_wrong}."
        ),
        _run_copy(
            console, "0e02", artifact_status="Failed", artifact_reason="the artifact could not be uploaded"
        ): "No dataset: building the fine-tune artifact failed (the artifact could not be uploaded).",
        _run_copy(console, "0e03", artifact_status=None, artifact_reason=None): (
            "No dataset was recorded for this run."
        ),
    }
    tab.sign_in(DEMO_USER)
    for run_id, sentence in states.items():
        page = tab.open(f"/runs/{run_id}")
        panel = page.get_by_role("region", name="Fine-tune Dataset")
        expect(panel.locator("p")).to_have_text([sentence])


def _with_summary(console: Console, run_id: str, name: str, summary: Any) -> None:
    """Give the run the summary a live run's steps record under ``name`` (``inference``, ``batch``,
    ``progress``), or any other field its steps set (``status``)."""
    dynamodb = console.cloud.client("dynamodb")
    table = console.cloud.environment["RUNS_TABLE"]
    value = TypeSerializer().serialize(json.loads(json.dumps(summary), parse_float=Decimal))
    dynamodb.update_item(
        TableName=table,
        Key={"run_id": {"S": run_id}},
        UpdateExpression="SET #summary = :summary",
        ExpressionAttributeNames={"#summary": name},
        ExpressionAttributeValues={":summary": value},
    )


def test_a_live_runs_page_shows_its_tokens_and_their_cost_or_that_its_connection_names_no_prices(
    tab: Page, console: Console
) -> None:
    # Given two live runs' summaries: one priced on demand, one whose connection named no prices
    counts = {"cases": 40, "answered": 39, "unanswered": 1, "unanswered_reasons": ["en-3: timed out"]}
    tokens = {"input_tokens": 12_345, "output_tokens": 6_789, "cases_without_tokens": 1}
    priced = _run_copy(console, "0f01")
    cost = {"currency": "USD", "mode": "on_demand", "input_cost": 0.5, "output_cost": 1.25, "total": 1.75}
    _with_summary(console, priced, "inference", {**counts, **tokens, "cost": cost})
    unpriced = _run_copy(console, "0f02")
    _with_summary(
        console, unpriced, "inference", {**counts, **tokens, "cost_note": "no prices on the connection"}
    )
    tab.sign_in(DEMO_USER)

    # When each run's page is opened, then its Inference panel says what was asked and what it cost
    page = tab.open(f"/runs/{priced}")
    panel = page.get_by_role("region", name="Inference")
    expect(panel.locator("dd")).to_have_text(["39 of 40", "12,345", "6,789", "1", "$1.75 (on-demand, USD)"])
    page = tab.open(f"/runs/{unpriced}")
    panel = page.get_by_role("region", name="Inference")
    expect(panel.locator("dd").last).to_have_text("no prices on the connection")
    # and a reasoning model's run says how many of its output tokens were reasoning
    reasoned = _run_copy(console, "0f04")
    _with_summary(
        console, reasoned, "inference", {**counts, **tokens, "reasoning_tokens": 4_321, "cost": cost}
    )
    page = tab.open(f"/runs/{reasoned}")
    panel = page.get_by_role("region", name="Inference")
    expect(panel.locator("dd")).to_have_text(
        ["39 of 40", "12,345", "6,789", "4,321", "1", "$1.75 (on-demand, USD)"]
    )
    # and a run that asked no model has no such panel
    page = tab.open(f"/runs/{console.run_id}")
    expect(page.get_by_role("region", name="Fine-tune Dataset")).to_be_visible()
    expect(page.get_by_role("region", name="Inference")).to_have_count(0)
    assert tab.errors == []


def test_a_batch_runs_page_lists_its_provider_jobs_with_their_status_and_counts(
    tab: Page, console: Console
) -> None:
    # Given a live run answered by two Bedrock batch jobs, one done with a failed record, one not yet sent
    run_id = _run_copy(console, "0f03")
    job_arn = "arn:aws:bedrock:us-east-1:123456789012:model-invocation-job/abc123def456"
    done = {
        "name": "run-0f03-1",
        "first_record": 0,
        "records": 150,
        "job_id": job_arn,
        "status": "PartiallyCompleted",
    }
    _with_summary(
        console,
        run_id,
        "batch",
        {
            "jobs": [
                {**done, "succeeded": 149, "failed": 1, "message": "1 record failed"},
                {"name": "run-0f03-2", "first_record": 150, "records": 150, "status": "NotSubmitted"},
            ],
            "case_shards": 3,
            "polls": 4,
        },
    )
    tab.sign_in(DEMO_USER)

    # When its page is opened, then the Batch jobs panel lists each job as the provider reported it
    page = tab.open(f"/runs/{run_id}")
    panel = page.get_by_role("region", name="Batch jobs")
    expect(panel.locator("p").first).to_have_text("2 jobs at the provider, looked at 4 times.")
    rows = panel.locator("tbody tr")
    expect(rows.nth(0).locator("td")).to_have_text(
        ["run-0f03-1", job_arn, "PartiallyCompleted: 1 record failed", "150", "149", "1"]
    )
    expect(rows.nth(1).locator("td")).to_have_text(
        ["run-0f03-2", "not submitted", "NotSubmitted", "150", "not yet", "not yet"]
    )
    # and a run asked on demand has no such panel
    page = tab.open(f"/runs/{console.run_id}")
    expect(page.get_by_role("region", name="Fine-tune Dataset")).to_be_visible()
    expect(page.get_by_role("region", name="Batch jobs")).to_have_count(0)
    assert tab.errors == []


def test_a_going_live_runs_page_shows_what_it_has_asked_and_waits_for(tab: Page, console: Console) -> None:
    # Given a live run Running, whose steps last reported 40 cases, 12 asked, 7 answered, 1 given up on
    run_id = _run_copy(console, "0f04", status="Running", phase="Inference")
    progress = {
        "waiting_for": "the model's answers to the run's cases",
        "cases": 40,
        "asked": 12,
        "answered": 7,
        "unanswered": 1,
        "call_deadline": "2026-06-01T12:00:30.000000Z",
        "updated_at": "2026-06-01T12:00:00.000000Z",
    }
    _with_summary(console, run_id, "progress", progress)
    assert console.owner.expect("GET", f"/runs/{run_id}", 200)["progress"]["waiting"] == 4
    tab.sign_in(DEMO_USER)

    # When its page is opened, then the Progress panel says what it asked and what it waits for
    page = tab.open(f"/runs/{run_id}")
    panel = page.get_by_role("region", name="Progress")
    expect(panel.locator(".waiting-for")).to_have_text("Waiting for the model's answers to the run's cases.")
    labels = ["Cases", "Asked", "Answered", "Given up on", "Waiting for an answer", "Latest call answers by"]
    expect(panel.locator("dt")).to_have_text([*labels, "As of"])
    expect(panel.locator("dd")).to_have_text(
        ["40", "12", "7", "1", "4", "2026-06-01 12:00:30 UTC", "2026-06-01 12:00:00 UTC"]
    )
    # and once the run has ended, the panel is gone
    _with_summary(console, run_id, "status", "Completed")
    expect(page.get_by_role("region", name="Progress")).to_have_count(0, timeout=10_000)
    assert tab.errors == []


def test_a_batch_runs_page_says_when_its_jobs_are_looked_at_next(tab: Page, console: Console) -> None:
    # Given a batch run Running whose poll step recorded its next look
    run_id = _run_copy(console, "0f05", status="Running", phase="Inference")
    job = {"name": "run-0f05-1", "first_record": 0, "records": 150, "job_id": "job-1", "status": "InProgress"}
    batch = {"jobs": [job], "case_shards": 1, "polls": 2, "next_poll_at": "2026-06-01T12:05:00Z"}
    _with_summary(console, run_id, "batch", batch)
    shown = console.owner.expect("GET", f"/runs/{run_id}", 200)["batch"]
    assert shown["next_poll_at"] == "2026-06-01T12:05:00Z"
    tab.sign_in(DEMO_USER)

    # When its page is opened, then the Batch jobs panel says when the provider is asked again
    page = tab.open(f"/runs/{run_id}")
    panel = page.get_by_role("region", name="Batch jobs")
    expect(panel.locator(".next-poll")).to_have_text("Next look at the provider: 2026-06-01 12:05:00 UTC.")
    # and once no look is coming, it says nothing of one
    _with_summary(console, run_id, "batch", {**batch, "next_poll_at": None})
    expect(panel.locator(".next-poll")).to_have_count(0, timeout=10_000)
    assert tab.errors == []


def test_pages_are_titled_by_the_names_people_know_their_ids_second(browser: Any, console: Console) -> None:
    run = console.owner.expect("GET", f"/runs/{console.run_id}", 200)
    preparation = console.owner.expect("GET", f"/preparations/{console.preparation_id}", 200)
    dataset = console.owner.expect("GET", f"/datasets/{console.dataset_id}", 200)
    environment = f"{run['environment_id']} {run['environment_version']}"
    headings = {
        f"/runs/{console.run_id}": f"{run['model']} on {environment}",
        f"/workspace/{console.preparation_id}/overview": (
            f"{environment}: {preparation['base_model']}, {preparation['method']}"
        ),
        f"/datasets/{console.dataset_id}": f"{dataset['name']} Benchmark",
    }
    ids = (console.run_id, console.preparation_id, console.dataset_id)
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        try:
            tab = Page(context.new_page(), console)
            tab.sign_in(DEMO_USER)
            # Each page's heading is the name people gave or know, and no id
            for route, heading in headings.items():
                page = tab.open(route)
                expect(page.locator("main h1")).to_have_text(heading)
                assert not any(i in page.locator("main h1").inner_text() for i in ids), route
            # the workspaces list names each by its environment, model and method, the id beneath
            page = tab.open("/workspace")
            link = page.locator(f"a[href='#/workspace/{console.preparation_id}']")
            expect(link).to_have_text(headings[f"/workspace/{console.preparation_id}/overview"])
            # Datasets of one generated name are told apart beside the name: when, how many, which version
            page = tab.open("/datasets")
            row = (
                page.get_by_role("table", name="Datasets")
                .locator("tbody tr")
                .filter(has=page.locator(f"a[href='#/datasets/{console.dataset_id}']"))
            )
            distinction = row.locator(".distinction")
            expect(distinction).to_contain_text(f"{dataset['example_count']} examples")
            expect(distinction).to_contain_text(environment)
            expect(distinction).to_contain_text(f"run {dataset['run_id'][:8]}")
            box = distinction.bounding_box()
            assert box["x"] + box["width"] <= width
            told = distinction.inner_text()
            # and so are Train's options, each under its name
            page = tab.open("/train")
            option = page.locator(
                f"#train-dataset optgroup[label='{dataset['name']}'] option[value='{console.dataset_id}']"
            )
            expect(option).to_have_text(told)
            assert tab.errors == []
        finally:
            context.close()


def test_an_unknown_run_says_so_and_leads_back_to_the_runs(tab: Page, console: Console) -> None:
    tab.sign_in(DEMO_USER)
    page = tab.open("/runs/0123456789abcdef0123456789abcdef")
    expect(page.get_by_role("alert")).to_contain_text("0123456789abcdef0123456789abcdef")
    page.get_by_role("link", name="Back to Runs").click()
    expect(page.get_by_role("heading", name="Runs", exact=True)).to_be_visible()


WIDTHS = (390, 1440)


def test_every_page_fits_a_phone_and_a_wide_screen_and_passes_axe(browser: Any, console: Console) -> None:
    routes = (
        "/runs",
        f"/runs/{console.run_id}",
        "/runs/0123456789abcdef0123456789abcdef",
        "/datasets",
        f"/datasets/{console.dataset_id}",
        f"/train?dataset={console.dataset_id}",
        "/training-runs",
        "/workspace",
        f"/workspace/{console.preparation_id}/overview",
        f"/workspace/{console.preparation_id}/dataset",
        f"/workspace/{console.preparation_id}/coverage",
        f"/workspace/{console.preparation_id}/results",
        "/connections",
        f"/connections/{console.accepting_connection}",
        "/environments",
        "/environments/gsm8k-tr/v1/run",
    )
    overflowing: dict[str, int] = {}
    violations: dict[str, list[str]] = {}
    for width in WIDTHS:
        context = browser.new_context(viewport={"width": width, "height": 900})
        try:
            tab = Page(context.new_page(), console)
            tab.sign_in(DEMO_USER)
            # the signed-in user's address is on screen at every width
            expect(tab.page.locator("#who")).to_contain_text(DEMO_USER)
            assert tab.page.locator("#who").bounding_box()["x"] + 10 < width
            for route in routes:
                page = tab.open(route)
                page.locator("main h1").first.wait_for()
                # the pages fill in after their first answers (Train's connections, a run's report)
                page.wait_for_timeout(500)
                scroll = page.evaluate("() => document.documentElement.scrollWidth")
                if scroll > width:
                    overflowing[f"{route} at {width}px"] = scroll
                found = tab.axe_violations()
                if found:
                    violations[f"{route} at {width}px"] = [v["id"] for v in found]
        finally:
            context.close()
    assert overflowing == {}
    assert violations == {}
