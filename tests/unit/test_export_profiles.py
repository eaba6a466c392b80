"""Export profiles: each profile's rows have its format's documented shape, and its limits are its provider's.

The shape checkers below are written from the providers' documented row formats (OpenAI chat and
preference fine-tuning, TRL SFT and DPO, Bedrock bedrock-conversation-2024 and prompt/completion, SageMaker
serverless SFT and DPO; for reinforcement, TRL GRPOTrainer's prompt-only rows, Bedrock reinforcement
fine-tuning's chat rows with a ``reference_answer``, and OpenAI reinforcement fine-tuning's chat rows whose
last message is the user's, with extra keys for the grader). Each one rejects what the provider would
reject: missing or extra keys, the wrong role order, content that is not text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from benchgen.finetune.split import Split
from benchgen.training.examples import PreparedExample
from benchgen.training.export_profiles import (
    NOVA_RESERVED,
    PROFILES,
    approx_tokens,
    profiles_for,
    rewrite_reserved,
)
from benchgen.vocabulary import Method
from tests.unit.preparations import GRADING, SYSTEM, example

PROMPT = "A train covers 120 km in 2 hours. What is its speed?"
GOOD = "120 / 2 = 60.\n\nFinal answer: 60 km/h"
BAD = "The speed is 240 km/h."


def _message(value: Any, role: str) -> str:
    assert isinstance(value, dict) and set(value) == {"role", "content"}, value
    assert value["role"] == role
    assert isinstance(value["content"], str) and value["content"]
    return str(value["content"])


def _prompt_messages(messages: Any, system: str) -> str:
    """system? then user, as the OpenAI and TRL chat formats write a prompt; returns the user text."""
    assert isinstance(messages, list)
    if system:
        assert _message(messages[0], "system") == system
        messages = messages[1:]
    assert len(messages) == 1
    return _message(messages[0], "user")


def _one_assistant(value: Any) -> str:
    assert isinstance(value, list) and len(value) == 1
    return _message(value[0], "assistant")


def openai_chat(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    assert set(row) == {"messages"}
    messages = row["messages"]
    return _prompt_messages(messages[:-1], system), _one_assistant(messages[-1:]), None


def openai_preference(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    assert set(row) == {"input", "preferred_output", "non_preferred_output"}
    assert set(row["input"]) == {"messages"}
    prompt = _prompt_messages(row["input"]["messages"], system)
    return prompt, _one_assistant(row["preferred_output"]), _one_assistant(row["non_preferred_output"])


def trl_dpo(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    assert set(row) == {"prompt", "chosen", "rejected"}
    prompt = _prompt_messages(row["prompt"], system)
    return prompt, _one_assistant(row["chosen"]), _one_assistant(row["rejected"])


def _text_blocks(content: Any) -> str:
    assert isinstance(content, list) and content
    for block in content:
        assert isinstance(block, dict) and set(block) == {"text"} and isinstance(block["text"], str)
    return "".join(block["text"] for block in content)


def bedrock_conversation(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    assert row["schemaVersion"] == "bedrock-conversation-2024"
    assert set(row) == ({"schemaVersion", "system", "messages"} if system else {"schemaVersion", "messages"})
    if system:
        assert _text_blocks(row["system"]) == system
    messages = row["messages"]
    # user first, assistant last, turns alternating, roles user and assistant only
    assert [m["role"] for m in messages] == ["user", "assistant"]
    for message in messages:
        assert set(message) == {"role", "content"}
    return _text_blocks(messages[0]["content"]), _text_blocks(messages[1]["content"]), None


def _strings(row: dict[str, Any], keys: set[str], system: str) -> None:
    assert set(row) == (keys | {"system"} if system else keys)
    assert all(isinstance(value, str) and value for value in row.values())
    if system:
        assert row["system"] == system


def prompt_completion(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    _strings(row, {"prompt", "completion"}, "")
    prompt = str(row["prompt"])
    if system:
        # text models take no system text: it leads the prompt
        assert prompt.startswith(system + "\n\n")
        prompt = prompt.removeprefix(system + "\n\n")
    return prompt, row["completion"], None


def sagemaker_sft(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    _strings(row, {"prompt", "completion"}, system)
    return row["prompt"], row["completion"], None


def sagemaker_dpo(row: dict[str, Any], system: str) -> tuple[str, str, str | None]:
    _strings(row, {"prompt", "chosen", "rejected"}, system)
    return row["prompt"], row["chosen"], row["rejected"]


Checker = Callable[[dict[str, Any], str], tuple[str, str, str | None]]
SHAPES: dict[str, Checker] = {
    "openai-chat": openai_chat,
    "openai-preference": openai_preference,
    "trl-sft": openai_chat,
    "trl-dpo": trl_dpo,
    "bedrock-conversation": bedrock_conversation,
    "bedrock-prompt-completion": prompt_completion,
    "sagemaker-sft": sagemaker_sft,
    "sagemaker-dpo": sagemaker_dpo,
    "together-sft": openai_chat,
    "together-dpo": openai_preference,
}


def _grading(value: Any) -> dict[str, Any]:
    assert isinstance(value, dict) and value, value
    return value


def trl_grpo(row: dict[str, Any], system: str) -> tuple[str, dict[str, Any]]:
    """GRPOTrainer, conversational prompt-only: ``prompt`` as messages; other columns go to the reward."""
    assert set(row) == {"prompt", "grading"}
    return _prompt_messages(row["prompt"], system), _grading(row["grading"])


def bedrock_rft(row: dict[str, Any], system: str) -> tuple[str, dict[str, Any]]:
    """Bedrock RFT: OpenAI chat-completion ``messages`` holding the prompt, and ``reference_answer``."""
    assert set(row) == {"messages", "reference_answer"}
    return _prompt_messages(row["messages"], system), _grading(row["reference_answer"])


def openai_rft(row: dict[str, Any], system: str) -> tuple[str, dict[str, Any]]:
    """OpenAI RFT: ``messages`` whose last message is the user's, and extra keys the grader reads."""
    assert set(row) == {"messages", "grading"}
    assert row["messages"][-1]["role"] == "user"
    return _prompt_messages(row["messages"], system), _grading(row["grading"])


REINFORCEMENT_SHAPES: dict[str, Callable[[dict[str, Any], str], tuple[str, dict[str, Any]]]] = {
    "trl-grpo": trl_grpo,
    "bedrock-rft": bedrock_rft,
    "openai-rft": openai_rft,
    "generic": openai_rft,
}


def _example(system: str) -> PreparedExample:
    return example("c001", Split.TRAIN, prompt=PROMPT, chosen=GOOD, rejected=BAD, system=system)


def test_every_required_profile_exists_with_a_shape_check() -> None:
    assert set(PROFILES) == set(SHAPES) | set(REINFORCEMENT_SHAPES)


@pytest.mark.parametrize("system", [SYSTEM, ""], ids=["with-system", "no-system"])
@pytest.mark.parametrize("profile_id", sorted(REINFORCEMENT_SHAPES))
def test_reinforcement_rows_have_the_documented_shape_and_carry_the_grading(
    profile_id: str, system: str
) -> None:
    # given a reinforcement example with (or without) a system text
    given = example(
        "c001", Split.TRAIN, prompt=PROMPT, chosen=GOOD, rejected=None, system=system, grading=GRADING
    )
    # when a reinforcement profile renders it
    row = PROFILES[profile_id].render(given)
    # then the row is a prompt for the policy to answer, with no answer in it, and the grading fields
    prompt, grading = REINFORCEMENT_SHAPES[profile_id](row, system)
    assert (prompt, grading) == (PROMPT, GRADING)
    assert GOOD not in str(row)


def test_a_reinforcement_row_ending_with_an_answer_fails_its_shape_check() -> None:
    given = example("c001", Split.TRAIN, prompt=PROMPT, system="", grading=GRADING)
    row = PROFILES["openai-rft"].render(given)
    row["messages"].append({"role": "assistant", "content": GOOD})
    with pytest.raises(AssertionError):
        openai_rft(row, "")


@pytest.mark.parametrize("system", [SYSTEM, ""], ids=["with-system", "no-system"])
@pytest.mark.parametrize("profile_id", sorted(SHAPES))
def test_rows_have_the_documented_shape_and_carry_the_texts(profile_id: str, system: str) -> None:
    # given an example with (or without) a system text, and a profile
    profile = PROFILES[profile_id]

    # when it renders the example
    row = profile.render(_example(system))

    # then the row has the format's shape, with the prompt, the gold target and (preference) the model's
    # own wrong answer in their places
    prompt, chosen, rejected = SHAPES[profile_id](row, system)
    assert (prompt, chosen) == (PROMPT, GOOD)
    if Method.PREFERENCE in profile.methods:
        assert rejected == BAD
    else:
        assert rejected is None


def test_a_row_with_another_role_order_fails_its_shape_check() -> None:
    # the checkers reject what the provider rejects: the assistant turn first
    row = PROFILES["bedrock-conversation"].render(_example(""))
    row["messages"].reverse()
    with pytest.raises(AssertionError):
        bedrock_conversation(row, "")


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        (
            Method.DEMONSTRATION,
            [
                "openai-chat",
                "trl-sft",
                "bedrock-conversation",
                "bedrock-prompt-completion",
                "sagemaker-sft",
                "together-sft",
            ],
        ),
        (Method.PREFERENCE, ["openai-preference", "trl-dpo", "sagemaker-dpo", "together-dpo"]),
        (Method.REINFORCEMENT, ["trl-grpo", "bedrock-rft", "openai-rft", "generic"]),
    ],
)
def test_each_method_has_its_profiles(method: Method, expected: list[str]) -> None:
    assert profiles_for(method) == expected


@pytest.mark.parametrize(
    ("profile_id", "rows", "tokens", "counted"),
    [
        ("openai-chat", (10, None), 65_536, ["train"]),
        ("openai-preference", (10, None), 65_536, ["train"]),
        ("bedrock-conversation", (8, 20_000), None, ["train"]),
        ("bedrock-prompt-completion", (100, 10_000), 16_000, ["train", "validation"]),
        ("trl-sft", (1, None), None, ["train"]),
        ("trl-grpo", (1, None), None, ["train"]),
        ("bedrock-rft", (100, 20_000), None, ["train"]),
        ("openai-rft", (10, None), 65_536, ["train"]),
    ],
)
def test_limits_are_the_providers(
    profile_id: str, rows: tuple[int, int | None], tokens: int | None, counted: list[str]
) -> None:
    limits = PROFILES[profile_id].limits()
    assert (limits["rows"]["min"], limits["rows"]["max"]) == rows
    assert limits["rows"]["counted"] == counted
    assert limits["row_tokens"]["max"] == tokens


def test_only_the_nova_profile_reserves_strings() -> None:
    reserving = [p.id for p in PROFILES.values() if p.reserved]
    assert reserving == ["bedrock-conversation"]
    assert set(NOVA_RESERVED) == {"User:", "Bot:", "Assistant:", "System:", "<image>", "<video>", "[EOS]"}


def test_reserved_strings_are_rewritten_in_every_text_and_counted() -> None:
    # given an example whose texts hold Nova's reserved strings
    given = example(
        "c001",
        Split.TRAIN,
        system="System: be brief",
        prompt="User: what is shown in <image>? Bot: a cat. User: and [EOS]",
        chosen="Assistant: a cat",
        rejected="<video>",
    )

    # when they are rewritten
    rewritten, found = rewrite_reserved(given, NOVA_RESERVED)

    # then none is left, each is counted, and the words around them are kept
    texts = [rewritten.system, rewritten.prompt, rewritten.chosen, rewritten.rejected or ""]
    assert not any(word in text for word in NOVA_RESERVED for text in texts)
    assert rewritten.prompt == "User - what is shown in (image)? Bot - a cat. User - and (EOS)"
    assert rewritten.system == "System - be brief"
    assert dict(found) == {
        "System:": 1,
        "User:": 2,
        "<image>": 1,
        "Bot:": 1,
        "[EOS]": 1,
        "Assistant:": 1,
        "<video>": 1,
    }


def test_an_example_without_reserved_strings_is_left_as_it_is() -> None:
    given = _example(SYSTEM)
    rewritten, found = rewrite_reserved(given, NOVA_RESERVED)
    assert rewritten is given
    assert not found


def test_token_length_is_characters_over_four_of_system_prompt_and_longer_answer() -> None:
    # 8 + 16 characters of prompt side, the rejected answer (12) is longer than the chosen one (4)
    given = example("c001", Split.TRAIN, system="x" * 8, prompt="y" * 16, chosen="z" * 4, rejected="w" * 13)
    assert approx_tokens(given) == 10  # ceil((8 + 16 + 13) / 4)
