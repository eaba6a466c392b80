"""A caller that closes its connection before its answer is ready leaves nothing behind: its request
leaves the queue without being generated, and the server goes on answering the callers still waiting."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import torch

from modelserver.engines import abandoned_rows
from modelserver.generation import Request
from modelserver.server import ModelServer


def _body(prompt: str) -> bytes:
    return json.dumps(
        {"model": "tiny-chat", "messages": [{"role": "user", "content": prompt}], "max_tokens": 6}
    ).encode()


def _stats(server: ModelServer) -> dict[str, Any]:
    with urllib.request.urlopen(server.base_url + "/stats", timeout=60) as response:
        stats: dict[str, Any] = json.loads(response.read())
        return stats


def _send_and_hang_up(server: ModelServer, prompt: str) -> None:
    """POST a chat completion on a raw connection and close it without reading the answer, as a client
    whose timeout ran out does."""
    address = urlsplit(server.base_url)
    body = _body(prompt)
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )


def _ask(server: ModelServer, prompt: str, answers: list[str]) -> None:
    request = urllib.request.Request(
        server.base_url + "/chat/completions",
        data=_body(prompt),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        answers.append(json.loads(response.read())["choices"][0]["message"]["content"])


def test_a_request_whose_caller_left_is_never_generated_and_the_next_ones_are(
    tiny_model: Path, tmp_path: Path
) -> None:
    # A batch waits for a second request (or a minute) before it generates, so the first request is
    # still in the queue when its caller hangs up.
    with ModelServer(str(tiny_model), work=tmp_path, max_batch=2, batch_wait_s=60) as server:
        _send_and_hang_up(server, "What is 2 + 3?")
        deadline = time.monotonic() + 60
        while _stats(server)["abandoned"] < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _stats(server)

        answers: list[str] = []
        callers = [threading.Thread(target=_ask, args=(server, p, answers)) for p in ("hi", "What is 4 + 4?")]
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        after = _stats(server)

    assert left["abandoned"] == 1
    assert left["waiting"] == 0, "the abandoned request left the queue"
    assert left["requests"] == 0, "nothing was generated for it"
    assert len(answers) == 2
    assert after["requests"] == 2
    assert after["batches"] == 1


def test_a_batch_stops_the_rows_whose_callers_left() -> None:
    staying, leaving = Request("tiny-chat", []), Request("tiny-chat", [])
    batch = [staying, leaving]
    criterion = abandoned_rows(len(batch), lambda row: batch[row].abandoned)
    tokens = torch.zeros((2, 3), dtype=torch.long)

    assert criterion(tokens, None).tolist() == [False, False]
    leaving.abandoned = True
    assert criterion(tokens, None).tolist() == [False, True]
