"""The engine that generates: CTranslate2 on the CPU (each model converted once, again when its files
change), transformers as the fallback, and a server that cannot use the engine asked for says why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from modelserver import engines, weights
from modelserver.engines import (
    CTranslate2Engine,
    Decoding,
    EngineUnavailable,
    Sampling,
    TransformersEngine,
)
from modelserver.server import ModelServer
from tests.modelserver.tiny_model import build_tiny_model

PROMPTS = ["What is 2 + 3?", "hi", "Natalia sold clips to 48 of her friends in April.", "Reasoning: add"]


def _post(server: ModelServer, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        server.base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def _ask(server: ModelServer, prompt: str, **options: Any) -> dict[str, Any]:
    return _post(
        server, {"model": server.base_model, "messages": [{"role": "user", "content": prompt}], **options}
    )


def _engine(server: ModelServer) -> dict[str, Any]:
    with urllib.request.urlopen(server.base_url + "/stats", timeout=60) as response:
        engine: dict[str, Any] = json.loads(response.read())["engine"]
        return engine


def _encoded(tokenizer: Any, prompt: str) -> list[int]:
    """The token ids of ``prompt`` as the server encodes it: in the chat template, ready for the answer."""
    messages = [{"role": "user", "content": prompt}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    ids: list[int] = tokenizer(text, add_special_tokens=False)["input_ids"]
    return ids


def _without_ctranslate2(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine where the ctranslate2 package is not installed: importing it fails."""
    monkeypatch.setitem(sys.modules, "ctranslate2", None)


def test_the_engine_generates_the_same_greedy_tokens_as_transformers(
    tiny_model: Path, tmp_path: Path
) -> None:
    reference = TransformersEngine("cpu", "").load("tiny-chat", tiny_model)
    engine = CTranslate2Engine(tmp_path, "", fallback=None).load("tiny-chat", tiny_model)
    tokenizer = reference.tokenizer
    prompts = [_encoded(tokenizer, p) for p in PROMPTS]

    expected = reference.generate(prompts, Decoding(24, Sampling(), lambda row: False))
    got = engine.generate(prompts, Decoding(24, Sampling(), lambda row: False))

    assert [len(tokens) for tokens in got] == [24] * len(PROMPTS)
    assert got == expected


def test_a_row_whose_caller_left_stops_at_its_next_token(tiny_model: Path, tmp_path: Path) -> None:
    engine = CTranslate2Engine(tmp_path, "", fallback=None).load("tiny-chat", tiny_model)
    prompt = engine.tokenizer("hi", add_special_tokens=False)["input_ids"]

    tokens = engine.generate([prompt, prompt], Decoding(20, Sampling(), lambda row: row == 1))

    assert [len(row) for row in tokens] == [20, 1]


def test_the_engine_answers_over_http_with_usage_length_and_stop_strings(
    tiny_model: Path, tmp_path: Path
) -> None:
    with ModelServer(str(tiny_model), work=tmp_path, engine="ctranslate2") as server:
        cut_short = _ask(server, PROMPTS[0], max_tokens=5)
        full = _ask(server, PROMPTS[0], max_tokens=12)["choices"][0]["message"]["content"]
        stop = full[2:4]
        stopped = _ask(server, PROMPTS[0], max_tokens=12, stop=[stop])
        engine = _engine(server)
    prompt_tokens = len(_encoded(weights.load_tokenizer(tiny_model), PROMPTS[0]))

    assert engine["name"] == "ctranslate2"
    assert engine["compute_type"] == "float32"
    assert engine["threads"] * engine["parallel_batches"] == len(os.sched_getaffinity(0))
    assert [c["model"] for c in engine["conversions"]] == ["tiny-chat"]
    assert cut_short["choices"][0]["finish_reason"] == "length"
    assert cut_short["usage"] == {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": 5,
        "total_tokens": prompt_tokens + 5,
    }
    assert stopped["choices"][0]["message"]["content"] == full[: full.find(stop)]
    assert stopped["choices"][0]["finish_reason"] == "stop"


def test_a_request_arriving_while_a_batch_generates_is_answered_before_that_batch_ends(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engines, "threads", lambda: 2)
    with ModelServer(str(tiny_model), work=tmp_path, engine="ctranslate2", max_batch=1) as server:
        alone = [_ask(server, p, max_tokens=8)["choices"][0]["message"]["content"] for p in PROMPTS[:2]]
        model = server.models.get(server.base_model)
        generate = model.generate
        entered, release = threading.Event(), threading.Event()
        held = _encoded(model.tokenizer, PROMPTS[0])

        def slow(prompts: list[list[int]], decoding: Decoding) -> list[list[int]]:
            """The first prompt's batch writes a long answer: it goes on until the test lets it end."""
            if prompts == [held]:
                entered.set()
                release.wait(timeout=60)
            return generate(prompts, decoding)

        monkeypatch.setattr(model, "generate", slow)
        answers: dict[str, str] = {}
        first = threading.Thread(
            target=lambda: answers.update(
                first=_ask(server, PROMPTS[0], max_tokens=8)["choices"][0]["message"]["content"]
            )
        )
        first.start()
        assert entered.wait(timeout=30)
        try:
            beside = _post_within(server, PROMPTS[1], timeout=20)
        finally:
            release.set()
            first.join(timeout=60)
        stats = _engine(server)

    assert stats["parallel_batches"] == 2
    assert beside == alone[1]
    assert answers["first"] == alone[0]


def _post_within(server: ModelServer, prompt: str, *, timeout: float) -> str:
    body = {"model": server.base_model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 8}
    request = urllib.request.Request(
        server.base_url + "/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        text: str = json.loads(response.read())["choices"][0]["message"]["content"]
        return text


def test_a_model_is_converted_once_and_again_when_its_files_change(tiny_model: Path, tmp_path: Path) -> None:
    model = tmp_path / "tiny-copy"
    build_tiny_model(model)
    with ModelServer(str(model), work=tmp_path / "work", engine="ctranslate2") as server:
        first = _engine(server)["conversions"]
    with ModelServer(str(model), work=tmp_path / "work", engine="ctranslate2") as server:
        unchanged = _engine(server)["conversions"]
    build_tiny_model(model, seed=8)  # the checkpoint saved again, other weights
    with ModelServer(str(model), work=tmp_path / "work", engine="ctranslate2") as server:
        changed = _engine(server)["conversions"]

    assert [c["model"] for c in first] == ["tiny-copy"]
    assert unchanged == []
    assert [c["model"] for c in changed] == ["tiny-copy"]
    assert len(list((tmp_path / "work" / "cache" / "ctranslate2").iterdir())) == 2


def _served_from_cache(model: Path, work: Path, cache: Path) -> tuple[list[dict[str, Any]], str]:
    """The conversions a CTranslate2 server of ``model`` made at start with ``cache``, and its answer."""
    with ModelServer(str(model), work=work, cache=cache, engine="ctranslate2") as server:
        conversions: list[dict[str, Any]] = _engine(server)["conversions"]
        answer: str = _ask(server, PROMPTS[0], max_tokens=6)["choices"][0]["message"]["content"]
        return conversions, answer


def test_servers_in_other_work_folders_given_one_cache_convert_the_base_model_once(tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "tiny-copy")
    cache = tmp_path / "cache"
    first, answer = _served_from_cache(model, tmp_path / "first", cache)

    second, again = _served_from_cache(model, tmp_path / "second", cache)

    assert [c["model"] for c in first] == ["tiny-copy"]
    assert second == []
    assert again == answer
    assert len(list((cache / "ctranslate2").iterdir())) == 1
    assert not (tmp_path / "second" / "cache").exists()


def test_a_cached_conversion_changed_since_it_was_made_is_refused_and_made_again(tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "tiny-copy")
    cache = tmp_path / "cache"
    _, answer = _served_from_cache(model, tmp_path / "first", cache)
    (converted,) = (cache / "ctranslate2").iterdir()
    spoiled = bytearray((converted / "model.bin").read_bytes())
    spoiled[-64:] = bytes(64)  # its last 64 bytes zeroed
    (converted / "model.bin").write_bytes(bytes(spoiled))

    conversions, again = _served_from_cache(model, tmp_path / "second", cache)

    assert [c["model"] for c in conversions] == ["tiny-copy"]
    assert again == answer
    assert (converted / "model.bin").read_bytes() != bytes(spoiled)


def test_without_ctranslate2_auto_serves_with_transformers_and_says_why(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_ctranslate2(monkeypatch)

    with ModelServer(str(tiny_model), work=tmp_path) as server:
        answer = _ask(server, PROMPTS[0], max_tokens=4)
        engine = _engine(server)

    assert answer["usage"]["completion_tokens"] >= 1
    assert engine["name"] == "transformers"
    assert "the ctranslate2 package cannot be imported" in engine["why"]
    assert "pip install ctranslate2==" in engine["why"]


def test_asking_for_ctranslate2_without_it_is_refused_saying_what_to_do(
    tiny_model: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _without_ctranslate2(monkeypatch)

    with pytest.raises(EngineUnavailable) as refused:
        ModelServer(str(tiny_model), work=tmp_path, engine="ctranslate2")

    assert "--engine ctranslate2 cannot run: the ctranslate2 package cannot be imported" in str(refused.value)
    assert "--engine transformers" in str(refused.value)


def test_a_model_the_converter_refuses_is_served_by_transformers_under_auto(tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "olmo-chat", architecture="Olmo")

    with ModelServer(str(model), work=tmp_path / "work") as server:
        answer = _ask(server, PROMPTS[0], max_tokens=4)
        engine = _engine(server)

    assert answer["usage"]["completion_tokens"] >= 1
    assert engine["name"] == "ctranslate2"
    assert (
        "No conversion is registered for the model configuration OlmoConfig"
        in engine["served_by_transformers"]["olmo-chat"]
    )


def test_the_serve_command_refuses_a_model_the_engine_cannot_convert(tmp_path: Path) -> None:
    model = build_tiny_model(tmp_path / "olmo-chat", architecture="Olmo")
    command = [sys.executable, "-m", "cli.main", "model", "serve", "--model", str(model), "--port", "0"]
    command += ["--work", str(tmp_path / "work"), "--engine", "ctranslate2"]

    finished = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)

    assert finished.returncode == 2
    assert (
        "error: CTranslate2 cannot convert olmo-chat: ValueError: No conversion is registered"
        in finished.stderr
    )
    assert "serve it with --engine transformers (or auto)" in finished.stderr
