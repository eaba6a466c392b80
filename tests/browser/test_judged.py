"""A judged run in the console: the judged example registered on a local cloud, its judge the example model
server's simulated judge reached through the owner's connection (calibrated at registration on the
bundle's human-labelled answers), and its submission judged and scored. One case's judge answers twice with
text that is no judgment and holds a ``<script>``: that case is unjudged, and its text is shown as text."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from cli.api_client import Api
from cli.demo import Progress, register_example, submit
from cli.local import DEMO_USER
from localcloud.model_server import Fault
from tests.browser.conftest import (
    JUDGE_CONNECTION,
    Page,
    judge_connection,
    judged_example,
    require_current_build,
    served_console,
    write_spec,
)

UNJUDGED_CASE = "explain-000003"
# What the judge answers about that case, in both of its attempts: no judgment, and a script if rendered.
SCRIPT = "<script>document.body.dataset.injected = 'yes'</script>"
RAW_JUDGE_TEXT = f"I refuse to grade this. {SCRIPT}"


@dataclass
class Judged:
    url: str
    password: str
    owner: Api
    run_id: str
    environment_id: str
    connection_id: str
    uncalibrated_run_id: str
    uncalibrated_environment_id: str


def _people_disagree_on_accurate(example: Path, calibration: str) -> None:
    """The people's labels of ``accurate`` turned over: the judge then agrees poorly with them on it."""
    path = example / "bundle" / calibration
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    for item in items:
        item["labels"]["accurate"] = 1 - item["labels"]["accurate"]
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judged]:
    require_current_build()
    out = tmp_path_factory.mktemp("judged")
    progress = Progress()
    with served_console() as served:
        cloud, owner = served.cloud, served.owner
        connection_id = judge_connection(served)

        def run(example: Path) -> str:
            submission = example / "submission" / "predictions.jsonl"
            run_id, status = submit(
                cloud, owner, example.name, submission, "example-answers", progress, timeout=300
            )
            assert status == "Completed", owner.expect("GET", f"/runs/{run_id}", 200)
            return run_id

        # The example calibrated against people who, on "accurate", say the opposite of its labels
        example, spec = judged_example(out, connection_id)
        write_spec(example, spec)
        _people_disagree_on_accurate(example, spec["judge"]["calibration"])
        register_example(cloud, owner, example, out, progress, timeout=300)
        served.models.faults.add(Fault(case_id=UNJUDGED_CASE, times=2, text=RAW_JUDGE_TEXT))
        run_id = run(example)
        # and a copy of it without human-labelled answers: its judge is not calibrated
        uncalibrated, spec = judged_example(out, connection_id, "judge-uncalibrated")
        del spec["judge"]["calibration"]
        write_spec(uncalibrated, spec)
        register_example(cloud, owner, uncalibrated, out, progress, timeout=300)
        yield Judged(
            url=served.url,
            password=served.password,
            owner=owner,
            run_id=run_id,
            environment_id=example.name,
            connection_id=connection_id,
            uncalibrated_run_id=run(uncalibrated),
            uncalibrated_environment_id=uncalibrated.name,
        )


@pytest.fixture
def tab(browser: Any, judged: Judged) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield Page(context.new_page(), judged)
    context.close()


def _kappa(criterion: dict[str, Any]) -> str:
    return f"{criterion['kappa']:.2f} [{criterion['kappa_low']:.2f}, {criterion['kappa_high']:.2f}]"


def _figures(table: Any, criteria: list[dict[str, Any]]) -> None:
    """Each criterion's row of ``table`` shows the API's figures of it."""
    for criterion in criteria:
        row = table.locator(f'tr[data-criterion="{criterion["criterion"]}"]')
        expect(row.locator("td")).to_have_text(
            [
                str(criterion["n"]),
                f"{100 * criterion['accuracy']:.0f}%",
                _kappa(criterion),
                str(criterion["unjudged"]),
            ]
        )


def _field(region: Any, label: str) -> Any:
    dt = region.locator("dt", has_text=re.compile(f"^{re.escape(label)}$"))
    return dt.locator("xpath=following-sibling::dd[1]")


def _cases(judged: Judged) -> dict[str, dict[str, Any]]:
    """The run's detailed results, each case by its id, as the API's presigned URL serves them."""
    found = judged.owner.expect("GET", f"/runs/{judged.run_id}/detailed-results", 200)
    with urllib.request.urlopen(found["url"]) as answer:
        detailed = json.loads(answer.read())
    return {case["case_id"]: case for case in detailed["cases"]}


def test_a_judged_runs_page_shows_its_judge_its_agreement_with_people_and_its_judging(
    tab: Page, judged: Judged
) -> None:
    run = judged.owner.expect("GET", f"/runs/{judged.run_id}", 200)
    judging, agreement = run["judging"], run["judge"]
    assert agreement["status"] == "measured" and agreement["criteria"]
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{judged.run_id}")
    panel = page.get_by_role("region", name="Judge")
    # the judge: its model, the connection by the name its owner gave it, its family
    expect(_field(panel, "Model")).to_have_text(judging["model_id"])
    expect(_field(panel, "Connection")).to_have_text(f"{JUDGE_CONNECTION} ({judged.connection_id})")
    expect(_field(panel, "Family")).to_have_text(judging["family"] or "not known")
    # an uploaded submission's model has no known family: no same-family warning, and that is said
    expect(_field(panel, "Same family as the judged model")).to_have_text("not known")
    expect(panel.locator(".same-family")).to_have_count(0)
    # its agreement with people beside the scores, per criterion
    _figures(panel.locator("table.agreement-figures"), agreement["criteria"])
    # and a warning for the criterion it agrees poorly on: the one the people's labels were turned over on
    assert agreement["warnings"] == ["this judge agrees poorly with people on accurate"]
    warnings = panel.get_by_role("list", name="Agreement warnings").locator("li")
    expect(warnings).to_have_text(agreement["warnings"])
    # the unjudged case counted apart from those that passed and failed
    counts = run["counts"]
    assert counts["unjudged"] == 1
    expect(_field(panel, "Passed")).to_have_text(str(counts["passed"]))
    expect(_field(panel, "Failed")).to_have_text(str(counts["total"] - counts["passed"] - 1))
    expect(_field(panel, "Unjudged (neither passed nor failed)")).to_have_text("1")
    # the judging: its calls and tokens, the judge's own
    assert (judging["unreadable"], judging["errors"]) == (1, 0)
    expect(_field(panel, "Judged")).to_have_text(f"{judging['judged']} of {judging['cases']} cases")
    expect(_field(panel, "Unreadable answers")).to_have_text("1")
    expect(_field(panel, "Errors (no answer)")).to_have_text("0")
    expect(_field(panel, "Judge calls")).to_have_text(f"{judging['calls']:,}")
    expect(_field(panel, "Judge input tokens")).to_have_text(f"{judging['input_tokens']:,}")
    expect(_field(panel, "Judge output tokens")).to_have_text(f"{judging['output_tokens']:,}")
    assert judging["cost"] is None, "the connection names no prices"
    expect(_field(panel, "Judge cost")).to_have_text(judging["cost_note"])
    expect(panel.get_by_role("list", name="Unjudged cases")).to_contain_text(UNJUDGED_CASE)
    assert tab.axe_violations() == []
    assert tab.errors == []


def test_the_detailed_results_show_scores_on_their_scales_and_the_unjudged_judge_text_as_text(
    tab: Page, judged: Judged
) -> None:
    cases = _cases(judged)
    graded = next(case for case in cases.values() if case.get("criteria"))
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{judged.run_id}")
    report = page.frame_locator("iframe.report")
    # each criterion's score on its scale, and the judge's reason
    graded_row = report.locator("tr", has_text=graded["case_id"])
    for criterion in graded["criteria"]:
        low, high = criterion["scale"]
        shown = f"{criterion['id']} {criterion['score']} on {low}–{high}: {criterion['reason']}"
        expect(graded_row).to_contain_text(shown)
    # the unjudged case: unjudged, why, and the judge's text, its script shown as text and never run
    unjudged_row = report.locator("tr", has_text=UNJUDGED_CASE)
    expect(unjudged_row).to_contain_text("unjudged")
    expect(unjudged_row).to_contain_text("the judge's answer could not be read after 2 attempts")
    expect(unjudged_row).to_contain_text(f"The judge said: {RAW_JUDGE_TEXT}")
    expect(report.locator("body")).not_to_have_attribute("data-injected", "yes")
    expect(report.locator("script")).to_have_count(0)
    assert tab.errors == []


def test_the_environments_page_shows_the_versions_judge_calibration(tab: Page, judged: Judged) -> None:
    found = judged.owner.expect("GET", "/environments", 200)["items"]
    version = next(e for e in found if e["environment_id"] == judged.environment_id)
    calibration = version["judge_calibration"]
    tab.sign_in(DEMO_USER)
    page = tab.open("/environments")
    card = page.get_by_role("article", name=f"{judged.environment_id} {version['version']}")
    expect(card.get_by_text(f"Measured on {calibration['answers']} human-labelled answers")).to_be_visible()
    _figures(card.locator("table.agreement-figures"), calibration["criteria"])
    assert tab.axe_violations() == []
    assert tab.errors == []


def test_a_run_and_a_version_whose_judge_was_never_calibrated_say_so_plainly(
    tab: Page, judged: Judged
) -> None:
    run = judged.owner.expect("GET", f"/runs/{judged.uncalibrated_run_id}", 200)
    assert run["judge"]["uncalibrated"] is True
    tab.sign_in(DEMO_USER)
    page = tab.open(f"/runs/{judged.uncalibrated_run_id}")
    panel = page.get_by_role("region", name="Judge")
    expect(panel.locator(".uncalibrated")).to_have_text("UNCALIBRATED judge: no human-labelled answers.")
    expect(panel.locator("table.agreement-figures")).to_have_count(0)
    page = tab.open("/environments")
    card = page.get_by_role(
        "article", name=f"{judged.uncalibrated_environment_id} {run['environment_version']}"
    )
    expect(card.locator(".uncalibrated")).to_have_text("UNCALIBRATED judge: no human-labelled answers.")
    assert tab.errors == []
