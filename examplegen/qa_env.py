"""A SQuAD-v2-like reading-comprehension environment (``qa``).

Each case has a short context about an invented town, company or scientist and one question; about a third
of the questions cannot be answered from the context (``answers: []``). Predictions carry
``no_answer_probability``. Wrong predictions pick another fact from the context, cut a span short, answer an
unanswerable question, or abstain on an answerable one.
"""

from __future__ import annotations

import random
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, criteria, leaderboard, phase, task
from examplegen.failures import pick

_SYLLABLES = ["va", "lor", "ten", "mi", "sa", "dor", "ka", "rel", "bru", "no", "fe", "lin", "tha", "gor"]
_FIRST = ["Elena", "Marek", "Ingrid", "Tomas", "Lucia", "Henrik", "Amara", "Viktor", "Noor", "Josef"]
_REGIONS = ["northern", "southern", "eastern", "western", "central"]
_PRODUCTS = ["woollen blankets", "glass bottles", "river ferries", "copper wire", "goat cheese", "clocks"]
_FIELDS = ["purifying water", "storing hydrogen", "dyeing cotton", "testing soil acidity", "preserving fruit"]
_PRIZES = ["Halvorsen", "Marlow", "Ostrava", "Quill", "Dunmore"]
_NATIONALITIES = ["Norwegian", "Czech", "Portuguese", "Finnish", "Chilean", "Dutch"]


def _word(rng: random.Random, parts: int = 3) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(parts)).capitalize()


Fact = tuple[str, list[str]]  # (question, acceptable answers)


def _town(rng: random.Random) -> tuple[str, str, list[Fact], list[str]]:
    town, river = _word(rng), _word(rng, 2)
    founder = f"{rng.choice(_FIRST)} {_word(rng, 2)}"
    year, people = rng.randint(1100, 1890), rng.randint(2_000, 95_000)
    product = rng.choice(_PRODUCTS)
    context = (
        f"{town} is a town in the {rng.choice(_REGIONS)} region, founded in {year} by {founder}. It lies on "
        f"the banks of the {river} River and had a population of {people:,} at the last census. The town is "
        f"best known for its {product}."
    )
    facts: list[Fact] = [
        (f"When was {town} founded?", [str(year), f"in {year}"]),
        (f"Who founded {town}?", [founder]),
        (f"Which river does {town} lie on?", [f"the {river} River", f"{river} River", river]),
        (f"What was the population of {town} at the last census?", [f"{people:,}", str(people)]),
        (f"What is {town} best known for?", [product, f"its {product}"]),
    ]
    unanswerable = [
        f"Who is the current mayor of {town}?",
        f"How many bridges cross the {river} River in {town}?",
        f"When was {town} renamed?",
    ]
    return "geography", context, facts, unanswerable


def _company(rng: random.Random) -> tuple[str, str, list[Fact], list[str]]:
    company = f"{_word(rng)} Works"
    city, city2 = _word(rng), _word(rng)
    founder = f"{rng.choice(_FIRST)} {_word(rng, 2)}"
    year = rng.randint(1850, 1990)
    later = year + rng.randint(5, 30)
    staff = rng.randint(40, 4_000)
    product = rng.choice(_PRODUCTS)
    context = (
        f"{company} was established in {year} in {city} by the engineer {founder}. The company makes "
        f"{product} and employs about {staff:,} people. In {later} it opened a second factory in {city2}."
    )
    facts: list[Fact] = [
        (f"Where was {company} established?", [city, f"in {city}"]),
        (f"What does {company} make?", [product]),
        (f"About how many people does {company} employ?", [f"{staff:,}", str(staff), f"about {staff:,}"]),
        (f"Where did {company} open its second factory?", [city2, f"in {city2}"]),
        (f"When did {company} open its second factory?", [str(later), f"in {later}"]),
    ]
    unanswerable = [
        f"Who is the chief executive of {company}?",
        f"What was the revenue of {company} in {later}?",
        f"When did {company} close its first factory?",
    ]
    return "business", context, facts, unanswerable


def _scientist(rng: random.Random) -> tuple[str, str, list[Fact], list[str]]:
    scientist = f"{rng.choice(_FIRST)} {_word(rng)}"
    city = _word(rng)
    born = rng.randint(1820, 1960)
    found = born + rng.randint(25, 50)
    method, prize = rng.choice(_FIELDS), rng.choice(_PRIZES)
    context = (
        f"{scientist} was a {rng.choice(_NATIONALITIES)} chemist born in {born}. {scientist} studied at the "
        f"University of {city} and in {found} discovered a method for {method}. The work was awarded the "
        f"{prize} Prize."
    )
    facts: list[Fact] = [
        (f"When was {scientist} born?", [str(born), f"in {born}"]),
        (f"Where did {scientist} study?", [f"the University of {city}", f"University of {city}"]),
        (f"What did {scientist} discover a method for?", [method]),
        (f"Which prize was {scientist}'s work awarded?", [f"the {prize} Prize", f"{prize} Prize", prize]),
    ]
    unanswerable = [
        f"When did {scientist} die?",
        f"Who were {scientist}'s doctoral students?",
        f"Which university did {scientist} teach at after {found}?",
    ]
    return "science", context, facts, unanswerable


_SUBJECTS = [_town, _company, _scientist]


class QaEnvironment(EnvironmentGenerator):
    name = "qa"
    title = "Reading Comprehension QA"
    size = 45
    seed_offset = 2
    submission_format = "json"

    def competition(self) -> dict[str, Any]:
        description = (
            "SQuAD v2 style extractive question answering: answer from the context, or abstain when the "
            "context does not hold the answer."
        )
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "template": "qa",
            "tasks": [task("Reading comprehension", description)],
            "phases": [phase("Answer every question from its context.")],
            "leaderboards": [
                leaderboard(
                    ("Exact match", "exact_match", "desc"),
                    ("F1", "f1", "desc"),
                    ("Answer rate", "answer_rate", "desc"),
                )
            ],
            "criteria": criteria(
                ("grounded-answer", "The answer is a span of the context."),
                ("abstain-when-unanswerable", "The model abstains when the context lacks the answer."),
            ),
            "finetune": {
                "selection_criterion": "failed_and_near_miss",
                "language": "en",
                "system_prompt": "Answer from the context only. If the context does not say, answer nothing.",
                "augmentation": {
                    "factor": 2,
                    "prefixes": ["Read the passage and answer the question.", "Use only the context below."],
                    "suffixes": ["Reply with the shortest span that answers the question."],
                },
                "target_template": {"en": "{answer}"},
                "suggested_hyperparams": {"method": "sft", "learning_rate": 0.0002, "epochs": 1},
            },
        }

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        domain, context, facts, unanswerable = rng.choice(_SUBJECTS)(rng)
        case_id = f"qa-{index:06d}"
        answers: list[str] = []
        if rng.random() < 1 / 3:
            question, difficulty = rng.choice(unanswerable), "hard"
        else:
            question, answers = rng.choice(facts)
            difficulty = "easy" if len(answers[0].split()) == 1 else "medium"
        case = {
            "id": case_id,
            "question": question,
            "context": context,
            "answers": answers,
            "answer": answers[0] if answers else "",
            "difficulty": difficulty,
            "domain": domain,
        }
        text, no_answer = self._predict(rng, answers, facts, fail)
        return case, {"id": case_id, "prediction_text": text, "no_answer_probability": no_answer}

    @staticmethod
    def _predict(rng: random.Random, answers: list[str], facts: list[Fact], fail: bool) -> tuple[str, float]:
        confident = round(rng.uniform(0.01, 0.2), 3)
        abstaining = round(rng.uniform(0.75, 0.99), 3)
        if not fail:
            return (rng.choice(answers), confident) if answers else ("", abstaining)
        others = [fact_answers[0] for _, fact_answers in facts if fact_answers[0] not in answers]
        if not answers:
            # Answering the unanswerable with a plausible-looking span from the context.
            return rng.choice(others), round(rng.uniform(0.2, 0.45), 3)
        words = answers[0].split()
        kind = pick(rng, [("other-fact", 45), ("partial-span", 30 if len(words) > 1 else 0), ("abstain", 25)])
        if kind == "partial-span":
            return words[-1], confident
        if kind == "abstain":
            return "", abstaining
        return rng.choice(others), confident


# The template's example, found by examplegen.generate under the template's name.
GENERATORS = (QaEnvironment(),)
