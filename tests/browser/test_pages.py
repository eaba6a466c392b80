"""The console's pages for what only the API used to do: connections and environments."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from cli.demo import EXAMPLES
from cli.local import DEMO_USER
from examplegen.writing import write_bundle_zip
from tests.browser.conftest import SECRET_ARN, Console, Page

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

    # When a key is put where the secret's ARN goes, the API refuses it and the page names the field
    page.get_by_label("Name", exact=True).fill("lab")
    page.get_by_label("Provider", exact=True).select_option("openai-compatible")
    page.get_by_label("Base URL (https)").fill("https://api.example.com/v1")
    page.get_by_label(re.compile("Secrets Manager secret ARN")).fill(A_KEY)
    page.get_by_role("button", name="Create connection").click()
    refusal = page.locator("#connection-outcome [role=alert]")
    expect(refusal).to_contain_text("secret_arn")
    assert A_KEY not in (refusal.text_content() or "")
    assert len(console.owner.expect("GET", "/connections?limit=100", 200)["items"]) == 2

    # and with the secret's ARN it is created, and its page shows what its profile accepts
    page.get_by_label(re.compile("Secrets Manager secret ARN")).fill(SECRET_ARN)
    page.get_by_role("button", name="Create connection").click()
    page.wait_for_url(re.compile(r".*#/connections/conn-[0-9a-f]+$"))
    connection_id = page.url.rsplit("/", 1)[1]
    created = console.owner.expect("GET", f"/connections/{connection_id}", 200)
    assert created["name"] == "lab" and created["secret_arn"] == SECRET_ARN
    facts = page.locator("dl.facts")
    for label, values in (
        ("Training methods", created["profile"]["methods"]),
        ("Model families", created["profile"]["model_families"]),
        ("Export profiles", created["profile"]["export_profiles"]),
    ):
        expect(facts.locator("dt", has_text=label).locator("+ dd")).to_have_text(", ".join(values))
    expect(facts).to_contain_text(SECRET_ARN)

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
