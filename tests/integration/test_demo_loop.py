"""`benchgen demo --loop` on the local cloud: what a user sees, and that every id it names exists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.cli.demo import EXAMPLES, Api, Progress
from infra.cli.local import demo_password, sign_in_demo_user
from infra.cli.loop import PACKAGE_PROFILE, Loop
from infra.local.cloud import LocalCloud
from infra.local.model_server import BASE_MODEL, ExampleModelServer


@pytest.fixture
def signed_in(cloud: LocalCloud) -> Iterator[Api]:
    with cloud.serve_api(access_log=False) as server:
        yield Api(server.url, sign_in_demo_user(cloud, demo_password()))


def test_the_loops_first_steps_save_the_live_runs_dataset_and_package_it_for_bedrock(
    cloud: LocalCloud, signed_in: Api, tmp_path: Path
) -> None:
    # Given the local cloud, the simulated example models and the demo user signed in
    api = signed_in
    loop = Loop(tmp_path, Progress())
    with ExampleModelServer() as models:
        # When the loop's first two steps run on the demo's example environment
        from infra.cli.demo import register_example

        environment_id = register_example(cloud, api, EXAMPLES / "gsm8k-tr", tmp_path, loop.progress)
        loop.base_run(cloud, api, environment_id, models.base_url)
        loop.package(api, environment_id)
    summary = loop.summary()

    # Then the base run is a live run of example-base through the openai-compatible connection
    run = api.expect("GET", f"/runs/{summary['base_run_id']}", 200)
    assert run["status"] == "Completed"
    assert run["live_model"] == {
        "connection_id": summary["models_connection_id"],
        "provider": "openai-compatible",
        "model_id": BASE_MODEL,
    }
    assert summary["base_score"] == run["overall_score"] == pytest.approx(0.7)
    connection = api.expect("GET", f"/connections/{summary['models_connection_id']}", 200)
    assert connection["base_url"] == models.base_url
    # and its dataset was saved, prepared and packaged in the Bedrock conversation profile
    assert api.expect("GET", f"/datasets/{summary['dataset_id']}", 200)["run_id"] == run["run_id"]
    preparation = api.expect("GET", f"/preparations/{summary['preparation_id']}", 200)
    assert (preparation["status"], preparation["run_ids"]) == ("Ready", [run["run_id"]])
    package = api.expect("GET", f"/packages/{summary['package_id']}", 200)
    assert (package["status"], package["profile"]) == ("Ready", PACKAGE_PROFILE)
    assert package["preparation_id"] == preparation["preparation_id"]
    assert package["sha256"] == summary["package_sha256"]
    # and nothing later has happened yet: the summary says so with no ids
    assert (summary["training_run_id"], summary["evaluation_id"], summary["verdict"]) == (None, None, None)
