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
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

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
# What a number token is made of. Swapping words that hold none of these (in any case) for others that hold
# none cannot add, drop, join or split a number, since a token never reaches past them.
_NUMBER_CHARS = re.compile(r"[\d.,%\-−]")
# Candidates tried per wanted variant before giving up on a seed whose text leaves little to vary.
ATTEMPTS_PER_VARIANT = 8
_LOW_64 = (1 << 64) - 1


@dataclass(frozen=True)
class AugmentSettings:
    """The augmentation actually applied: the bundle's lists, or the language defaults where it gives none."""

    factor: int
    connectors: tuple[tuple[str, str], ...]
    prefixes: tuple[str, ...]
    suffixes: tuple[str, ...]
    system_prompts: tuple[str, ...]
    seed: int = 0  # 0 is the run artifact's choice; a preparation may ask for another

    @classmethod
    def resolve(cls, augmentation: Augmentation, language: str, *, seed: int = 0) -> AugmentSettings:
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


Replace = Callable[[re.Match[str]], str]
# Distinct spellings of connectors whose swap one set of pairs remembers: a text's connectors come in a
# few cases (lower, capitalised, upper), so the same few are swapped in every case of a run.
_SPELLINGS = 64


@lru_cache(maxsize=256)
def _connector_swap(pairs: tuple[tuple[str, str], ...]) -> tuple[re.Pattern[str], Replace] | None:
    """The pattern that finds the words of ``pairs`` and what replaces each match, built once per set of
    pairs: a candidate picks one of at most 2**len(pairs) sets, so compiling per candidate would repeat
    the same work for every case."""
    mapping: dict[str, str] = {}
    for left, right in pairs:
        if left.strip() and right.strip():
            mapping.setdefault(left.lower(), right)
            mapping.setdefault(right.lower(), left)
    if not mapping:
        return None
    # Longest first, so "bu yüzden" wins over a shorter connector it contains.
    words = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(?:" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE)
    swapped: dict[str, str] = {}

    def replace(match: re.Match[str]) -> str:
        found = match.group(0)
        known = swapped.get(found)
        if known is None:
            other = mapping.get(found.lower())
            known = found if other is None else _match_case(found, other)
            if len(swapped) < _SPELLINGS:
                swapped[found] = known
        return known

    return pattern, replace


def swap_connectors(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    """Swap each pair's words both ways in one pass (so a swapped word is not swapped back)."""
    swap = _connector_swap(pairs)
    if swap is None:
        return text
    pattern, replace = swap
    return pattern.sub(replace, text)


def _choices(case_id: str, seed: int) -> Callable[[int], bytes]:
    """The digest that decides candidate ``n`` of a case: ``sha256(case id, n)``, with the settings' seed
    mixed in when it is not 0. Seed 0 hashes exactly what it always did, so the run artifact keeps its
    variants; the case id is hashed once, and each candidate continues from there."""
    head = hashlib.sha256(f"{case_id}\x1f".encode())
    tail = b"" if seed == 0 else f"\x1f{seed}".encode()

    def digest(candidate: int) -> bytes:
        hashed = head.copy()
        hashed.update(b"%d%s" % (candidate, tail))
        return hashed.digest()

    return digest


@lru_cache(maxsize=16)
def _pair_searches(
    pairs: tuple[tuple[str, str], ...],
) -> tuple[tuple[int, tuple[str, str], Callable[[str], object]], ...]:
    """Each pair that can swap anything, with its bit and the search that finds one of its words as
    swapping finds them. A word that matches nowhere on its own matches nowhere among others, so dropping
    the pairs a text does not hold from a candidate's choice leaves its swap unchanged."""
    searches = []
    for bit, pair in enumerate(pairs):
        swap = _connector_swap((pair,))
        if swap is not None:
            searches.append((bit, pair, swap[0].search))
    return tuple(searches)


@lru_cache(maxsize=16)
def _keeps_numbers(pairs: tuple[tuple[str, str], ...]) -> bool:
    """Whether swapping any of ``pairs`` is sure to keep a text's numbers (see ``_NUMBER_CHARS``)."""
    return not any(
        _NUMBER_CHARS.search(form) for pair in pairs for word in pair for form in (word, word.upper())
    )


@lru_cache(maxsize=16)
def _instructions(settings: AugmentSettings) -> tuple[tuple[bool, str, tuple[str, ...]], ...]:
    """Every instruction, prefixes first, as (whether it is a prefix, its text, its numbers)."""
    return tuple((True, p, tuple(number_tokens(p))) for p in settings.prefixes) + tuple(
        (False, s, tuple(number_tokens(s))) for s in settings.suffixes
    )


def variants(case_id: str, text: str, system: str, settings: AugmentSettings) -> list[tuple[str, str]]:
    """The (input, system) of up to ``settings.variants_per_seed`` distinct variants of the seed of
    ``case_id`` whose input is ``text`` and system prompt ``system``, variant 1 first. Candidate ``index``
    is a pure function of these, the index and the settings; plain strings, so the artifact's per-case
    loop needs no model."""
    wanted = settings.variants_per_seed
    if wanted == 0:
        return []
    instructions = _instructions(settings)
    systems = tuple(dict.fromkeys((system, *settings.system_prompts)))
    # Bytes 0-7 of a candidate's digest decide, one bit per pair, which connector pairs it swaps (at most
    # 64): bit n is bit n % 8 of byte n // 8, that is bit n of the bytes read as a little-endian integer. A
    # pair none of whose words the text holds changes nothing, so only the bits of the pairs it holds are
    # kept, and a candidate that swaps the same ones as an earlier candidate reuses its text.
    pairs = settings.connectors[:64]
    held = {bit: pair for bit, pair, search in _pair_searches(pairs) if search(text) is not None}
    held_bits = sum(1 << bit for bit in held)
    # Where no swap can touch a number and no instruction holds one, every candidate keeps the seed's
    # numbers in place, and none need be read.
    keeps_numbers = _keeps_numbers(pairs)
    check_numbers = not keeps_numbers or any(extra for _, _, extra in instructions)
    numbers = number_tokens(text) if check_numbers else []
    reworded_by: dict[int, tuple[str, list[str]]] = {0: (text, numbers)}
    seen = {(text, system)}
    found: list[tuple[str, str]] = []
    choices = _choices(case_id, settings.seed)
    count, options = len(instructions), len(systems)
    for index in range(1, wanted * ATTEMPTS_PER_VARIANT + 1):
        digest = choices(index)
        chosen = int.from_bytes(digest[:8], "little") & held_bits if held_bits else 0
        reworded_numbers = reworded_by.get(chosen)
        if reworded_numbers is None:
            reworded = swap_connectors(text, tuple(pair for bit, pair in held.items() if chosen >> bit & 1))
            same = keeps_numbers or reworded == text
            reworded_numbers = reworded_by[chosen] = (reworded, numbers if same else number_tokens(reworded))
        candidate, tokens = reworded_numbers
        # Bytes 8-15 and 16-23, each read big-endian, pick the instruction and the system prompt.
        picks = int.from_bytes(digest[8:24], "big")
        # A number never spans the blank line that joins an instruction to the question, so a candidate's
        # numbers are the instruction's and the question's, in place.
        if count:
            prefix, instruction, extra = instructions[(picks >> 64) % count]
            if prefix:
                candidate = f"{instruction}\n\n{candidate}"
                if check_numbers:
                    tokens = [*extra, *tokens]
            else:
                candidate = f"{candidate}\n\n{instruction}"
                if check_numbers:
                    tokens = [*tokens, *extra]
        option = (candidate, systems[(picks & _LOW_64) % options])
        if option in seen or tokens != numbers:
            continue
        seen.add(option)
        found.append(option)
        if len(found) == wanted:
            break
    return found


def augment(seed: Example, settings: AugmentSettings) -> list[Example]:
    """Up to ``settings.variants_per_seed`` distinct variants of ``seed``, numbered from 1."""
    return [
        seed.model_copy(
            update={
                "example_id": example_id(seed.case_id, variant),
                "source": Source.AUGMENTED,
                "variant": variant,
                "input": text,
                "system": system,
            }
        )
        for variant, (text, system) in enumerate(variants(seed.case_id, seed.input, seed.system, settings), 1)
    ]
