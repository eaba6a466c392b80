"""The console's pages for what only the API used to do: connections and environments."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from cli.local import DEMO_USER
from tests.browser.conftest import SECRET_ARN, Console, Page

A_KEY = "sk-live-0123456789abcdef"


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
