"""The loop's simulated models (`benchgen demo --loop`): the example server's
(``localcloud/model_server.py``), started in-process on a loopback port. ``example-base`` answers as the
example submissions do and ``example-tuned`` gets two thirds of its mistakes right. Nothing the loop prints
says anything about a real model, and it says so.

The package is ``bedrock-conversation``, trained through a Bedrock connection on moto's Bedrock model
customization, whose job the local cloud's provider clock moves to Completed; the evaluation asks
``example-tuned`` in the trained model's place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from cli.api_client import Api
from cli.loop import Loop, ModelSource

PACKAGE_PROFILE = "bedrock-conversation"
# A Bedrock base model that takes Nova conversation rows: the example base model is no Bedrock model,
# so the training run names this one explicitly (and the API warns that it overrides the recorded one).
BEDROCK_BASE_MODEL = "amazon.nova-micro-v1:0:128k"
# The role Bedrock would assume to read the training files; on the local cloud nothing assumes it.
TRAINING_ROLE = "arn:aws:iam::{account}:role/benchgen-local-training"
SAMPLING = {"temperature": 0, "max_tokens": 512}

SIMULATED = (
    "The example models are simulated: example-base and example-tuned answer with texts the BenchGen "
    "example generator wrote, no model is involved, and nothing measured here says anything about a real "
    "model."
)
STAND_IN = (
    "A Bedrock custom model answers only once it is deployed (a custom model deployment or provisioned "
    "throughput), and the local cloud has neither: the evaluation asks example-tuned, the example server's "
    "stand-in for the trained model {result_model}."
)
SUMMARY_KEYS = (
    "base_run_id",
    "base_score",
    "dataset_id",
    "preparation_id",
    "package_id",
    "package_sha256",
    "bedrock_connection_id",
    "training_run_id",
    "provider_job_id",
    "provider_job_name",
    "result_model",
    "evaluation_id",
    "evaluation_base_run_id",
    "tuned_run_id",
    "verdict",
    "report_files",
)


class SimulatedModels(ModelSource):
    """``example-base`` and ``example-tuned`` on the example server; the training on moto's Bedrock."""

    connection_name = "simulated example models"
    package_profile = PACKAGE_PROFILE
    verdict_line = (
        "Verdict on the held-out cases, {base} -> {tuned}: {verdict} "
        "(simulated models: this says nothing about a real model)"
    )

    def __init__(self) -> None:
        from localcloud.model_server import BASE_MODEL

        self.model = BASE_MODEL
        self.run_settings = {"sampling": SAMPLING}
        self.training = {"base_model": BEDROCK_BASE_MODEL}

    def cloud_context(self) -> dict[str, Any]:
        from infra.stacks.api import EVALUATION_WAIT_SECONDS

        # The evaluation checks its runs every second here, not every minute: moto's Wait really sleeps.
        return {EVALUATION_WAIT_SECONDS: 1}

    @contextmanager
    def serve(self, loop: Loop) -> Iterator[Callable[[], str]]:
        from localcloud.model_server import ExampleModelServer

        print(SIMULATED, flush=True)
        with ExampleModelServer() as models:

            def ready() -> str:
                loop.progress.step(f"simulated models at {models.base_url}")
                return models.base_url

            yield ready

    def training_connection(self, loop: Loop, api: Api) -> str:
        """A Bedrock connection of its own: the models' connection is openai-compatible."""
        from localcloud.stack_template import ACCOUNT_ID

        connection = api.expect(
            "POST",
            "/connections",
            201,
            {
                "name": "bedrock (local cloud)",
                "provider": "bedrock",
                "region": "us-east-1",
                "role_arn": TRAINING_ROLE.format(account=ACCOUNT_ID),
            },
        )
        loop.found["bedrock_connection_id"] = connection["connection_id"]
        return str(connection["connection_id"])

    def tuned_model(self, loop: Loop) -> str:
        from localcloud.model_server import TUNED_MODEL

        print(STAND_IN.format(result_model=loop.found["result_model"]))
        return TUNED_MODEL

    def summary(self, loop: Loop) -> dict[str, Any]:
        return {
            "models_connection_id": loop.found.get("connection_id"),
            **loop.kept(SUMMARY_KEYS),
            "simulated_models": SIMULATED,
        }
