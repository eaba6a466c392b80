"""The loop tests' shared parts: the local cloud a loop starts, kept up after it so that what the loop
made can be read through the API, and what a reinforcement loop's summary must agree with."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from benchgen.compare.report import Conclusion
from cli.api_client import Api
from cli.local import SignedIn, sign_in_demo_user
from cli.loop import GRPO, REINFORCEMENT_PROFILE, SFT_GRPO, ModelSource, run_loop
from localcloud.cloud import LocalCloud

STEPS = (
    "register_s",
    "base_run_s",
    "package_s",
    "training_s",
    "evaluation_s",
    "reinforcement_package_s",
    "grpo_training_s",
    "grpo_evaluation_s",
    "sft_grpo_training_s",
    "sft_grpo_evaluation_s",
)
# Each leg's own steps, after its name.
LEG_STEPS = ("_training_s", "_evaluation_s")


@dataclass
class Kept:
    """The local clouds a loop started, kept up after it, and the demo user's tokens."""

    clouds: list[LocalCloud] = field(default_factory=list)
    sign_ins: list[SignedIn] = field(default_factory=list)

    @contextmanager
    def api(self) -> Iterator[tuple[LocalCloud, Api]]:
        """The loop's cloud and its REST API as the demo user, to read what the loop made."""
        (cloud,) = self.clouds
        with cloud.serve_api(access_log=False) as server:
            yield cloud, self.sign_ins[0].api(server.url)


@contextmanager
def kept_cloud(monkeypatch: pytest.MonkeyPatch) -> Iterator[Kept]:
    """For as long as the block lasts: the local cloud a loop starts (its own synthesis and settings) is
    kept up after the loop, with the demo user's token; every kept cloud is stopped at the end."""
    kept = Kept()

    class KeptCloud(LocalCloud):
        def __exit__(self, *_: object) -> None:
            kept.clouds.append(self)

    def keep_token(cloud: LocalCloud, password: str) -> SignedIn:
        kept.sign_ins.append(sign_in_demo_user(cloud, password))
        return kept.sign_ins[-1]

    monkeypatch.setattr("localcloud.cloud.LocalCloud", KeptCloud)
    monkeypatch.setattr("cli.loop.sign_in_demo_user", keep_token)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL", "PRESIGN_TTL_SECONDS", "EVALUATION_WAIT_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POWERTOOLS_LOG_LEVEL", "WARNING")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    try:
        yield kept
    finally:
        for cloud in kept.clouds:
            cloud.stop()


def kept_cloud_loop(
    monkeypatch: pytest.MonkeyPatch, source: ModelSource, example: Path, out: Path
) -> tuple[int, dict[str, Any], dict[str, Any]]:
    """The loop's exit code and summary, and (read through the API after it, as the demo user) every
    training run, evaluation report and run the reinforcement legs name, by id."""
    read: dict[str, Any] = {}
    with kept_cloud(monkeypatch) as kept:
        code = run_loop(source, example, out)
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        with kept.api() as (_, api):
            read["package"] = api.expect("GET", f"/packages/{summary['reinforcement_package_id']}", 200)
            for leg in (summary.get("reinforcement") or {}).values():
                read[leg["training_run_id"]] = api.expect(
                    "GET", f"/training-runs/{leg['training_run_id']}", 200
                )
                path = f"/evaluations/{leg['evaluation_id']}/report"
                read[leg["evaluation_id"]] = api.expect("GET", path, 200)["report"]
                read[leg["tuned_run_id"]] = api.expect("GET", f"/runs/{leg['tuned_run_id']}", 200)
    return code, summary, read


def assert_consistent_reinforcement(
    summary: dict[str, Any], read: dict[str, Any], trained: tuple[str, ...] = (GRPO, SFT_GRPO)
) -> None:
    """Every reinforcement step of the ``trained`` legs completed, and the summary agrees with itself and
    with the API: never whether a model improved."""
    steps = [step for step in STEPS if not step.endswith(LEG_STEPS)]
    steps += [f"{leg}{step}" for leg in trained for step in LEG_STEPS]
    assert set(steps) <= set(summary["timings_s"])
    assert all(summary["timings_s"][step] is not None for step in steps)
    package = read["package"]
    assert (package["status"], package["profile"]) == ("Ready", REINFORCEMENT_PROFILE)
    assert package["sha256"] == summary["reinforcement_package_sha256"]
    legs = summary["reinforcement"]
    assert list(legs) == list(trained)
    # GRPO starts from the base model beside the base run; SFT+GRPO from the SFT checkpoint beside its run
    starts = {
        GRPO: (summary["model"], summary["base_run_id"]),
        SFT_GRPO: (summary["result_model"], summary["tuned_run_id"]),
    }
    for name, leg in legs.items():
        assert (leg["base_model"], leg["compared_with_run_id"]) == starts[name]
    models = {summary["model"], summary["result_model"]}
    for leg in legs.values():
        training = read[leg["training_run_id"]]
        # the training run records the method and the model it started from
        assert training["status"] == "Succeeded"
        assert (training["method"], training["base_model"]) == ("reinforcement", leg["base_model"])
        assert training["package_id"] == summary["reinforcement_package_id"]
        assert leg["result_model"] == training["result_model"] and leg["result_model"] not in models
        models.add(leg["result_model"])
        assert read[leg["tuned_run_id"]]["live_model"]["model_id"] == leg["result_model"]
        # the server's reward curve: one mean reward in [0, 1] per logged step
        assert leg["steps"] >= 1 and len(leg["reward_curve"]) == leg["steps"]
        assert all(0.0 <= reward <= 1.0 for reward in leg["reward_curve"])
        assert leg["rollouts_per_s"] > 0
        assert leg["completion_tokens_per_s"] > 0
        # the comparison pairs the same held-out cases, and its counts add up
        comparison, report = leg["comparison"], read[leg["evaluation_id"]]["comparison"]
        assert comparison["verdict"] == leg["verdict"] == report["verdict"]
        assert comparison["verdict"] in {conclusion.value for conclusion in Conclusion}
        assert comparison["paired_cases"] == summary["held_out_cases"]
        assert comparison["paired_cases"] == (
            comparison["fixed_count"]
            + comparison["broken_count"]
            + comparison["both_passed"]
            + comparison["both_failed"]
        )
        assert comparison["accuracy_after"] == pytest.approx(
            (comparison["both_passed"] + comparison["fixed_count"]) / comparison["paired_cases"]
        )
        for side in ("answering_before", "answering_after"):
            assert comparison[side] == report[side]
        assert leg["evaluation_base_run_id"] == leg["compared_with_run_id"]
