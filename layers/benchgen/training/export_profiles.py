"""Export profiles: how a prepared example becomes one row of a trainer's file, and the limits it must meet.

A profile names the methods it accepts, the row shape of its training format, and the limits its provider
enforces: the number of rows, an approximate token length per row, and strings the provider reserves. The
limits are checked when a package is built (``benchgen.training.package``), so a trainer hears about them
before uploading, not when a job fails.

Row shapes follow the providers' documented formats: OpenAI chat and preference rows (also taken by
Together and Fireworks), Hugging Face TRL conversational SFT and DPO rows, Amazon Bedrock
``bedrock-conversation-2024`` (Nova) and prompt/completion (text models such as Llama 3.1), and SageMaker
serverless customization's SFT and DPO rows. Reinforcement profiles add the grader as ``grader.py``,
built from the environment's own scoring (``benchgen.scoring.reward.grader_source``): TRL ``GRPOTrainer``,
Amazon Bedrock reinforcement fine-tuning (a Lambda grader), OpenAI reinforcement fine-tuning (a python
grader) and a generic one (prompts, grading fields and a grader command).
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


def _grading(example: PreparedExample) -> dict[str, Any]:
    # The package refuses a reinforcement profile for examples without grading fields before rendering.
    if example.grading is None:
        raise ValueError(f"example {example.example_id} has no grading fields")
    return example.grading


def trl_grpo_row(example: PreparedExample) -> Row:
    """TRL GRPOTrainer, conversational prompt-only: ``prompt`` as messages; every other column (here
    ``grading``) reaches the reward functions as a keyword argument of the same name."""
    return {"prompt": _chat(example), "grading": _grading(example)}


def bedrock_rft_row(example: PreparedExample) -> Row:
    """Bedrock reinforcement fine-tuning: OpenAI chat-completion ``messages`` holding the prompt, and
    ``reference_answer``, what the grader Lambda scores the response against (any JSON)."""
    return {"messages": _chat(example), "reference_answer": _grading(example)}


def grading_row(example: PreparedExample) -> Row:
    """OpenAI reinforcement fine-tuning (and the generic profile): ``messages`` ending with the user turn,
    and the grader's fields as an extra top-level key, which a python grader reads as ``item["grading"]``."""
    return {"messages": _chat(example), "grading": _grading(example)}


# Bedrock calls the grader Lambda with a list of samples, each the training row with the model's response
# appended to ``messages`` as the assistant turn and an ``id`` added; the reference answer is at the top of
# the sample (Nova user guide, "Implementing reward functions") or under ``metadata`` (Bedrock user guide,
# "Setting up reward functions for Amazon Nova models"). It answers one ``{"id", "aggregate_reward_score"}``
# per sample.
_BEDROCK_HANDLER = """

def _response_text(message):
    content = message.get("content", "")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def lambda_handler(event, context):
    \"\"\"Amazon Bedrock reinforcement fine-tuning's grader Lambda: a reward in [0, 1] per sample.\"\"\"
    samples = event if isinstance(event, list) else [event]
    rewards = []
    for sample in samples:
        messages = sample.get("messages") or []
        last = messages[-1] if messages else {}
        completion = _response_text(last) if last.get("role") == "assistant" else ""
        fields = sample.get("reference_answer")
        if fields is None:
            fields = (sample.get("metadata") or {}).get("reference_answer")
        rewards.append({"id": sample.get("id"), "aggregate_reward_score": score(fields, completion)})
    return rewards
"""

# The generic grader command: JSON lines of {"grading", "completion"} in, one {"reward"} line out for each.
GRADER_COMMAND = "python grader.py < completions.jsonl > rewards.jsonl"
# An environment that judges with its own scoring program is graded by that program, run as a run's is.
PROGRAM_COMMAND = "benchgen score --bundle <the environment's bundle> --submission predictions.jsonl"
_GENERIC_MAIN = """

if __name__ == "__main__":
    import json
    import sys

    for line in sys.stdin:
        if line.strip():
            record = json.loads(line)
            print(json.dumps({"reward": score(record["grading"], record["completion"])}))
"""


def plain_grader() -> str:
    """The environment's scoring as a stdlib-only module: ``score``, ``grade`` and ``reward_func``."""
    # Imported here: the reward builds every template's judge, which only a reinforcement package needs,
    # and the task functions that import the profiles would pay for it at every cold start.
    from benchgen.scoring.reward import grader_source

    return grader_source()


def bedrock_grader() -> str:
    """The grader with the Lambda handler Bedrock reinforcement fine-tuning calls."""
    return plain_grader() + _BEDROCK_HANDLER


def command_grader() -> str:
    """The grader with a command line: completions with their grading fields in, rewards out."""
    return plain_grader() + _GENERIC_MAIN


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
    grader: Callable[[], str] | None = None  # reinforcement: the source of the package's grader.py
    # Reinforcement: whether the profile can name an environment's own scoring program as the grader
    # instead of grader.py (which holds the built-in templates' scoring only).
    grades_with_programs: bool = False
    # Reinforcement: whether grader.py runs where the trainer runs, so it can run a code case's tests (their
    # command and whatever they import); a provider's grader sandbox holds neither.
    runs_tests: bool = False
    # Reinforcement: why grader.py cannot ask a model that grades answers against a rubric (None: it can,
    # running where the trainer runs, with the endpoint and its key set in the grader's environment).
    no_grading_model: str | None = None

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
_REINFORCEMENT = frozenset({Method.REINFORCEMENT})
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
        # TRL's GRPOTrainer takes a prompt-only dataset and reward functions called as
        # reward_func(prompts=..., completions=..., completion_ids=..., **columns) -> list[float]; it sets
        # no row count.
        Profile(
            id="trl-grpo",
            title="Hugging Face TRL GRPOTrainer (conversational prompts, the benchmark's scoring as reward)",
            methods=_REINFORCEMENT,
            render=trl_grpo_row,
            shape='{"prompt": [system?, user], "grading": {...}}',
            use='Load with datasets.load_dataset("json", data_files={"train": "train.jsonl", '
            '"validation": "validation.jsonl"}), then `from grader import reward_func` and pass '
            "reward_funcs=reward_func to GRPOTrainer: it receives each completion with its row's grading "
            "column and returns a reward in [0, 1]. grader.py imports only the standard library.",
            grader=plain_grader,
            runs_tests=True,
        ),
        # Bedrock reinforcement fine-tuning (customizationType REINFORCEMENT_FINE_TUNING): 100 to 20,000
        # training records in OpenAI chat-completion format (Bedrock user guide, "Prepare data for Amazon
        # Nova models" and "Prepare data for open-weight models").
        Profile(
            id="bedrock-rft",
            title="Amazon Bedrock reinforcement fine-tuning (Lambda grader)",
            methods=_REINFORCEMENT,
            render=bedrock_rft_row,
            shape='{"messages": [system?, user], "reference_answer": {...}}',
            use="Deploy grader.py as a Lambda function (handler grader.lambda_handler, Python 3.11 or later, "
            "a timeout well above the default 3 seconds), copy train.jsonl and validation.jsonl to S3, and "
            "name them with the Lambda's ARN as the grader of a Bedrock model customization job with "
            "customizationType REINFORCEMENT_FINE_TUNING.",
            min_rows=100,
            max_rows=20_000,
            grader=bedrock_grader,
            no_grading_model="its grader Lambda would have to reach the grading model's endpoint over the "
            "network with the endpoint's key set in your account, which this package cannot set up or check",
        ),
        # OpenAI reinforcement fine-tuning: chat rows whose last message is the user's, extra keys for the
        # grader, a training and a validation file; the python grader defines grade(sample, item) and
        # returns a float, reading the row's keys from item (OpenAI graders guide).
        Profile(
            id="openai-rft",
            title="OpenAI reinforcement fine-tuning (python grader)",
            methods=_REINFORCEMENT,
            render=grading_row,
            shape='{"messages": [system?, user], "grading": {...}}',
            use="Upload train.jsonl as the training file and validation.jsonl as the validation file of a "
            'fine-tuning job with method type "reinforcement" and a grader {"type": "python", "source": '
            '<the text of grader.py>}; OpenAI calls its grade(sample, item), and item["grading"] holds '
            "the row's grading fields.",
            min_rows=_OPENAI_MIN_ROWS,
            max_row_tokens=_OPENAI_ROW_TOKENS,
            distinct_validation=True,
            grader=plain_grader,
            # OpenAI graders guide: a python grader runs sandboxed, without network access; its score_model
            # grader asks an OpenAI model for one number in its `range`, not the rubric's per-criterion
            # scores read strictly, so its reward would not be the run's verdict.
            no_grading_model="OpenAI runs a python grader without network access, so grader.py cannot "
            "ask the grading model, and OpenAI's score_model grader reads one number from an OpenAI model "
            "rather than the rubric's scores as the run read them",
        ),
        Profile(
            id="generic",
            title="Generic reinforcement (prompts, grading fields and a grader command)",
            methods=_REINFORCEMENT,
            render=grading_row,
            shape='{"messages": [system?, user], "grading": {...}}',
            use=f"Sample completions for the prompts and score them with `{GRADER_COMMAND}`: each input "
            'line is {"grading": <the row\'s grading>, "completion": <text>}, each output line '
            '{"reward": <0 to 1, or null: no reward>}. grader.py imports only the standard library.',
            grader=command_grader,
            grades_with_programs=True,
            runs_tests=True,
        ),
    )
}


def profiles_for(method: Method) -> list[str]:
    """The ids of the profiles that accept ``method``, in listing order."""
    return [profile.id for profile in PROFILES.values() if profile.accepts(method)]
