"""The console in Debian's Chromium, against a local cloud that has been through the demo's run.

One local cloud (a moto server, so the browser can load presigned URLs) serves the whole module: the demo
drives it once (an environment, a run, a preparation, a package), then the tests read it through the app.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
import yaml
from moto.moto_api._internal.models import moto_api_backend

from benchgen.settings import EVALUATORS_GROUP
from cli.api_client import Api
from cli.demo import EXAMPLES, Progress, _drive
from cli.local import DEMO_USER, demo_password
from localcloud.cloud import LocalCloud
from localcloud.console_server import WEB_DIST, missing_build_message, serve_console
from localcloud.model_server import ExampleModelServer

CHROMIUM = Path("/usr/bin/chromium")
# Without the background-networking flags Chromium keeps trying to reach Google's hosts; as root it needs
# --no-sandbox. Each launch gets a fresh profile (Playwright makes one).
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
STRANGER = "stranger@example.com"
JUDGE_CONNECTION = "house judge"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:together-key-AbCdEf"
AXE = Path(__file__).resolve().parents[2] / "web" / "node_modules" / "axe-core" / "axe.min.js"


@dataclass
class Console:
    url: str
    cloud: LocalCloud
    owner: Api
    stranger: Api
    password: str
    run_id: str
    unsaved_run_id: str
    dataset_id: str
    preparation_id: str
    accepting_connection: str
    refusing_connection: str


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _unsaved_copy(cloud: LocalCloud, run_id: str) -> str:
    """A copy of the run whose automatic save did not happen: its artifact is there, no dataset links it."""
    dynamodb = cloud.client("dynamodb")
    table = cloud.environment["RUNS_TABLE"]
    item = dynamodb.get_item(TableName=table, Key={"run_id": {"S": run_id}})["Item"]
    copy_id = run_id[:-4] + "c0py"
    item["run_id"] = {"S": copy_id}
    for field in ("dataset_id", "dataset_name"):
        item.pop(field, None)
    item["artifact_status"] = {"S": "Pending"}
    # Created a moment later, as a second run would be (two items with one GSI sort key confuse moto).
    item["created_at"] = {"S": item["created_at"]["S"].replace("Z", "").rstrip("0") + "1Z"}
    dynamodb.put_item(TableName=table, Item=item)
    return copy_id


# What the build is made from: a change to any of them after the build means the tests would judge an old app.
WEB_SOURCES = ("src", "index.html", "package.json", "package-lock.json", "tsconfig.json")


def require_current_build() -> None:
    """Fail, naming the fix, when web/dist is missing or older than the sources or the API document."""
    built = WEB_DIST / "index.html"
    if not built.is_file():
        pytest.fail(missing_build_message(WEB_DIST))
    web = WEB_DIST.parent
    sources = [web / name for name in WEB_SOURCES] + [web.parent / "docs" / "openapi.json"]
    files = [f for s in sources for f in ([s] if s.is_file() else s.rglob("*")) if f.is_file()]
    newer = sorted(str(f.relative_to(web.parent)) for f in files if f.stat().st_mtime > built.stat().st_mtime)
    if newer:
        pytest.fail(f"the console's build is older than {', '.join(newer[:3])}: run `make web` first")


@pytest.fixture(scope="module")
def console(
    stack_templates: dict[str, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Console]:
    require_current_build()
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
        os.environ.pop(name, None)
    out = tmp_path_factory.mktemp("demo")
    example = EXAMPLES / "gsm8k-tr"
    submission = sorted((example / "submission").glob("predictions.*"))[0]
    with LocalCloud(stack_templates, mode="server", port=_free_port()) as cloud:
        password = demo_password()
        owner_token = cloud.create_user(DEMO_USER, password, groups=[EVALUATORS_GROUP])
        stranger_token = cloud.create_user(STRANGER, password)
        with cloud.serve_api(access_log=False) as api_server, serve_console(cloud, api_server) as server:
            owner = Api(api_server.url, owner_token)
            summary = _drive(cloud, owner, example, submission, "Qwen2.5-7B-LoRA", out, Progress())
            assert summary["status"] == "Completed", summary
            together = {
                "provider": "openai-compatible",
                "base_url": "https://api.together.xyz/v1",
                "secret_arn": SECRET_ARN,
            }
            accepting = owner.expect("POST", "/connections", 201, {"name": "together", **together})
            # The same provider, its profile narrowed to preference training: a fine-tune dataset's
            # demonstrations are not for it.
            preference_files = [
                p for p in accepting["profile"]["export_profiles"] if p.endswith(("preference", "dpo"))
            ]
            narrowed = {
                **accepting["profile"],
                "methods": ["preference"],
                "export_profiles": preference_files,
            }
            narrowed.pop("limits", None)
            refusing = owner.expect(
                "POST", "/connections", 201, {"name": "preference only", **together, "profile": narrowed}
            )
            yield Console(
                url=server.url,
                cloud=cloud,
                owner=owner,
                stranger=Api(api_server.url, stranger_token),
                password=password,
                run_id=summary["run_id"],
                unsaved_run_id=_unsaved_copy(cloud, summary["run_id"]),
                dataset_id=summary["dataset_id"],
                preparation_id=summary["preparation"]["preparation_id"],
                accepting_connection=accepting["connection_id"],
                refusing_connection=refusing["connection_id"],
            )


@dataclass
class Served:
    """A local cloud served to the browser with the example model server, and its demo user (an evaluator),
    signed in through the API as ``owner``."""

    url: str
    password: str
    cloud: LocalCloud
    models: ExampleModelServer
    owner: Api


@contextmanager
def served_console(context: dict[str, Any] | None = None) -> Iterator[Served]:
    """A fresh local cloud as a moto server (synthesized with ``context``), the example model server, and
    the API and console over them; the demo user an evaluator, and a stranger with the same password."""
    # moto's server keeps its resources in the process after it stops: an earlier module's cloud is gone.
    moto_api_backend.reset()
    with pytest.MonkeyPatch.context() as env:
        for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS"):
            env.delenv(name, raising=False)
        with (
            LocalCloud(mode="server", port=_free_port(), context=context) as cloud,
            ExampleModelServer() as models,
        ):
            password = demo_password()
            token = cloud.create_user(DEMO_USER, password, groups=[EVALUATORS_GROUP])
            cloud.create_user(STRANGER, password)
            with cloud.serve_api(access_log=False) as api_server, serve_console(cloud, api_server) as server:
                yield Served(server.url, password, cloud, models, Api(api_server.url, token))


def judge_connection(served: Served) -> str:
    """The owner's connection, named ``JUDGE_CONNECTION``, to the example model server (whose simulated
    judge judges the judged example); its id."""
    body = {"name": JUDGE_CONNECTION, "provider": "openai-compatible", "base_url": served.models.base_url}
    return str(served.owner.expect("POST", "/connections", 201, body)["connection_id"])


def judged_example(out: Path, connection_id: str, name: str = "judge") -> tuple[Path, dict[str, Any]]:
    """The judged example copied to ``out/name``, its judge reached through ``connection_id``; its
    ``competition.yaml`` as read, for the caller to change and write back (:func:`write_spec`)."""
    example = out / name
    shutil.copytree(EXAMPLES / "judge", example)
    spec = yaml.safe_load((example / "bundle" / "competition.yaml").read_text(encoding="utf-8"))
    spec["judge"]["connection"] = connection_id
    return example, spec


def write_spec(example: Path, spec: dict[str, Any]) -> None:
    (example / "bundle" / "competition.yaml").write_text(
        yaml.safe_dump(spec, sort_keys=False), encoding="utf-8"
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.is_file():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


class Site(Protocol):
    """A served console and the password its users sign in with."""

    url: str
    password: str


class Page:
    """A signed-in tab that records what the browser's console reported as errors."""

    def __init__(self, page: Any, console: Site) -> None:
        self.page = page
        self.console = console
        self.errors: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda error: self.errors.append(str(error)))

    def _on_console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def sign_in(self, user: str) -> None:
        self.page.goto(self.console.url + "/")
        self.page.get_by_label("Email or user name").fill(user)
        self.page.get_by_label("Password").fill(self.console.password)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.get_by_role("link", name="Runs", exact=True).wait_for()

    def open(self, route: str) -> Any:
        self.page.goto(f"{self.console.url}/#{route}")
        return self.page

    def axe_violations(self) -> list[dict[str, Any]]:
        """axe-core's serious and critical violations on the page as it is now."""
        # Evaluated through the DevTools protocol: the page's CSP forbids injected script tags, as it should.
        self.page.evaluate(AXE.read_text(encoding="utf-8") + "\n;undefined")
        found: dict[str, Any] = self.page.evaluate("async () => await axe.run(document)")
        return [v for v in found["violations"] if v["impact"] in ("serious", "critical")]


@pytest.fixture
def tab(browser: Any, console: Console) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = Page(context.new_page(), console)
    yield page
    context.close()


SCREENSHOT_SOURCE = "BenchGen browser test"


def write_screenshot(page: Any, name: str, test: str) -> Path:
    """The page as a PNG under out/browser/, and under docs/ too when BENCHGEN_UPDATE_SCREENSHOTS=1;
    ``test`` names the test that took it, as ``test_<module>.py::<test function>``.

    A tEXt chunk names the test that took it (tests/unit/test_console_screenshots.py checks the committed
    ones carry it), after the IHDR chunk as PNG requires."""
    png = page.screenshot(full_page=True)
    text = f"{SCREENSHOT_SOURCE}\0tests/browser/{test}".encode("latin-1")
    chunk = struct.pack(">I", len(text)) + b"tEXt" + text + struct.pack(">I", zlib.crc32(b"tEXt" + text))
    header_end = 8 + 8 + 13 + 4  # signature, IHDR length and type, IHDR data, CRC
    tagged = png[:header_end] + chunk + png[header_end:]
    target = Path("out/browser") / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(tagged)
    if os.environ.get("BENCHGEN_UPDATE_SCREENSHOTS") == "1":
        (Path(__file__).resolve().parents[2] / "docs" / name).write_bytes(tagged)
    return target
