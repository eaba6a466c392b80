"""Deterministic variants of a seed example that keep every number of its question.

A variant rewords connectors (both ways, whole words, case kept), adds an instruction prefix or suffix and
may change the system prompt. Which of these a variant gets is read from the bytes of
``sha256(case id, candidate index)`` (with the settings' seed mixed in when it is not 0), so the same seed
always yields the same variants on every machine, and another seed chooses others.
A candidate whose input would not hold exactly the seed's numbers in the seed's order (a careless connector
pair such as ``[then, 1]`` could add, drop or reorder one), or that repeats an earlier text, is skipped.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from benchgen.bundle.spec import Augmentation
from benchgen.finetune.seed import Example, Source, example_id

DEFAULT_CONNECTORS: dict[str, tuple[tuple[str, str], ...]] = {
    "en": (
        ("then", "after that"),
        ("also", "additionally"),
        ("but", "however"),
        ("so", "therefore"),
        ("because", "since"),
    ),
    "tr": (
        ("ardından", "sonra"),
        ("ama", "fakat"),
        ("bu yüzden", "bu nedenle"),
        ("ayrıca", "ek olarak"),
        ("çünkü", "zira"),
    ),
}
DEFAULT_PREFIXES: dict[str, tuple[str, ...]] = {
    "en": (
        "Solve the following problem.",
        "Read the question carefully and answer it.",
        "Answer the question below.",
        "Work through this problem step by step.",
    ),
    "tr": (
        "Aşağıdaki soruyu çözün.",
        "Soruyu dikkatlice okuyup cevaplayın.",
        "Aşağıdaki soruyu cevaplayın.",
        "Bu problemi adım adım çözün.",
    ),
}
DEFAULT_SUFFIXES: dict[str, tuple[str, ...]] = {
    "en": (
        "Explain briefly, then give the final answer.",
        "Show your reasoning in a few sentences.",
        "End with the final answer.",
    ),
    "tr": (
        "Kısaca açıklayıp son cevabı verin.",
        "Düşüncenizi birkaç cümleyle gösterin.",
        "Son cevabı açıkça belirtin.",
    ),
}
DEFAULT_SYSTEM_PROMPTS: dict[str, tuple[str, ...]] = {
    "en": (
        "You are a careful assistant that solves problems step by step.",
        "You are a patient tutor: explain briefly and state the final answer.",
    ),
    "tr": (
        "Sen problemleri adım adım çözen dikkatli bir asistansın.",
        "Sen sabırlı bir öğretmensin: kısaca açıkla ve son cevabı belirt.",
    ),
}

# A number token: optional sign, digits with "." or "," groups (1.000, 3,5), an optional percent sign.
NUMBER = re.compile(r"[-−]?\d+(?:[.,]\d+)*%?")
# Candidates tried per wanted variant before giving up on a seed whose text leaves little to vary.
ATTEMPTS_PER_VARIANT = 8


@dataclass(frozen=True)
class Settings:
    """The augmentation actually applied: the bundle's lists, or the language defaults where it gives none."""

    factor: int
    connectors: tuple[tuple[str, str], ...]
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]
    system_prompts: tuple[str, ...]
    seed: int = 0  # 0 is the run artifact's choice; a preparation may ask for another

    @classmethod
    def resolve(cls, augmentation: Augmentation, language: str, *, seed: int = 0) -> Settings:
        return cls(
            seed=seed,
            factor=augmentation.factor,
            connectors=tuple(augmentation.connectors) or DEFAULT_CONNECTORS.get(language, ()),
            prefixes=tuple(augmentation.prefixes) or DEFAULT_PREFIXES.get(language, ()),
            suffixes=tuple(augmentation.suffixes) or DEFAULT_SUFFIXES.get(language, ()),
            system_prompts=tuple(augmentation.system_prompts) or DEFAULT_SYSTEM_PROMPTS.get(language, ()),
        )

    @property
    def variants_per_seed(self) -> int:
        """``factor`` counts the seed itself: a factor of 5 turns one seed into five rows."""
        return max(self.factor - 1, 0)

    def as_dict(self) -> dict[str, object]:
        return {
            "factor": self.factor,
            "variants_per_seed": self.variants_per_seed,
            "connectors": [list(pair) for pair in self.connectors],
            "prefixes": list(self.prefixes),
            "suffixes": list(self.suffixes),
            "system_prompts": list(self.system_prompts),
        }


def number_tokens(text: str) -> list[str]:
    """The numbers of ``text`` in order: a variant must keep them all, and keep them in place."""
    return NUMBER.findall(text)


def _match_case(original: str, replacement: str) -> str:
    if len(original) > 1 and original.isupper():
        return replacement.upper()
    if original[:1].isupper():
        return replacement[:1].upper() + replacement[1:]
    return replacement


def swap_connectors(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    """Swap each pair's words both ways in one pass (so a swapped word is not swapped back)."""
    mapping: dict[str, str] = {}
    for left, right in pairs:
        if left.strip() and right.strip():
            mapping.setdefault(left.lower(), right)
            mapping.setdefault(right.lower(), left)
    if not mapping:
        return text
    # Longest first, so "bu yüzden" wins over a shorter connector it contains.
    words = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE)

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        swapped = mapping.get(found.lower())
        return found if swapped is None else _match_case(found, swapped)

    return pattern.sub(replace, text)


def _choice_bytes(case_id: str, candidate: int, seed: int) -> bytes:
    # Seed 0 hashes exactly what it always did, so the run artifact keeps its variants.
    key = f"{case_id}\x1f{candidate}" if seed == 0 else f"{case_id}\x1f{candidate}\x1f{seed}"
    return hashlib.sha256(key.encode()).digest()


def _pick(options: tuple[str, ...], key: bytes) -> str:
    return options[int.from_bytes(key, "big") % len(options)]


def candidate(seed: Example, settings: Settings, index: int) -> tuple[str, str]:
    """The (input, system) of candidate ``index`` for ``seed``: a pure function of the case id, the index and
    the settings' seed."""
    digest = _choice_bytes(seed.case_id, index, settings.seed)
    # Bytes 0-7 decide, one bit per pair, which connector pairs this candidate swaps (at most 64 pairs).
    chosen = tuple(
        pair for bit, pair in enumerate(settings.connectors[:64]) if digest[bit // 8] >> (bit % 8) & 1
    )
    text = swap_connectors(seed.input, chosen)
    instructions = tuple(("prefix", p) for p in settings.prefixes) + tuple(
        ("suffix", s) for s in settings.suffixes
    )
    if instructions:
        where, instruction = instructions[int.from_bytes(digest[8:16], "big") % len(instructions)]
        text = f"{instruction}\n\n{text}" if where == "prefix" else f"{text}\n\n{instruction}"
    systems = tuple(dict.fromkeys((seed.system, *settings.system_prompts)))
    system = _pick(systems, digest[16:24])
    return text, system


def augment(seed: Example, settings: Settings) -> list[Example]:
    """Up to ``settings.variants_per_seed`` distinct variants of ``seed``, numbered from 1."""
    wanted = settings.variants_per_seed
    if wanted == 0:
        return []
    numbers = number_tokens(seed.input)
    seen = {(seed.input, seed.system)}
    variants: list[Example] = []
    for index in range(1, wanted * ATTEMPTS_PER_VARIANT + 1):
        text, system = candidate(seed, settings, index)
        if (text, system) in seen or number_tokens(text) != numbers:
            continue
        seen.add((text, system))
        variant = len(variants) + 1
        variants.append(
            seed.model_copy(
                update={
                    "example_id": example_id(seed.case_id, variant),
                    "source": Source.AUGMENTED,
                    "variant": variant,
                    "input": text,
                    "system": system,
                }
            )
        )
        if len(variants) == wanted:
            break
    assert all(number_tokens(v.input) == numbers for v in variants), "a variant changed a number"
    return variants
