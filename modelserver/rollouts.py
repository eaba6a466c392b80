"""A GRPO job's answers (rollouts) sampled by CTranslate2 from the policy being trained, instead of by
transformers' ``generate``, which on a CPU is what a step spent most of its time on.

TRL's ``GRPOTrainer`` hands each batch's prompts (every prompt already repeated ``num_generations`` times)
to :class:`PolicyRollouts`, which answers each once. Before the first batch of every optimizer step, the
policy as it now is gets converted into a CTranslate2 copy in the job's folder (its seconds are counted),
so that every answer comes from the weights the loss is then computed for; the loss's log-probabilities
are computed by TRL's own forward pass, as without this. Rows are sampled at the job's temperature up to
its ``max_completion_length``, in as many batches at once as the engine generates (its ``parallel``).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from modelserver.engines import CTranslate2Engine, Decoding, EngineUnavailable, Model, Sampling

log = logging.getLogger("modelserver")


class PolicyRollouts:
    """TRL's ``rollout_func``: ``rollouts(prompts, trainer)``. Made with the job's starting model, which it
    converts at once, so that a model the converter refuses is known before training starts."""

    def __init__(
        self,
        engine: CTranslate2Engine,
        policy: Any,
        folder: Path,
        work: Path,
        *,
        temperature: float,
        max_new_tokens: int,
        seed: int,
    ) -> None:
        import ctranslate2

        self.engine = engine
        self.folder = folder
        self.target = work / "policy-ctranslate2"
        self.decoding = Decoding(
            max_new_tokens, Sampling(temperature=temperature), stopped=lambda _row: False
        )
        ctranslate2.set_random_seed(seed)
        self.conversion_s = 0.0
        self.generation_s = 0.0
        self.model = self._convert(policy)
        # The starting model's conversion happens before training, not in its first step.
        self.first_conversion_s, self.conversion_s = self.conversion_s, 0.0
        self.step = 0

    def _convert(self, policy: Any) -> Model:
        started = time.monotonic()
        model = self.engine.load_policy(policy, self.folder, self.target)
        self.conversion_s += time.monotonic() - started
        return model

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if trainer.state.global_step != self.step:
            self.model = self._convert(trainer.accelerator.unwrap_model(trainer.model))
            self.step = trainer.state.global_step
        # TRL's own reading of the prompts (its chat template, its generation prompt), as its generate uses.
        prompt_ids, _, _ = trainer._tokenize_prompts(prompts)
        started = time.monotonic()
        completion_ids = self.generate(prompt_ids)
        self.generation_s += time.monotonic() - started
        # TRL computes the log-probabilities the loss needs with its own forward pass when none are given.
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": None}

    def generate(self, prompt_ids: list[list[int]]) -> list[list[int]]:
        """Each prompt's answer, ending at its end token (kept, as TRL keeps it) or at the most tokens."""
        batches = max(1, min(self.engine.parallel, len(prompt_ids)))
        size = -(-len(prompt_ids) // batches)
        chunks = [prompt_ids[start : start + size] for start in range(0, len(prompt_ids), size)]
        with ThreadPoolExecutor(max_workers=len(chunks)) as pool:
            answers = list(pool.map(lambda chunk: self.model.generate(chunk, self.decoding), chunks))
        ends = self.model.ends
        return [cut_at_end(answer, ends) for chunk in answers for answer in chunk]

    def spent(self) -> dict[str, float]:
        """The seconds spent converting the policy and generating since the last call."""
        seconds = {
            "conversion_seconds": round(self.conversion_s, 3),
            "generation_seconds": round(self.generation_s, 3),
        }
        self.conversion_s = self.generation_s = 0.0
        return seconds


def cut_at_end(tokens: list[int], ends: frozenset[int]) -> list[int]:
    """``tokens`` up to and with the first of ``ends``, all of them when none ends them."""
    for index, token in enumerate(tokens):
        if token in ends:
            return tokens[: index + 1]
    return tokens


def policy_rollouts(
    engine: Any, policy: Any, folder: Path, work: Path, hyper: dict[str, Any]
) -> tuple[PolicyRollouts | None, str]:
    """CTranslate2 rollouts of ``policy`` when ``engine`` (the server's engine choice) is CTranslate2 and its
    converter takes the model, and why; None leaves generation to TRL's transformers generate: on a GPU,
    without CTranslate2, or (under ``auto``) for a model the converter refuses. Under ``--engine
    ctranslate2`` a refused model raises :class:`EngineUnavailable`."""
    if not isinstance(engine, CTranslate2Engine):
        return None, engine.why
    try:
        rollouts = PolicyRollouts(
            engine,
            policy,
            folder,
            work,
            temperature=float(hyper["temperature"]),
            max_new_tokens=int(hyper["max_completion_length"]),
            seed=int(hyper.get("seed", 42)),
        )
    except (ValueError, NotImplementedError, KeyError) as refused:
        reason = f"CTranslate2 cannot convert the model being trained: {type(refused).__name__}: {refused}"
        if engine.fallback is None:
            raise EngineUnavailable(f"{reason}; serve with --engine transformers (or auto)") from None
        log.warning("%s; transformers generates the answers", reason)
        return None, reason
    return rollouts, engine.why
