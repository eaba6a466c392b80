"""Export profiles: how a prepared example becomes one row of a trainer's file, and the limits it must meet.

A profile names the methods it accepts, the row shape of its training format, and the limits its provider
enforces: the number of rows, an approximate token length per row, and strings the provider reserves. The
limits are checked when a package is built (``benchgen.training.package``), so a trainer hears about them
before uploading, not when a job fails.

Row shapes follow the providers' documented formats: OpenAI chat and preference rows (also taken by
Together and Fireworks), Hugging Face TRL conversational SFT and DPO rows, Amazon Bedrock
``bedrock-conversation-2024`` (Nova) and prompt/completion (text models such as Llama 3.1), and SageMaker
serverless customization's SFT and DPO rows.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from benchgen.finetune.split import Split
from benchgen.training.examples import PreparedExample
from benchgen.vocabulary import Method

Row = dict[str, Any]

CHARS_PER_TOKEN = 4
LENGTH_RULE = (
    "about one token per 4 characters: ceil(characters / 4) of the system text, the prompt and the longer "
    "of the answers (chosen, rejected), since a trainer sees the prompt with one answer at a time"
)

# Nova fails a customization job whose prompts hold these strings (Amazon Nova user guide, "Preparing
# data for fine-tuning Understanding models"; providers.md). Each is replaced by a look-alike that keeps
# the meaning: the colon becomes " -", the brackets become parentheses. Matching is exact, as documented.
NOVA_RESERVED: Mapping[str, str] = MappingProxyType(
    {
        "User:": "User -",
        "Bot:": "Bot -",
        "Assistant:": "Assistant -",
        "System:": "System -",
        "<image>": "(image)",
        "<video>": "(video)",
        "[EOS]": "(EOS)",
    }
)


def approx_tokens(example: PreparedExample) -> int:
    """The approximate token length of the longest sequence a trainer builds from the example."""
    answer = max(len(example.chosen), len(example.rejected or ""))
    return math.ceil((len(example.system) + len(example.prompt) + answer) / CHARS_PER_TOKEN)


def rewrite_reserved(
    example: PreparedExample, reserved: Mapping[str, str]
) -> tuple[PreparedExample, Counter[str]]:
    """The example with every reserved string replaced in all of its texts, and how often each was found."""
    found: Counter[str] = Counter()
    if not reserved:
        return example, found

    def clean(text: str) -> str:
        for word, replacement in reserved.items():
            count = text.count(word)
            if count:
                found[word] += count
                text = text.replace(word, replacement)
        return text

    update: dict[str, str | None] = {
        "system": clean(example.system),
        "prompt": clean(example.prompt),
        "chosen": clean(example.chosen),
        "rejected": None if example.rejected is None else clean(example.rejected),
    }
    return (example.model_copy(update=update) if found else example), found


def _chat(example: PreparedExample) -> list[dict[str, str]]:
    system = [{"role": "system", "content": example.system}] if example.system else []
    return [*system, {"role": "user", "content": example.prompt}]


def _assistant(text: str) -> list[dict[str, str]]:
    return [{"role": "assistant", "content": text}]


def _rejected(example: PreparedExample) -> str:
    # The package refuses a preference profile for examples without a rejected answer before rendering.
    if example.rejected is None:
        raise ValueError(f"example {example.example_id} has no rejected answer")
    return example.rejected


def messages_row(example: PreparedExample) -> Row:
    """OpenAI chat fine-tuning, TRL conversational SFT, Together SFT: system?, user, assistant."""
    return {"messages": [*_chat(example), *_assistant(example.chosen)]}


def openai_preference_row(example: PreparedExample) -> Row:
    """OpenAI (and Together) DPO: the prompt as input messages, one preferred and one non-preferred output."""
    return {
        "input": {"messages": _chat(example)},
        "preferred_output": _assistant(example.chosen),
        "non_preferred_output": _assistant(_rejected(example)),
    }


def trl_dpo_row(example: PreparedExample) -> Row:
    """TRL DPOTrainer, conversational: an explicit prompt, chosen and rejected as message lists."""
    return {
        "prompt": _chat(example),
        "chosen": _assistant(example.chosen),
        "rejected": _assistant(_rejected(example)),
    }


def bedrock_conversation_row(example: PreparedExample) -> Row:
    """Bedrock ``bedrock-conversation-2024``: optional system, a user turn first, the assistant turn last."""
    row: Row = {"schemaVersion": "bedrock-conversation-2024"}
    if example.system:
        row["system"] = [{"text": example.system}]
    row["messages"] = [
        {"role": "user", "content": [{"text": example.prompt}]},
        {"role": "assistant", "content": [{"text": example.chosen}]},
    ]
    return row


def prompt_completion_row(example: PreparedExample) -> Row:
    """Bedrock text models: plain prompt and completion. They take no system text, so it leads the prompt."""
    prompt = f"{example.system}\n\n{example.prompt}" if example.system else example.prompt
    return {"prompt": prompt, "completion": example.chosen}


def sagemaker_sft_row(example: PreparedExample) -> Row:
    """SageMaker serverless SFT, string form: optional system, prompt, completion."""
    row: Row = {"system": example.system} if example.system else {}
    return row | {"prompt": example.prompt, "completion": example.chosen}


def sagemaker_dpo_row(example: PreparedExample) -> Row:
    """SageMaker serverless DPO, string form: optional system, prompt, chosen, rejected."""
    row: Row = {"system": example.system} if example.system else {}
    return row | {"prompt": example.prompt, "chosen": example.chosen, "rejected": _rejected(example)}


@dataclass(frozen=True)
class Profile:
    """One export profile: its row shape, the methods it takes and the limits its provider sets."""

    id: str
    title: str
    methods: frozenset[Method]
    render: Callable[[PreparedExample], Row]
    shape: str  # the row shape in one line, for the package README
    use: str  # how the files are used, for the package README
    min_rows: int = 1  # a file with no training row trains nothing
    max_rows: int | None = None
    counted: tuple[Split, ...] = (Split.TRAIN,)  # the files the row limits count
    max_row_tokens: int | None = None  # None: the provider publishes no per-row figure
    reserved: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # OpenAI: the same prompt must not sit in both the training and the validation file
    # (finetune-formats.md). Two cases with one question text can land in the two splits.
    distinct_validation: bool = False

    def accepts(self, method: Method) -> bool:
        return method in self.methods

    def limits(self) -> dict[str, Any]:
        """The limits as the manifest records them."""
        return {
            "rows": {
                "min": self.min_rows,
                "max": self.max_rows,
                "counted": [split.value for split in self.counted],
            },
            "row_tokens": {"max": self.max_row_tokens, "approximation": LENGTH_RULE},
            "reserved_strings": dict(self.reserved),
            "validation_prompts_distinct_from_training": self.distinct_validation,
        }


_SFT = frozenset({Method.DEMONSTRATION})
_PREFERENCE = frozenset({Method.PREFERENCE})
_TRAIN_AND_VALIDATION = (Split.TRAIN, Split.VALIDATION)
# OpenAI: "at least 10 examples" (finetune-formats.md); a training example may hold up to 65,536 tokens
# for gpt-4o-mini (OpenAI fine-tuning guide, token limits); longer ones are truncated, so they are dropped.
_OPENAI_MIN_ROWS = 10
_OPENAI_ROW_TOKENS = 65_536

PROFILES: dict[str, Profile] = {
    profile.id: profile
    for profile in (
        Profile(
            id="openai-chat",
            title="OpenAI chat fine-tuning (supervised)",
            methods=_SFT,
            render=messages_row,
            shape='{"messages": [system?, user, assistant]}',
            use="Upload train.jsonl as the training file and validation.jsonl as the validation file of a "
            'fine-tuning job with method type "supervised".',
            min_rows=_OPENAI_MIN_ROWS,
            max_row_tokens=_OPENAI_ROW_TOKENS,
            distinct_validation=True,
        ),
        Profile(
            id="openai-preference",
            title="OpenAI preference fine-tuning (DPO)",
            methods=_PREFERENCE,
            render=openai_preference_row,
            shape='{"input": {"messages": [system?, user]}, "preferred_output": [assistant], '
            '"non_preferred_output": [assistant]}',
            use="Upload train.jsonl as the training file and validation.jsonl as the validation file of a "
            'fine-tuning job with method type "dpo".',
            min_rows=_OPENAI_MIN_ROWS,
            max_row_tokens=_OPENAI_ROW_TOKENS,
            distinct_validation=True,
        ),
        # TRL sets no row count, and its trainers truncate at the max_length chosen when training.
        Profile(
            id="trl-sft",
            title="Hugging Face TRL SFTTrainer (conversational)",
            methods=_SFT,
            render=messages_row,
            shape='{"messages": [system?, user, assistant]}',
            use='Load with datasets.load_dataset("json", data_files={"train": "train.jsonl", '
            '"validation": "validation.jsonl"}) and pass the splits to SFTTrainer.',
        ),
        Profile(
            id="trl-dpo",
            title="Hugging Face TRL DPOTrainer (conversational, explicit prompt)",
            methods=_PREFERENCE,
            render=trl_dpo_row,
            shape='{"prompt": [system?, user], "chosen": [assistant], "rejected": [assistant]}',
            use='Load with datasets.load_dataset("json", data_files={"train": "train.jsonl", '
            '"validation": "validation.jsonl"}) and pass the splits to DPOTrainer.',
        ),
        # Nova Micro/Lite/Pro on Bedrock: 8 to 20,000 training rows (providers.md, Nova table); the
        # provider notes give no per-row token figure, so none is enforced here.
        Profile(
            id="bedrock-conversation",
            title="Amazon Bedrock bedrock-conversation-2024 (Nova)",
            methods=_SFT,
            render=bedrock_conversation_row,
            shape='{"schemaVersion": "bedrock-conversation-2024", "system"?: [{"text"}], "messages": '
            '[{"role": "user", "content": [{"text"}]}, {"role": "assistant", "content": [{"text"}]}]}',
            use="Copy train.jsonl and validation.jsonl to S3 and name them as the training and validation "
            "data of a Bedrock model customization job (customizationType FINE_TUNING).",
            min_rows=8,
            max_rows=20_000,
            reserved=NOVA_RESERVED,
        ),
        # Llama 3.1 8B/70B on Bedrock: 100 to 10,000 rows counting training and validation, at most
        # about 16k tokens of input and output per row (providers.md, Llama 3.1 row).
        Profile(
            id="bedrock-prompt-completion",
            title="Amazon Bedrock prompt/completion (text models such as Llama 3.1)",
            methods=_SFT,
            render=prompt_completion_row,
            shape='{"prompt", "completion"} (the system text, if any, leads the prompt)',
            use="Copy train.jsonl and validation.jsonl to S3 and name them as the training and validation "
            "data of a Bedrock model customization job (customizationType FINE_TUNING).",
            min_rows=100,
            max_rows=10_000,
            counted=_TRAIN_AND_VALIDATION,
            max_row_tokens=16_000,
        ),
        # SageMaker serverless customization sets the sequence length per job (SequenceLength) and
        # publishes no row count in the provider notes.
        Profile(
            id="sagemaker-sft",
            title="Amazon SageMaker serverless customization, SFT",
            methods=_SFT,
            render=sagemaker_sft_row,
            shape='{"system"?, "prompt", "completion"} (strings)',
            use="Copy train.jsonl and validation.jsonl to S3 as the training and validation channels of a "
            "training job with CustomizationTechnique SFT.",
        ),
        Profile(
            id="sagemaker-dpo",
            title="Amazon SageMaker serverless customization, DPO",
            methods=_PREFERENCE,
            render=sagemaker_dpo_row,
            shape='{"system"?, "prompt", "chosen", "rejected"} (strings)',
            use="Copy train.jsonl and validation.jsonl to S3 as the training and validation channels of a "
            "training job with CustomizationTechnique DPO.",
        ),
        # Together takes OpenAI's rows (providers.md); the notes give it no row or token limit.
        Profile(
            id="together-sft",
            title="Together AI fine-tuning, SFT (OpenAI chat rows)",
            methods=_SFT,
            render=messages_row,
            shape='{"messages": [system?, user, assistant]}',
            use='Upload train.jsonl and validation.jsonl with purpose "fine-tune" and start a fine-tune '
            'with training_method "sft".',
        ),
        Profile(
            id="together-dpo",
            title="Together AI fine-tuning, DPO (OpenAI preference rows)",
            methods=_PREFERENCE,
            render=openai_preference_row,
            shape='{"input": {"messages": [system?, user]}, "preferred_output": [assistant], '
            '"non_preferred_output": [assistant]}',
            use='Upload train.jsonl and validation.jsonl with purpose "fine-tune" and start a fine-tune '
            'with training_method "dpo".',
        ),
    )
}


def profiles_for(method: Method) -> list[str]:
    """The ids of the profiles that accept ``method``, in listing order."""
    return [profile.id for profile in PROFILES.values() if profile.accepts(method)]
