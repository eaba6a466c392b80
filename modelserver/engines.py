"""The engines that turn a batch of prompts (token ids) into completion tokens: CTranslate2 on the CPU, and
transformers in eager PyTorch (on a GPU, and wherever CTranslate2 cannot run).

``--engine auto`` (the default) generates with CTranslate2 on the CPU when it is installed, and with
transformers on a GPU. CTranslate2 needs its own copy of a model: each model is converted on its first load
(a trained checkpoint on the first request for it) into ``ctranslate2/`` of a cache folder (the base
model's in the server's cache, shared by the servers started with it; a checkpoint's under its work folder),
keyed by the bytes of the files it was converted from, so a changed checkpoint is converted again and a
copy that is no longer as it was made is made again; ``GET /v1/stats`` lists each conversion
and its seconds. A model the converter refuses is served by transformers under ``auto`` (``/v1/stats`` says
why) and refused under ``--engine ctranslate2``.

Both engines decode the same way: greedy (or sampled at the request's temperature and top_p) up to the
batch's largest ``max_tokens``, each row ending at an end-of-turn token, a row whose caller left stopping at
its next token. Cutting at the end token and the stop strings, and counting, is the generator's.

An engine says how many batches it generates at once (``parallel``): transformers one, on every core;
CTranslate2 ``PARALLEL_BATCHES`` on a CPU with at least as many cores, the cores shared between them, so
that while one batch writes its longest answer (its other rows done, the batch small) the next batch
keeps the other cores busy.
"""

from __future__ import annotations

import logging
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from modelserver import weights

ENGINES = ("auto", "ctranslate2", "transformers")
CTRANSLATE2_PIN = "ctranslate2==4.8.5"
# Chosen by measurement on SmolLM2-135M-Instruct and examples/arithmetic-en (bench/model_server_bench.py
# --engines): float32 gives transformers' greedy answers (32 of 32 held-out cases); int8_float32 generates
# 2.6 times faster but gave the same answer to 1 of 32; this CPU build of CTranslate2 has no bfloat16.
COMPUTE_TYPE = "float32"
# Chosen by measurement on the real loop's prompts (bench/README.md, "Batches at once"): on 2 shared
# cores, two batches on one core each answered the same prompts six to nine times faster than one batch
# after another on both, with the same greedy answers.
PARALLEL_BATCHES = 2

log = logging.getLogger("modelserver")


class EngineUnavailable(ValueError):
    """An engine this server was asked for and cannot use; the message says why and what to do."""


@dataclass(frozen=True)
class Sampling:
    """How one request decodes; requests batch together only when these are equal."""

    temperature: float = 0.0
    top_p: float = 1.0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


@dataclass(frozen=True)
class Decoding:
    """How a batch decodes: at most ``max_new_tokens`` a row, greedy or sampled, and a row may stop once
    ``stopped(row)`` says its caller left."""

    max_new_tokens: int
    sampling: Sampling
    stopped: Callable[[int], bool]


@dataclass
class Model(ABC):
    """One loaded model: the engine's own object for it, its tokenizer, the token ids that end a turn."""

    runner: Any
    tokenizer: Any
    ends: frozenset[int]

    @abstractmethod
    def generate(self, prompts: list[list[int]], decoding: Decoding) -> list[list[int]]:
        """The tokens generated after each prompt (token ids), an end token included and anything after
        it arbitrary."""


class Engine(Protocol):
    name: str
    why: str  # why this engine generates here
    parallel: int  # how many batches it generates at once

    def load(self, model_id: str, folder: Path, cache: Path | None = None) -> Model:
        """``folder``'s model served as ``model_id``; an engine that needs its own copy of it makes it under
        ``cache`` (by default the engine's)."""
        ...

    def view(self) -> dict[str, Any]:
        """What ``GET /v1/stats`` shows of the engine."""
        ...


def choose(requested: str, device: str, cache: Path) -> Engine:
    """The engine ``requested`` (one of ENGINES) on ``device``; raises :class:`EngineUnavailable` when
    ``ctranslate2`` is asked for and cannot run here."""
    if requested not in ENGINES:
        raise EngineUnavailable(f"--engine must be one of {', '.join(ENGINES)}, not {requested!r}")
    if requested == "transformers":
        return TransformersEngine(device, "asked for with --engine transformers")
    missing = ctranslate2_missing()
    if requested == "ctranslate2":
        if missing:
            raise EngineUnavailable(
                f"--engine ctranslate2 cannot run: {missing}; or pass --engine transformers"
            )
        return CTranslate2Engine(cache, "asked for with --engine ctranslate2", fallback=None)
    if device != "cpu":
        return TransformersEngine(device, f"auto: torch sees a GPU ({device}), where transformers generates")
    if missing:
        return TransformersEngine(device, f"auto: {missing}")
    return CTranslate2Engine(cache, "auto: CTranslate2 on the CPU", fallback=TransformersEngine(device, ""))


def ctranslate2_missing() -> str | None:
    """Why CTranslate2 cannot generate on this machine's CPU, or None when it can."""
    try:
        import ctranslate2
    except ImportError as error:
        return f"the ctranslate2 package cannot be imported ({error}): pip install {CTRANSLATE2_PIN}"
    supported = ctranslate2.get_supported_compute_types("cpu")
    if COMPUTE_TYPE not in supported:
        return f"CTranslate2 has no {COMPUTE_TYPE} on this CPU (it has {', '.join(sorted(supported))})"
    return None


def threads() -> int:
    """The cores this process may run on (its affinity, which a container or taskset narrows)."""
    return len(os.sched_getaffinity(0))


class TransformersEngine:
    name = "transformers"
    parallel = 1  # one batch on every core: two at once would only share them

    def __init__(self, device: str, why: str) -> None:
        self.device = device
        self.why = why

    def load(self, model_id: str, folder: Path, cache: Path | None = None) -> Model:
        model, tokenizer = weights.load(folder, self.device)
        return TransformersModel(model, tokenizer, weights.end_tokens(folder, tokenizer))

    def view(self) -> dict[str, Any]:
        return {"name": self.name, "why": self.why, "device": self.device}


class TransformersModel(Model):
    def generate(self, prompts: list[list[int]], decoding: Decoding) -> list[list[int]]:
        import torch
        from transformers import StoppingCriteriaList

        encoded = self.tokenizer.pad({"input_ids": prompts}, padding=True, return_tensors="pt")
        sampling = decoding.sampling
        options: dict[str, Any] = {"do_sample": not sampling.greedy}
        if sampling.greedy:
            options.update(temperature=None, top_p=None, top_k=None)
        else:
            options.update(temperature=sampling.temperature, top_p=sampling.top_p)
        with torch.inference_mode():
            output = self.runner.generate(
                **encoded.to(self.runner.device),
                max_new_tokens=decoding.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                stopping_criteria=StoppingCriteriaList([abandoned_rows(len(prompts), decoding.stopped)]),
                **options,
            )
        width = encoded["input_ids"].shape[1]
        return [output[row, width:].tolist() for row in range(len(prompts))]


def abandoned_rows(rows: int, stopped: Callable[[int], bool]) -> Any:
    """A stopping criterion that ends each of ``rows`` rows for which ``stopped(row)``, so a batch that
    nobody waits for any more stops generating at its next token."""
    import torch
    from transformers import StoppingCriteria

    class Abandoned(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.tensor(
                [stopped(row) for row in range(rows)], dtype=torch.bool, device=input_ids.device
            )

    return Abandoned()


class CTranslate2Engine:
    """CTranslate2 on the CPU at ``compute_type``, on every core this process may use (``threads`` for each of
    its ``parallel`` batches); models converted under ``cache``. With a ``fallback``, a model the converter
    refuses is served by it instead."""

    name = "ctranslate2"

    def __init__(
        self,
        cache: Path,
        why: str,
        *,
        fallback: TransformersEngine | None,
        compute_type: str = COMPUTE_TYPE,
    ) -> None:
        self.cache = cache / "ctranslate2"
        self.compute_type = compute_type
        self.why = why
        self.fallback = fallback
        cores = threads()
        self.parallel = max(1, min(PARALLEL_BATCHES, cores))
        self.threads = cores // self.parallel
        self.conversions: list[dict[str, Any]] = []
        self.fallbacks: dict[str, str] = {}

    def load(self, model_id: str, folder: Path, cache: Path | None = None) -> Model:
        try:
            converted = self._converted(model_id, folder, cache / "ctranslate2" if cache else self.cache)
        except (ValueError, NotImplementedError, KeyError) as refused:
            reason = f"CTranslate2 cannot convert {model_id}: {type(refused).__name__}: {refused}"
            if self.fallback is None:
                raise EngineUnavailable(f"{reason}; serve it with --engine transformers (or auto)") from None
            log.warning("%s; transformers serves it", reason)
            self.fallbacks[model_id] = reason
            return self.fallback.load(model_id, folder)
        self.fallbacks.pop(model_id, None)
        return self._open(converted, folder)

    def load_policy(self, policy: Any, folder: Path, target: Path) -> Model:
        """``policy``, a transformers model loaded from ``folder`` and trained since (a GRPO job's),
        converted with its weights as they are now into ``target`` (whatever it held is replaced) and loaded.
        Raises what the converter raises for a model it refuses:
        ValueError, NotImplementedError or KeyError."""
        import copy

        from ctranslate2.converters import TransformersConverter

        # The converter is handed a copy, so that nothing it does to the tensors it reads reaches training.
        snapshot = copy.deepcopy(policy)

        class Loaded(TransformersConverter):  # type: ignore[misc]
            def load_model(self, model_class: Any, model_name_or_path: str, **kwargs: Any) -> Any:
                return snapshot

        Loaded(str(folder)).convert(str(target), quantization=self.compute_type, force=True)
        return self._open(target, folder)

    def _open(self, converted: Path, folder: Path) -> Model:
        """The CTranslate2 copy ``converted`` of ``folder``'s model, loaded with ``folder``'s tokenizer."""
        import ctranslate2

        tokenizer = weights.load_tokenizer(folder)
        generator = ctranslate2.Generator(
            str(converted),
            device="cpu",
            compute_type=self.compute_type,
            inter_threads=self.parallel,
            intra_threads=self.threads,
        )
        return CTranslate2Model(generator, tokenizer, weights.end_tokens(folder, tokenizer))

    def _converted(self, model_id: str, folder: Path, cache: Path) -> Path:
        """The CTranslate2 copy of ``folder`` under ``cache``, converted now unless the cache holds a sound
        copy of these files' bytes."""
        import ctranslate2

        files = sorted(p for p in folder.iterdir() if p.is_file())
        version = f"ctranslate2 {ctranslate2.__version__} {self.compute_type}"
        target = cache / f"{folder.name}-{weights.content_key(files, extra=version)}"
        converted = False
        started = time.monotonic()

        def convert(partial: Path) -> None:
            nonlocal converted
            converter = ctranslate2.converters.TransformersConverter(str(folder), low_cpu_mem_usage=True)
            converter.convert(str(partial), quantization=self.compute_type, force=True)
            converted = True

        weights.cached(target, convert)
        if not converted:
            return target
        seconds = time.monotonic() - started
        self.conversions.append({"model": model_id, "seconds": round(seconds, 2)})
        log.info("converted %s for CTranslate2 (%s) in %.1f s", model_id, self.compute_type, seconds)
        return target

    def view(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "why": self.why,
            "device": "cpu",
            "compute_type": self.compute_type,
            "threads": self.threads,
            "parallel_batches": self.parallel,
            "conversions": list(self.conversions),
            "served_by_transformers": dict(self.fallbacks),
        }


class CTranslate2Model(Model):
    def generate(self, prompts: list[list[int]], decoding: Decoding) -> list[list[int]]:
        sampling = decoding.sampling
        # Sampled, a top-k of 0 draws from the whole vocabulary, bounded by top_p alone.
        options: dict[str, Any] = (
            {"sampling_topk": 1}
            if sampling.greedy
            else {
                "sampling_topk": 0,
                "sampling_topp": sampling.top_p,
                "sampling_temperature": sampling.temperature,
            }
        )
        results = self.runner.generate_batch(
            [self.tokenizer.convert_ids_to_tokens(prompt) for prompt in prompts],
            max_length=decoding.max_new_tokens,
            end_token=sorted(self.ends),
            return_end_token=True,
            include_prompt_in_result=False,
            # Asked after each token: True stops that row (its caller left).
            callback=lambda step: decoding.stopped(step.batch_id),
            **options,
        )
        return [list(result.sequences_ids[0]) for result in results]
