"""The four row formats of the artifact, written side by side from one ordered stream of examples.

- ``data/messages.jsonl``: ``{"messages": [system?, user, assistant]}`` (OpenAI-compatible chat, TRL SFT).
- ``data/prompt_completion.jsonl``: ``{"prompt", "completion"}`` (Bedrock text models, TRL prompt-completion).
- ``data/preference.jsonl``: ``{"prompt", "chosen", "rejected"}``, only where the model gave a wrong answer.
- ``data/rows.jsonl``: prompt/answer rows with full context (split, source case, run, verdict, criteria).
Every file lists train rows first, then validation, then test; ``rows.jsonl`` names each row's split.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from benchgen.finetune.seed import Source
from benchgen.finetune.split import SPLITS, Split

MESSAGES = "data/messages.jsonl"
PROMPT_COMPLETION = "data/prompt_completion.jsonl"
PREFERENCE = "data/preference.jsonl"
ROWS = "data/rows.jsonl"


class Summary(Protocol):
    @property
    def passed(self) -> bool: ...
    @property
    def answered(self) -> bool | None: ...
    @property
    def prediction(self) -> str | None: ...


class Renderable(Protocol):
    """What the formats read of an example: ``seed.Example`` or the lean ``records.ExampleRecord``."""

    @property
    def example_id(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def run_id(self) -> str: ...
    @property
    def source(self) -> Source: ...
    @property
    def variant(self) -> int: ...
    @property
    def input(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def system(self) -> str: ...
    @property
    def rejected(self) -> str | None: ...
    @property
    def verdict(self) -> Summary | None: ...
    @property
    def criteria(self) -> Sequence[str]: ...


FORMATS = (MESSAGES, PREFERENCE, PROMPT_COMPLETION, ROWS)  # the zip's (sorted) member order

_ENCODE = msgspec.json.Encoder().encode
_EMPTY = b'""'
# The fixed bytes between the pieces, so that a line's length is known without building it.
_OPEN = b'{"messages":['
_SYSTEM = (b'{"role":"system","content":', b"},")
_USER = b'{"role":"user","content":'
_ASSISTANT = b'},{"role":"assistant","content":'
_CLOSE = b"}]}\n"
_PREFERENCE = (b'{"prompt":', b',"chosen":', b',"rejected":', b"}\n")
_PROMPT_COMPLETION = (b'{"prompt":', b',"completion":', b"}\n")
_ROWS = (b'{"id":', b',"split":"', b'","prompt":', b',"answer":', b',"system":', b",", b"\n")
_REJECTED = b',"rejected":'
_SOURCE = b'"source":'
_VARIANT = b'"variant":'
_MESSAGES_SIZE = len(_OPEN) + len(_USER) + len(_ASSISTANT) + len(_CLOSE)
_SYSTEM_SIZE = len(_SYSTEM[0]) + len(_SYSTEM[1])
_PREFERENCE_SIZE = sum(map(len, _PREFERENCE))
_PROMPT_COMPLETION_SIZE = sum(map(len, _PROMPT_COMPLETION))
_ROWS_SIZE = sum(map(len, _ROWS))


def pieces(example: Renderable) -> list[bytes]:
    """The example as JSON pieces every format is put together from: id, input, target, system prompt,
    the model's own answer (b"" without one) and the rest of its ``rows.jsonl`` row.

    Each text is JSON-encoded once, by msgspec, to the bytes ``json.dumps(..., ensure_ascii=False)`` gives.
    """
    return family_pieces(example, ())[0]


def family_pieces(example: Renderable, variants: Iterable[tuple[str, str]]) -> list[list[bytes]]:
    """The :func:`pieces` of ``example`` and of its augmented variants, numbered from 1, each given as
    (input, system prompt) and otherwise the example, its id ``seed.example_id`` of its case and number:
    what they share is encoded once.

    The rest of a row is the JSON object ``{"case_id", "run_id", "source", "variant", "verdict",
    "criteria"}`` without its opening brace, put together from the encoded pieces around the two fields
    that vary, as msgspec writes the whole object (its keys in order, compact). A variant's id is its
    case id's JSON string with ``~NN`` before the closing quote: neither needs escaping."""
    verdict = example.verdict
    head = _ENCODE({"case_id": example.case_id, "run_id": example.run_id})[1:-1]
    tail = _ENCODE(
        {
            "verdict": None
            if verdict is None
            else {"passed": verdict.passed, "answered": verdict.answered, "prediction": verdict.prediction},
            "criteria": list(example.criteria),
        }
    )[1:]
    target = _ENCODE(example.target)
    rejected = b"" if example.rejected is None else _ENCODE(example.rejected)
    systems = {example.system: _ENCODE(example.system)}
    family = [
        [
            _ENCODE(example.example_id),
            _ENCODE(example.input),
            target,
            systems[example.system],
            rejected,
            b"%s,%s%s,%s%d,%s" % (head, _SOURCE, _ENCODE(example.source), _VARIANT, example.variant, tail),
        ]
    ]
    case = _ENCODE(example.case_id)[:-1]
    augmented = b"%s,%s%s,%s" % (head, _SOURCE, _ENCODE(Source.AUGMENTED), _VARIANT)
    for variant, (text, system) in enumerate(variants, start=1):
        encoded = systems.get(system)
        if encoded is None:
            encoded = systems[system] = _ENCODE(system)
        family.append(
            [
                b'%s~%02d"' % (case, variant),
                _ENCODE(text),
                target,
                encoded,
                rejected,
                b"%s%d,%s" % (augmented, variant, tail),
            ]
        )
    return family


def format_lines(which: int, batch: Sequence[Sequence[bytes]], split: Split) -> list[bytes]:
    """The lines of format number ``which`` (in ``FORMATS``) of a batch of examples' ``pieces``, leaving
    out the examples that format has no row for. Compact JSON, one line each, as ``json.dumps(row,
    ensure_ascii=False, separators=(",", ":"))`` writes the row."""
    if which == 0:  # {"messages": [system?, user, assistant]}: the system message only when there is one
        return [
            (_OPEN if system == _EMPTY else _OPEN + _SYSTEM[0] + system + _SYSTEM[1])
            + _USER
            + text
            + _ASSISTANT
            + target
            + _CLOSE
            for _, text, target, system, _, _ in batch
        ]
    if which == 1:  # {"prompt", "chosen", "rejected"}: only where the model gave a wrong answer
        return [
            b"".join((_PREFERENCE[0], text, _PREFERENCE[1], target, _PREFERENCE[2], rejected, _PREFERENCE[3]))
            for _, text, target, _, rejected, _ in batch
            if rejected
        ]
    if which == 2:  # {"prompt", "completion"}
        return [
            b"".join((_PROMPT_COMPLETION[0], text, _PROMPT_COMPLETION[1], target, _PROMPT_COMPLETION[2]))
            for _, text, target, _, _, _ in batch
        ]
    # {"id", "split", "prompt", "answer", "system", "rejected"?, then the rest: "case_id", "run_id",
    # "source", "variant", "verdict", "criteria"}
    named = _ROWS[1] + split.value.encode() + _ROWS[2]
    return [
        b"".join(
            (
                _ROWS[0],
                example_id,
                named,
                text,
                _ROWS[3],
                target,
                _ROWS[4],
                system,
                _REJECTED + rejected if rejected else b"",
                _ROWS[5],
                rest,
                _ROWS[6],
            )
        )
        for example_id, text, target, system, rejected, rest in batch
    ]


def sizes(family: Sequence[Sequence[bytes]], split: Split) -> tuple[list[int], list[int]]:
    """The rows and the bytes of each format's lines (in ``FORMATS`` order) of a family of examples'
    :func:`pieces` that share their target and the model's answer, as :func:`family_pieces` gives them,
    without building the lines."""
    count = len(family)
    target, rejected = len(family[0][2]), len(family[0][4])
    texts = ids = rests = systems = shown = with_system = 0
    for example_id, text, _, system, _, rest in family:
        texts += len(text)
        ids += len(example_id)
        rests += len(rest)
        systems += len(system)
        if system != _EMPTY:  # the messages hold a system message only when there is one
            with_system += 1
            shown += len(system)
    shared = texts + count * target
    messages = count * _MESSAGES_SIZE + shared + with_system * _SYSTEM_SIZE + shown
    rows = count * (_ROWS_SIZE + len(split.value)) + shared + systems + ids + rests
    preference = 0
    if rejected:
        preference = count * (_PREFERENCE_SIZE + rejected) + shared
        rows += count * (len(_REJECTED) + rejected)
    return (
        [count, count if rejected else 0, count, count],
        [messages, preference, count * _PROMPT_COMPLETION_SIZE + shared, rows],
    )


@dataclass
class FileStats:
    """What the manifest records about one data file."""

    rows: int = 0
    size: int = 0
    split_rows: dict[str, int] = field(default_factory=lambda: {s.value: 0 for s in SPLITS})
    digest: hashlib._Hash = field(default_factory=hashlib.sha256)

    def add(self, chunk: bytes, split: Split, rows: int) -> None:
        """``rows`` lines of ``split``, joined in ``chunk``."""
        self.rows += rows
        self.size += len(chunk)
        self.split_rows[split.value] += rows
        self.digest.update(chunk)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sha256": self.digest.hexdigest(),
            "rows": self.rows,
            "bytes": self.size,
            "split_rows": dict(self.split_rows),
        }
