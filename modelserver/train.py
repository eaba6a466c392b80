"""One fine-tuning job's training, run as its own process (``python -m modelserver.train JOB_FOLDER``) so
that a cancel can kill it and running out of memory ends the job, not the server.

It reads ``spec.json`` from the job folder, trains with TRL's SFTTrainer on the rows, or its GRPOTrainer
rewarded by the job's grader for a reinforcement job (full fine-tuning, on the GPU when torch sees one,
otherwise the CPU; a GRPO job's answers are sampled by the server's engine, see
:mod:`modelserver.rollouts`), writes ``progress.json`` after each logged step, and
saves the checkpoint into ``spec["output"]``. On failure it writes ``failure.json`` with a sentence for
the user and exits with :data:`FAILED`.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from modelserver import engines, grader, weights
from modelserver.rows import REINFORCEMENT, SFT, BadRows, read_rows

FAILED = 3
SPEC = "spec.json"
PROGRESS = "progress.json"
FAILURE = "failure.json"


def write_json(path: Path, value: Any) -> None:
    """``value`` as the whole of ``path``, never half written (a reader sees the old file or the new)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(value), encoding="utf-8")
    os.replace(partial, path)


def build(job: Path, spec: dict[str, Any], *, callbacks: Sequence[Any] = (), **settings: Any) -> Any:
    """The trainer of ``spec``'s job (SFT, or GRPO for a reinforcement job), writing ``progress.json`` into
    ``job``; ``settings`` override the training arguments chosen here (the benches compare recipes through
    them)."""
    method = spec.get("method", SFT)
    train_rows = read_rows(Path(spec["training_file"]), spec["training_name"], method)
    validation = (
        read_rows(Path(spec["validation_file"]), spec["validation_name"], method)
        if spec.get("validation_file")
        else None
    )
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    hyper = spec["hyperparameters"]
    gpu = torch.cuda.is_available()
    tokenizer = AutoTokenizer.from_pretrained(spec["base_folder"], local_files_only=True)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(spec["base_folder"], local_files_only=True, dtype="auto")
    arguments: dict[str, Any] = {
        "output_dir": str(job / "trainer"),
        "num_train_epochs": hyper["n_epochs"],
        "learning_rate": hyper["learning_rate"],
        "per_device_train_batch_size": hyper["batch_size"],
        "per_device_eval_batch_size": hyper["batch_size"],
        # A float below 1 is a share of the steps (transformers 5 reads a warmup ratio this way).
        "warmup_steps": min(float(hyper.get("warmup_ratio", 0)), 0.999),
        "eval_strategy": "epoch" if validation else "no",
        "save_strategy": "no",
        "logging_steps": 1,
        "report_to": "none",
        "disable_tqdm": True,
        "seed": hyper.get("seed", 42),
        "use_cpu": not gpu,
        # bf16 autocast where the hardware computes it (8 SFT steps of SmolLM2-135M-Instruct on a CPU with
        # avx512_bf16: x0.78 of float32's time, bench/README.md); float32 elsewhere.
        "bf16": weights.bf16_in_hardware(),
        "dataloader_pin_memory": gpu,
        # TRL recomputes each layer's activations in the backward pass by default, a third more compute to
        # save memory that a model this server trains on its rows does not need.
        "activation_checkpointing": False,
    }
    datasets = {
        "train_dataset": Dataset.from_list(train_rows),
        "eval_dataset": Dataset.from_list(validation) if validation else None,
    }
    common = {"model": model, "processing_class": tokenizer, **datasets}
    if method == REINFORCEMENT:
        return _grpo(job, spec, arguments | settings, common, callbacks)
    from trl.trainer.sft_config import SFTConfig
    from trl.trainer.sft_trainer import SFTTrainer

    # Batches of rows of like length (shuffled in groups of about a hundred, each sorted by length), as a
    # shuffled batch of 8 of the real loop's rows is 19% padding: an epoch of the example's package took
    # x0.85 of shuffled batches' time, with the same verdict; the real loop's verdict held too, at 53.4%
    # held-out accuracy against shuffled batches' 60.2% in one run each (bench/README.md).
    sft = {"train_sampling_strategy": "group_by_length"}
    return SFTTrainer(
        args=SFTConfig(**(arguments | sft | settings)),
        callbacks=[_progress(job, rollouts_per_step=None), *callbacks],
        **common,
    )


def _grpo(
    job: Path,
    spec: dict[str, Any],
    arguments: dict[str, Any],
    common: dict[str, Any],
    callbacks: Sequence[Any],
) -> Any:
    """TRL's GRPOTrainer: ``batch_size`` prompts a step, each answered ``num_generations`` times (TRL's batch
    counts completions), every answer rewarded by the job's grader. The answers are sampled by CTranslate2
    from the policy as it is at each step where the server generates with CTranslate2 (the engine it was
    started with, chosen as it chose it), otherwise by TRL's transformers generate."""
    from trl.trainer.grpo_config import GRPOConfig
    from trl.trainer.grpo_trainer import GRPOTrainer

    from modelserver.rollouts import policy_rollouts

    hyper = spec["hyperparameters"]
    engine = engines.choose(spec.get("engine", "auto"), weights.device(), job)
    rollouts, why = policy_rollouts(engine, common["model"], Path(spec["base_folder"]), job, hyper)
    generations = int(hyper["num_generations"])
    completions = int(hyper["batch_size"]) * generations
    config = GRPOConfig(
        **arguments
        | {
            "per_device_train_batch_size": completions,
            "per_device_eval_batch_size": completions,
            "num_generations": generations,
            "max_completion_length": hyper["max_completion_length"],
            "temperature": hyper["temperature"],
            "beta": hyper["beta"],
            # Each answer's tokens averaged, then the answers (TRL's "grpo"), not every token of the batch
            # alike (its default "dapo"), under which seven long wrong answers outweigh one short right
            # one: the real loop's GRPO leg lengthened its answers under "dapo" in both runs that measured
            # them, and shortened them under this in one (bench/README.md, "The real loop with
            # reinforcement").
            "loss_type": "grpo",
        }
        | ({"max_steps": hyper["max_steps"]} if "max_steps" in hyper else {})
    )
    progress = _progress(job, rollouts_per_step=completions, spent=rollouts.spent if rollouts else None)
    engine_used = (
        {
            "engine": "ctranslate2",
            "why": why,
            "first_conversion_seconds": round(rollouts.first_conversion_s, 3),
        }
        if rollouts
        else {"engine": "transformers", "why": why}
    )
    progress.keep("rollouts", engine_used)
    budget = [_time_budget(float(hyper["max_seconds"]), progress)] if "max_seconds" in hyper else []
    return _skipping_steps_without_signal(GRPOTrainer)(
        reward_funcs=grader.reward(spec["grader"]),
        args=config,
        callbacks=[*budget, progress, *callbacks],
        rollout_func=rollouts,
        **common,
    )


def _skipping_steps_without_signal(grpo_trainer: type) -> type:
    """``grpo_trainer`` computing no loss for a batch that cannot move the policy: every answer's advantage 0
    (each prompt's answers all got the same reward), no KL term (``beta`` 0), no entropy bonus and no router
    loss. TRL's loss for such a batch is 0 with a gradient of exact zeros, at the price of a forward and a
    backward pass over every answer (most of a CPU step); this one gives the optimizer the same zeros for
    the price of filling them, so its step (and Adam's momentum from earlier batches) is unchanged. The
    steps skipped are logged as ``loss_skipped`` (1 a skipped step, 0 another)."""

    class SkippingStepsWithoutSignal(grpo_trainer):  # type: ignore[misc]
        def compute_loss(
            self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None
        ) -> Any:
            mode = "train" if model.training else "eval"
            if mode == "train" and self._without_signal(inputs):
                self._metrics[mode]["loss_skipped"].append(1.0)
                trained = [parameter for parameter in model.parameters() if parameter.requires_grad]
                return sum(parameter.sum() for parameter in trained) * 0.0
            if mode == "train":
                self._metrics[mode]["loss_skipped"].append(0.0)
            return super().compute_loss(model, inputs, return_outputs, num_items_in_batch)

        def _without_signal(self, inputs: Any) -> bool:
            adds_terms = self.beta != 0.0 or self._entropy_bonus_enabled or self.aux_loss_enabled
            return not adds_terms and not bool(inputs["advantages"].any())

    return SkippingStepsWithoutSignal


def _time_budget(seconds: float, progress: Any) -> Any:
    """A callback that ends training before a step that would end more than ``seconds`` after training
    began, judging by the longest step so far (the first step always runs). Training it ends before the end
    of its epoch is not evaluated: GRPO evaluates by answering and grading every validation prompt again,
    which on a CPU can take longer than the budget itself; ``progress`` says so."""
    from transformers import TrainerCallback

    class TimeBudget(TrainerCallback):
        def __init__(self) -> None:
            self.began = self.since = time.monotonic()
            self.longest = 0.0
            self.ended = False

        def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.began = time.monotonic()

        def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.since = time.monotonic()

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            now = time.monotonic()
            self.longest = max(self.longest, now - self.since)
            if now + self.longest - self.began > seconds:
                control.should_training_stop = True
                self.ended = state.global_step < state.max_steps

        def on_epoch_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if self.ended and control.should_evaluate:
                control.should_evaluate = False
                progress.keep(
                    "validation",
                    "not evaluated: max_seconds ended training before the end of its epoch, and evaluating "
                    "the validation prompts would answer and grade each of them again past it",
                )

    return TimeBudget()


def _progress(
    job: Path, *, rollouts_per_step: int | None, spent: Callable[[], dict[str, float]] | None = None
) -> Any:
    """A callback that writes ``progress.json`` after each logged step: the step, the loss, and for GRPO the
    step's mean reward, the reward of every step so far (the curve), how many steps had no signal (their loss
    skipped, see :func:`_skipping_steps_without_signal`), the answers sampled per second, and
    their mean length in tokens and tokens per second (TRL's mean completion length), and what ``spent``
    says the step spent (the seconds CTranslate2 rollouts converted and generated); and after each
    evaluation on the validation rows, its loss (``eval_loss``) beside the last step's."""
    from transformers import TrainerCallback

    class Progress(TrainerCallback):
        def __init__(self) -> None:
            self.curve: list[float | None] = []
            self.skipped = 0
            self.since = time.monotonic()
            self.kept: dict[str, Any] = {}
            self.written: dict[str, Any] = {}

        def keep(self, key: str, value: Any) -> None:
            """``value`` under ``key`` in every progress written from now on (and at once)."""
            self.kept[key] = value
            self.written |= self.kept
            write_json(job / PROGRESS, self.written)

        def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            self.since = time.monotonic()

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            logs = logs or {}
            if "eval_loss" in logs:
                self.keep("eval_loss", logs["eval_loss"])
                return
            loss = logs.get("loss")
            if loss is None:  # the closing summary, not a step
                return
            progress: dict[str, Any] = {
                "step": state.global_step,
                "total_steps": state.max_steps,
                "loss": loss,
                "epoch": state.epoch,
            }
            if rollouts_per_step is not None:
                self.curve.append(logs.get("reward"))
                self.skipped += logs.get("loss_skipped") == 1.0
                seconds = time.monotonic() - self.since
                tokens = logs.get("completions/mean_length")
                progress |= {
                    "reward": logs.get("reward"),
                    "reward_std": logs.get("reward_std"),
                    "reward_curve": self.curve,
                    "steps_without_signal": self.skipped,
                    "step_seconds": round(seconds, 3),
                    "rollouts_per_s": round(rollouts_per_step / seconds, 3) if seconds > 0 else None,
                    "completion_mean_tokens": tokens,
                    "completion_tokens_per_s": (
                        round(rollouts_per_step * tokens / seconds, 3) if seconds > 0 and tokens else None
                    ),
                    **(spent() if spent else {}),
                }
            self.written = progress | self.kept
            write_json(job / PROGRESS, self.written)

    return Progress()


def train(job: Path) -> None:
    spec = json.loads((job / SPEC).read_text(encoding="utf-8"))
    trainer = build(job, spec)
    trainer.train()
    trainer.save_model(spec["output"])
    trainer.processing_class.save_pretrained(spec["output"])


def _out_of_memory(error: BaseException) -> bool:
    return isinstance(error, MemoryError) or "out of memory" in str(error).lower()


def main(argv: list[str]) -> int:
    job = Path(argv[0])
    try:
        train(job)
    except (BadRows, grader.GraderFailed) as bad:
        write_json(job / FAILURE, {"message": str(bad)})
        return FAILED
    except Exception as error:  # every failure becomes the job's reason
        if _out_of_memory(error):
            message = (
                "out of memory while training: lower batch_size, train a smaller model, or use a machine "
                f"with more memory ({type(error).__name__}: {str(error)[:200]})"
            )
        else:
            message = f"training failed: {type(error).__name__}: {str(error)[:500]}"
        write_json(job / FAILURE, {"message": message})
        return FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
