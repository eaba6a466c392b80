"""The CPU inference engines that ``engine_bench.py`` compares, each behind the same small surface: the
distributions it adds (what to install, and what its install size is made of), the command that turns a
Hugging Face folder into what it loads (None: it loads the folder itself), and a runner that decodes greedily
from token ids.

Every engine is given the same prompt token ids (the transformers tokenizer's, chat template applied) and
answers with token ids, which the bench decodes with that same tokenizer, so a difference in the answers is
the engine's, not a tokenizer's. Each is imported only by the process that measures it.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

Tokens = list[int]


class Runner(Protocol):
    def generate(self, prompts: Sequence[Tokens], max_tokens: int) -> list[Tokens]:
        """Each prompt's greedy continuation, at most ``max_tokens`` tokens, ending at an end token or
        before; the prompts are decoded together where the engine batches."""
        ...


@dataclass(frozen=True)
class Engine:
    name: str
    distributions: tuple[str, ...]  # the wheels it adds, whose installed files are its install size
    install: str  # the command that installs it, for a row that says "not installed"
    module: str  # imported to tell whether it is installed
    batched: bool  # False: concurrent requests are served one after another
    convert: Callable[[Path, Path, dict[str, str]], list[str]] | None
    open: Callable[[Path, set[int], int], Runner]  # (converted model, end tokens, threads)
    converted_as: str = ""  # what the conversion writes, for the table's notes


def _truncated(tokens: Sequence[int], ends: set[int], max_tokens: int) -> Tokens:
    kept: Tokens = []
    for token in list(tokens)[:max_tokens]:
        if token in ends:
            break
        kept.append(int(token))  # engines answer numpy integers, which JSON does not take
    return kept


def _left_padded(prompts: Sequence[Tokens], pad: int) -> tuple[list[Tokens], list[Tokens]]:
    """The prompts padded on the left to one width with ``pad``, and their attention mask (0 on padding)."""
    width = max(len(p) for p in prompts)
    ids = [[pad] * (width - len(p)) + list(p) for p in prompts]
    return ids, [[0] * (width - len(p)) + [1] * len(p) for p in prompts]


def _tool(name: str, tools: dict[str, str]) -> str:
    """A console script: the one given with --tool NAME=PATH, else the one beside this Python."""
    given = tools.get(name)
    if given:
        return given
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name) or name


class _CTranslate2:
    def __init__(self, folder: Path, ends: set[int], threads: int) -> None:
        import ctranslate2

        self.ends = ends
        self.generator = ctranslate2.Generator(
            str(folder), device="cpu", compute_type="float32", intra_threads=threads
        )
        self.tokens = _vocabulary(folder)

    def generate(self, prompts: Sequence[Tokens], max_tokens: int) -> list[Tokens]:
        results = self.generator.generate_batch(
            [[self.tokens[t] for t in prompt] for prompt in prompts],
            max_length=max_tokens,
            sampling_topk=1,
            beam_size=1,
            include_prompt_in_result=False,
            end_token=[self.tokens[t] for t in sorted(self.ends)],
        )
        return [_truncated(r.sequences_ids[0], self.ends, max_tokens) for r in results]


def _vocabulary(folder: Path) -> list[str]:
    """The converted model's tokens by id (CTranslate2 takes prompts as token strings)."""
    import json

    for name in ("vocabulary.json", "vocabulary.txt"):
        path = folder / name
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            return list(json.loads(text)) if name.endswith(".json") else text.split("\n")
    raise FileNotFoundError(
        f"{folder} has no vocabulary.json: convert it again with ct2-transformers-converter"
    )


class _OnnxGenAI:
    def __init__(self, folder: Path, ends: set[int], threads: int) -> None:
        import onnxruntime_genai as og

        self.og = og
        self.ends = ends
        config = og.Config(str(folder))
        self.model = og.Model(config)
        self.pad = min(ends)

    def generate(self, prompts: Sequence[Tokens], max_tokens: int) -> list[Tokens]:
        import numpy as np

        og = self.og
        ids, _ = _left_padded(prompts, self.pad)
        padded = np.array(ids, dtype=np.int32)
        width = padded.shape[1]
        params = og.GeneratorParams(self.model)
        params.set_search_options(do_sample=False, max_length=width + max_tokens, batch_size=len(prompts))
        generator = og.Generator(self.model, params)
        generator.append_tokens(padded)
        while not generator.is_done():
            generator.generate_next_token()
        return [
            _truncated(list(generator.get_sequence(row))[width:], self.ends, max_tokens)
            for row in range(len(prompts))
        ]


class _OpenVINO:
    def __init__(self, folder: Path, ends: set[int], threads: int) -> None:
        import openvino_genai as ov_genai

        self.ov_genai = ov_genai
        self.ends = ends
        # f32: on a CPU with bf16 (this one has avx512_bf16) the CPU plugin would otherwise compute in bf16.
        self.pipeline = ov_genai.LLMPipeline(
            str(folder), "CPU", INFERENCE_NUM_THREADS=threads, INFERENCE_PRECISION_HINT="f32"
        )

    def generate(self, prompts: Sequence[Tokens], max_tokens: int) -> list[Tokens]:
        import numpy as np
        import openvino as ov

        ids, mask = _left_padded(prompts, 0)
        config = self.ov_genai.GenerationConfig()
        config.max_new_tokens = max_tokens
        config.do_sample = False
        config.stop_token_ids = set(self.ends)
        inputs = self.ov_genai.TokenizedInputs(
            ov.Tensor(np.array(ids, dtype=np.int64)), ov.Tensor(np.array(mask, dtype=np.int64))
        )
        result = self.pipeline.generate(inputs, config)
        return [_truncated(list(tokens), self.ends, max_tokens) for tokens in result.tokens]


class _LlamaCpp:
    def __init__(self, folder: Path, ends: set[int], threads: int) -> None:
        from llama_cpp import Llama

        self.ends = ends
        (gguf,) = sorted(folder.glob("*.gguf"))
        self.llama: Any = Llama(
            model_path=str(gguf), n_ctx=2048, n_threads=threads, n_threads_batch=threads, verbose=False
        )

    def generate(self, prompts: Sequence[Tokens], max_tokens: int) -> list[Tokens]:
        # llama-cpp-python decodes one sequence at a time (its server, too, takes one request at a time).
        answers = []
        for prompt in prompts:
            self.llama.reset()
            tokens: Tokens = []
            for token in self.llama.generate(list(prompt), top_k=1, top_p=1.0, temp=0.0, repeat_penalty=1.0):
                if token in self.ends or len(tokens) >= max_tokens:
                    break
                tokens.append(int(token))
            answers.append(tokens)
        return answers


class _Transformers:
    """Today's server path: ``generate`` in eager PyTorch on a left-padded batch, greedy, with the options
    ``modelserver.generation.Generator`` passes it."""

    def __init__(self, folder: Path, ends: set[int], threads: int) -> None:
        import torch

        from modelserver.weights import load

        torch.set_num_threads(threads)
        self.model, self.tokenizer = load(folder, "cpu")
        self.ends = ends

    def generate(self, prompts: Sequence[Tokens], max_tokens: int) -> list[Tokens]:
        import torch

        ids, mask = _left_padded(prompts, self.tokenizer.pad_token_id)
        width = len(ids[0])
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=torch.tensor(ids),
                attention_mask=torch.tensor(mask),
                max_new_tokens=max_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
            )
        return [_truncated(row[width:].tolist(), self.ends, max_tokens) for row in output]


def _ct2_convert(source: Path, out: Path, tools: dict[str, str]) -> list[str]:
    # --force: the bench makes the output folder, which the converter otherwise refuses to write into.
    return [
        _tool("ct2-transformers-converter", tools),
        "--model",
        str(source),
        "--output_dir",
        str(out),
        "--force",
    ]


def _onnx_convert(source: Path, out: Path, tools: dict[str, str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "onnxruntime_genai.models.builder",
        "--input",
        str(source),
        "--output",
        str(out),
        "--precision",
        "fp32",
        "--execution_provider",
        "cpu",
        "--cache_dir",
        str(out.with_name(out.name + "-cache")),
    ]


def _openvino_convert(source: Path, out: Path, tools: dict[str, str]) -> list[str]:
    return [
        _tool("optimum-cli", tools),
        "export",
        "openvino",
        "--model",
        str(source),
        "--task",
        "text-generation-with-past",
        "--weight-format",
        "fp32",
        str(out),
    ]


def _gguf_convert(source: Path, out: Path, tools: dict[str, str]) -> list[str]:
    script = tools.get("convert_hf_to_gguf.py")
    if not script:
        raise FileNotFoundError(
            "llama.cpp converts a Hugging Face folder with convert_hf_to_gguf.py (in llama-cpp-python's "
            "source archive, under vendor/llama.cpp/): pass --tool convert_hf_to_gguf.py=PATH"
        )
    return [sys.executable, script, str(source), "--outtype", "f32", "--outfile", str(out / "model.gguf")]


ENGINES = {
    engine.name: engine
    for engine in (
        Engine(
            "transformers",
            ("transformers", "torch"),
            "make install (the model extra)",
            "transformers",
            batched=True,
            convert=None,
            open=_Transformers,
            converted_as="the safetensors folder itself",
        ),
        Engine(
            "ctranslate2",
            ("ctranslate2",),
            "pip install ctranslate2",
            "ctranslate2",
            batched=True,
            convert=_ct2_convert,
            open=_CTranslate2,
            converted_as="float32 weights (ct2-transformers-converter)",
        ),
        Engine(
            "onnxruntime-genai",
            ("onnxruntime-genai", "onnxruntime"),
            "pip install onnxruntime-genai onnx onnx-ir",
            "onnxruntime_genai",
            batched=True,
            convert=_onnx_convert,
            open=_OnnxGenAI,
            converted_as="fp32 ONNX (onnxruntime_genai.models.builder)",
        ),
        Engine(
            "openvino",
            ("openvino-genai", "openvino", "openvino-tokenizers"),
            "pip install openvino-genai; optimum-cli in a venv of its own (bench/README.md)",
            "openvino_genai",
            batched=True,
            convert=_openvino_convert,
            open=_OpenVINO,
            converted_as="fp32 OpenVINO IR (optimum-cli export openvino)",
        ),
        Engine(
            "llama.cpp",
            ("llama-cpp-python",),
            "pip install llama-cpp-python (builds llama.cpp with this machine's compiler)",
            "llama_cpp",
            batched=False,
            convert=_gguf_convert,
            open=_LlamaCpp,
            converted_as="f32 GGUF (convert_hf_to_gguf.py)",
        ),
    )
}


def timed(run: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started
