"""Augmentation: deterministic rewordings of a seed that never touch a number."""

from __future__ import annotations

import hashlib

from hypothesis import given, settings
from hypothesis import strategies as st

from benchgen.bundle.spec import Augmentation
from benchgen.finetune.augment import NUMBER, AugmentSettings, augment, swap_connectors, variants
from benchgen.finetune.seed import Example, Source

EN = AugmentSettings.resolve(Augmentation(), "en")
TR = AugmentSettings.resolve(Augmentation(), "tr")


def seed(question: str, case_id: str = "q1", system: str = "You solve math.") -> Example:
    return Example(
        example_id=f"{case_id}~00",
        case_id=case_id,
        run_id="r",
        source=Source.SEED,
        input=question,
        target="Final answer: 72",
        system=system,
        rejected="68",
        criteria=["arithmetic"],
    )


QUESTION = "Ali buys 12 pens, then he sells 3,5 of them. He also pays 1.000 lira, but gets -7% back."

numbers = st.one_of(
    st.integers(-10_000, 10_000).map(str),
    st.sampled_from(["1.000", "3,5", "-7", "12%", "0.25", "1.234.567", "−3", "50%", "2,000.5"]),
)
CONNECTOR_WORDS = ["then", "Then", "THEN", "after that", "also", "but", "However", "so", "since", "Sonra"]
TURKISH_WORDS = ["ve", "ardından", "bu yüzden", "ama", "fakat", "ek olarak", "zira"]
OTHER_TOKENS = ["apples", "x", "-", "=", ",", ".", "%", "then,", "so-called"]
words = st.sampled_from(CONNECTOR_WORDS + TURKISH_WORDS + OTHER_TOKENS)
questions = st.builds(
    lambda parts, glue: glue.join(parts),
    st.lists(st.one_of(numbers, words), min_size=1, max_size=30),
    st.sampled_from([" ", "", "\n"]),
)
# A careless bundle: connectors and instructions that would themselves add or remove numbers.
RISKY = AugmentSettings.resolve(
    Augmentation(
        factor=6,
        connectors=[("then", "1"), ("also", "2 more"), ("but", "however")],
        prefixes=["Step 3: solve.", "Solve it."],
        suffixes=["Use 10% tax.", "Answer briefly."],
        system_prompts=["You have 5 tries."],
    ),
    "en",
)


@settings(max_examples=300, deadline=None)
@given(question=questions, case_id=st.text(min_size=1, max_size=12), chosen=st.sampled_from([EN, TR, RISKY]))
def test_no_variant_changes_a_number(question: str, case_id: str, chosen: AugmentSettings) -> None:
    # given any question mixing words, connectors and numbers, and default or careless settings
    example = seed(question, case_id)
    # when it is augmented
    variants = augment(example, chosen)
    # then every variant holds exactly the seed's numbers, in the same order
    for variant in variants:
        assert NUMBER.findall(variant.input) == NUMBER.findall(question)


def test_default_factor_gives_four_variants_besides_the_seed() -> None:
    variants = augment(seed(QUESTION), EN)
    assert [v.variant for v in variants] == [1, 2, 3, 4]
    assert [v.example_id for v in variants] == ["q1~01", "q1~02", "q1~03", "q1~04"]
    assert {v.source for v in variants} == {Source.AUGMENTED}


def test_variants_are_distinct_from_each_other_and_the_seed() -> None:
    original = seed(QUESTION)
    texts = {(v.input, v.system) for v in augment(original, EN)}
    assert len(texts) == 4
    assert (original.input, original.system) not in texts


def test_variants_keep_target_rejected_and_context() -> None:
    for variant in augment(seed(QUESTION), EN):
        assert (variant.target, variant.rejected, variant.case_id, variant.criteria) == (
            "Final answer: 72",
            "68",
            "q1",
            ["arithmetic"],
        )


def test_same_seed_gives_the_same_variants() -> None:
    assert augment(seed(QUESTION), EN) == augment(seed(QUESTION), EN)


def test_different_cases_get_different_variants() -> None:
    first = [v.input for v in augment(seed(QUESTION, "q1"), EN)]
    second = [v.input for v in augment(seed(QUESTION, "q2"), EN)]
    assert first != second


def test_every_variant_adds_an_instruction_from_the_lists() -> None:
    instructions = EN.prefixes + EN.suffixes
    for variant in augment(seed(QUESTION), EN):
        assert any(
            variant.input.startswith(i + "\n\n") or variant.input.endswith("\n\n" + i) for i in instructions
        )


def test_factor_counts_the_seed_itself() -> None:
    settings_ = AugmentSettings.resolve(Augmentation(factor=3), "en")
    assert len(augment(seed(QUESTION), settings_)) == 2


def test_factor_one_gives_no_variants() -> None:
    assert augment(seed(QUESTION), AugmentSettings.resolve(Augmentation(factor=1), "en")) == []


def test_connectors_swap_both_ways_keeping_case() -> None:
    text = "Sonra eve gitti, ardından SONRA uyudu."
    assert swap_connectors(text, (("ardından", "sonra"),)) == "Ardından eve gitti, sonra ARDINDAN uyudu."


def test_connectors_swap_whole_words_only() -> None:
    assert swap_connectors("sonrası ve sonra", (("ardından", "sonra"),)) == "sonrası ve ardından"


def test_multi_word_connectors_swap_as_a_unit() -> None:
    text = "Bu yüzden 5 elma aldı, bu nedenle 3 kaldı."
    assert (
        swap_connectors(text, (("bu yüzden", "bu nedenle"),)) == "Bu nedenle 5 elma aldı, bu yüzden 3 kaldı."
    )


def test_bundle_connectors_replace_the_defaults() -> None:
    bundle = AugmentSettings.resolve(Augmentation(connectors=[("ardından", "sonra")]), "tr")
    assert bundle.connectors == (("ardından", "sonra"),)
    assert TR.connectors[0] == ("ardından", "sonra") and len(TR.connectors) > 1


def test_instruction_carrying_a_number_is_never_used() -> None:
    # given a bundle whose only prefix would add the number 2
    risky = AugmentSettings.resolve(
        Augmentation(prefixes=["Answer in 2 steps."], suffixes=["Be brief."]), "en"
    )
    # when a question is augmented
    variants = augment(seed("Add 4 and 5."), risky)
    # then no variant carries the extra number, and the safe suffix is still used
    assert variants
    assert all("2" not in v.input and v.input.endswith("Be brief.") for v in variants)


def test_alternate_system_prompts_are_used() -> None:
    systems = {v.system for i in range(10) for v in augment(seed(QUESTION, f"case-{i}"), EN)}
    assert systems - {"You solve math."}


def reference_variants(
    case_id: str, text: str, system: str, chosen: AugmentSettings
) -> list[tuple[str, str]]:
    """The rule as stated, without shortcuts: swap the candidate's connector pairs, add its instruction,
    and keep it when it is new and the whole text's numbers are the question's."""
    numbers = NUMBER.findall(text)
    instructions = [(True, p) for p in chosen.prefixes] + [(False, s) for s in chosen.suffixes]
    systems = tuple(dict.fromkeys((system, *chosen.system_prompts)))
    seen, found = {(text, system)}, []
    for index in range(1, chosen.variants_per_seed * 8 + 1):
        key = f"{case_id}\x1f{index}" if chosen.seed == 0 else f"{case_id}\x1f{index}\x1f{chosen.seed}"
        digest = hashlib.sha256(key.encode()).digest()
        pairs = tuple(p for bit, p in enumerate(chosen.connectors) if digest[bit // 8] >> (bit % 8) & 1)
        candidate = swap_connectors(text, pairs)
        if instructions:
            prefix, instruction = instructions[int.from_bytes(digest[8:16], "big") % len(instructions)]
            candidate = f"{instruction}\n\n{candidate}" if prefix else f"{candidate}\n\n{instruction}"
        option = (candidate, systems[int.from_bytes(digest[16:24], "big") % len(systems)])
        if option not in seen and NUMBER.findall(candidate) == numbers:
            seen.add(option)
            found.append(option)
            if len(found) == chosen.variants_per_seed:
                break
    return found


# Connectors that hold number characters, or overlap each other, so that no shortcut can hide behind them.
TANGLED = AugmentSettings.resolve(
    Augmentation(
        factor=5,
        connectors=[("then", "after that"), ("after", "1"), ("so", "so-called"), ("that", ",")],
        prefixes=["Step 3: solve."],
        suffixes=["Be brief."],
    ),
    "en",
)


SEEDED = AugmentSettings.resolve(
    Augmentation(factor=4), "en", seed=7
)  # a preparation's own choice of variants


@settings(max_examples=300, deadline=None)
@given(
    question=questions,
    case_id=st.text(min_size=1, max_size=12),
    chosen=st.sampled_from([EN, TR, RISKY, TANGLED, SEEDED]),
)
def test_variants_are_the_rule_s_candidates_exactly(
    question: str, case_id: str, chosen: AugmentSettings
) -> None:
    # given any question and settings, careless ones included
    # when its variants are made
    made = variants(case_id, question, "You solve math.", chosen)
    # then they are exactly the candidates the rule keeps, found the long way
    assert made == reference_variants(case_id, question, "You solve math.", chosen)
