"""An open-ended environment graded by a judge model against each case's rubric (``judge``).

Each case asks for a short explanation ("why does ice float?"). Its answer is built from sentences written
per topic: the ``cause`` (what a right answer must state), ``steps`` (each explains one more link of the
mechanism) and a ``myth`` (a common wrong explanation). Its rubric has:

- ``accurate`` (meets it or not, weight 2): the answer states the cause;
- ``explains`` (1 to 5, passes at 3): 1, and one more point for each step of the mechanism it gives;
- ``concise`` (meets it or not, on every other topic): at most ``CONCISE_WORDS`` words.

Because the answers are put together from those sentences, the score a person gives each criterion is
known by construction. The calibration set (``calibration.jsonl``) holds, per topic, answers made to meet
or miss each criterion, with those scores as ``labels``, independent of any judge.

The simulated judge (model ``example-judge`` of the example model server, :meth:`judge_reply`) grades by
keyword rules, deliberately imperfect: ``accurate`` when the cause's key word appears (a sentence that
denies the cause fools it), ``explains`` by counting the steps' key words (wherever they appear) and
``concise`` by characters rather than words. Its agreement with the labels is measurable and below 1.
Asked which of two answers is better (a comparison's pairwise judging), it prefers the one its rules give
more points, whichever is shown first, and calls them level a tie.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, criteria, leaderboard, phase, task
from examplegen.failures import pick
from examplegen.writing import JsonlWriter

CALIBRATION_FILE = "calibration.jsonl"
JUDGE_MODEL = "example-judge"
# The judge's connection, by name: whoever registers the example creates a connection of their own with this
# name (to the example model server, or any server of JUDGE_MODEL); an id would be one account's only.
JUDGE_CONNECTION = "example-models"
CONCISE_WORDS = 45
CONCISE_CHARS = 260  # what the simulated judge counts instead of words
_PAIRWISE = re.compile(
    r"Question:\n(?P<question>.*?)\n\nReference answer.*?\n\nAnswer A:\n(?P<first>.*?)\n\nAnswer B:\n"
    r"(?P<second>.*?)\n\nWhich answer is better",
    re.DOTALL,
)
_PROMPT = re.compile(
    r"Question:\n(?P<question>.*?)\n\nReference answer.*?\n\nAnswer to grade:\n(?P<answer>.*?)\n\nRubric:",
    re.DOTALL,
)


@dataclass(frozen=True)
class Topic:
    question: str
    domain: str
    cause: str  # the sentence that states the cause
    key: str  # the word the simulated judge looks for to call the answer accurate
    steps: tuple[tuple[str, str], ...]  # (a sentence explaining one link, its key word)
    myth: str  # a common wrong explanation


_TOPICS = (
    Topic(
        "Why does ice float on water?",
        "physics",
        "Ice floats because it is less dense than liquid water.",
        "dense",
        (
            ("Water molecules freezing lock into a hexagonal lattice held by hydrogen bonds.", "lattice"),
            ("That lattice keeps the molecules further apart than in the liquid.", "apart"),
            (
                "The same mass then takes more volume, so the water it displaces weighs more than it.",
                "volume",
            ),
        ),
        "Ice floats because it has air bubbles trapped inside it.",
    ),
    Topic(
        "Why is the sky blue?",
        "physics",
        "The sky is blue because air scatters blue sunlight much more than red light.",
        "scatter",
        (
            (
                "Rayleigh scattering grows as the wavelength shrinks, to the inverse fourth power.",
                "wavelength",
            ),
            (
                "Blue light is redirected across the whole sky and reaches the eye from every direction.",
                "direction",
            ),
        ),
        "The sky is blue because it reflects the colour of the oceans.",
    ),
    Topic(
        "Why do we have seasons on Earth?",
        "astronomy",
        "Seasons come from the tilt of Earth's axis relative to its orbit.",
        "tilt",
        (
            ("Through the year each hemisphere leans towards the Sun and then away from it.", "leans"),
            ("Leaning towards it, sunlight arrives more directly and days are longer.", "directly"),
            ("More direct light spreads over less ground, so each square metre warms more.", "spreads"),
        ),
        "Seasons happen because Earth is closer to the Sun in summer.",
    ),
    Topic(
        "Why does bread go stale?",
        "chemistry",
        "Bread goes stale mainly because its starch recrystallises, a process called retrogradation.",
        "starch",
        (
            ("Baking swells the starch granules with water and makes them soft and amorphous.", "granules"),
            ("As the loaf cools the starch chains line up again and push water out.", "chains"),
        ),
        "Bread goes stale simply because it dries out in the air.",
    ),
    Topic(
        "Why do onions make people cry?",
        "chemistry",
        "Cutting an onion releases an irritant gas, syn-propanethial-S-oxide, that stings the eyes.",
        "irritant",
        (
            ("Cutting breaks cells so an enzyme meets sulfur compounds it is kept apart from.", "enzyme"),
            ("The gas reaches the eyes and the tear glands answer by washing it away.", "glands"),
        ),
        "Onions make people cry because their juice splashes into the eyes.",
    ),
    Topic(
        "Why does metal feel colder than wood at the same temperature?",
        "physics",
        "Metal feels colder because it conducts heat away from the skin much faster than wood.",
        "conduct",
        (
            ("The skin senses how fast it loses heat, not the temperature of what it touches.", "senses"),
            ("Free electrons in the metal carry heat quickly from the contact point.", "electrons"),
        ),
        "Metal feels colder because metal objects are actually colder than wooden ones.",
    ),
    Topic(
        "Why do leaves change colour in autumn?",
        "biology",
        "Leaves change colour because the tree stops making chlorophyll in autumn.",
        "chlorophyll",
        (
            (
                "As chlorophyll breaks down, yellow and orange carotenoids that were there all along show.",
                "carotenoids",
            ),
            ("Some trees also make red anthocyanins from sugars trapped in the leaf.", "anthocyanins"),
            ("Shorter days and cooler nights are the signal that starts the change.", "shorter"),
        ),
        "Leaves change colour because the cold freezes and burns them.",
    ),
    Topic(
        "Why does salt melt ice on roads?",
        "chemistry",
        "Salt lowers the freezing point of water, so the ice melts at temperatures where it would not.",
        "freezing point",
        (
            ("Dissolved ions get in the way of water molecules joining the ice.", "ions"),
            ("Melting then wins over freezing at the surface until the brine is diluted.", "brine"),
        ),
        "Salt melts ice because the reaction between them gives off heat.",
    ),
    Topic(
        "Why can't humans breathe underwater?",
        "biology",
        "Human lungs cannot extract the oxygen dissolved in water.",
        "lungs",
        (
            ("Water holds far less oxygen than air, and it is dense and slow to move in and out.", "oxygen"),
            (
                "Fish gills pass a constant flow of water over thin filaments; lungs are built for air.",
                "gills",
            ),
        ),
        "Humans cannot breathe underwater because water has no oxygen in it.",
    ),
    Topic(
        "Why does a spoon in a glass of water look bent?",
        "physics",
        "The spoon looks bent because light refracts as it passes from water into air.",
        "refract",
        (
            (
                "Light travels more slowly in water than in air, so it changes direction at the surface.",
                "slowly",
            ),
            (
                "The eye traces the rays back in straight lines and sees the spoon higher than it is.",
                "straight",
            ),
        ),
        "The spoon looks bent because the water pressure bends it slightly.",
    ),
    Topic(
        "Why do we get a sunburn?",
        "biology",
        "Sunburn is damage to skin cells caused by ultraviolet radiation.",
        "ultraviolet",
        (
            ("UV light damages the DNA in skin cells.", "dna"),
            (
                "The body answers with inflammation: blood flow rises and the skin turns red and sore.",
                "inflammation",
            ),
        ),
        "Sunburn is caused by the heat of the sun cooking the skin.",
    ),
    Topic(
        "Why does the Moon show phases?",
        "astronomy",
        "The phases come from how much of the Moon's sunlit half we see as it orbits Earth.",
        "sunlit",
        (
            ("The Sun always lights half of the Moon.", "half"),
            ("As the Moon moves around Earth our angle on that lit half changes through the month.", "angle"),
        ),
        "The phases are caused by Earth's shadow falling on the Moon.",
    ),
    Topic(
        "Why do cats purr?",
        "biology",
        "Cats purr by rapidly twitching the muscles of the larynx as they breathe.",
        "larynx",
        (
            ("The twitching opens and closes the glottis and makes the air vibrate.", "glottis"),
            ("Purring signals contentment but also comforts a cat that is stressed or hurt.", "comforts"),
        ),
        "Cats purr only because they are happy.",
    ),
    Topic(
        "Why does soap remove grease?",
        "chemistry",
        "Soap molecules have one end that binds to water and one end that binds to grease.",
        "end",
        (
            ("The grease-loving tails bury themselves in the oil.", "tails"),
            ("They form micelles, small balls with the oil inside, which the water rinses away.", "micelles"),
        ),
        "Soap removes grease because it dissolves everything it touches.",
    ),
    Topic(
        "Why do airplanes leave white trails in the sky?",
        "physics",
        "The trails are contrails: water vapour from the engines condenses and freezes into ice crystals.",
        "condens",
        (
            ("Burning fuel makes hot, humid exhaust.", "exhaust"),
            ("At altitude the air is very cold, so the vapour freezes on soot particles.", "soot"),
        ),
        "The white trails are chemicals sprayed on purpose from the airplanes.",
    ),
    Topic(
        "Why does a balloon stick to a wall after rubbing it on hair?",
        "physics",
        "Rubbing moves electrons onto the balloon and leaves it with a static charge.",
        "charge",
        (
            ("The charged balloon pushes the charges in the wall apart, polarising its surface.", "polaris"),
            ("The nearby opposite charges attract the balloon more than the far ones repel it.", "attract"),
        ),
        "The balloon sticks because rubbing makes its surface sticky.",
    ),
    Topic(
        "Why do our ears pop on an airplane?",
        "biology",
        "Ears pop when the pressure in the middle ear evens out with the cabin's.",
        "pressure",
        (
            ("The eustachian tube connects the middle ear to the throat.", "eustachian"),
            ("Swallowing or yawning opens it and lets air through, which moves the eardrum.", "swallow"),
        ),
        "Ears pop because the engines' noise hurts the eardrum.",
    ),
    Topic(
        "Why does the sea taste salty?",
        "earth science",
        "The sea is salty because rivers carry minerals washed from rocks into it.",
        "rock",
        (
            ("Rain is slightly acidic and slowly dissolves minerals from the land.", "acidic"),
            ("Evaporation takes water away but leaves the salts behind, so they build up.", "evaporat"),
        ),
        "The sea is salty because fish release salt into it.",
    ),
    Topic(
        "Why do we yawn?",
        "biology",
        "A leading explanation is that yawning helps cool the brain.",
        "cool",
        (
            ("A deep breath of air and the stretch of the jaw increase blood flow to the head.", "blood"),
            ("Yawns are also contagious, which suggests a social role.", "contagious"),
        ),
        "We yawn because the body is short of oxygen.",
    ),
    Topic(
        "Why does a compass needle point north?",
        "physics",
        "A compass needle is a small magnet that lines up with Earth's magnetic field.",
        "magnetic field",
        (
            ("Earth's molten iron outer core in motion generates the field.", "core"),
            ("The needle's north pole is drawn towards the magnetic pole near the geographic north.", "pole"),
        ),
        "A compass points north because the North Pole is made of iron.",
    ),
    Topic(
        "Why do apples turn brown after being cut?",
        "chemistry",
        "Cut apples brown because an enzyme oxidises their phenolic compounds when they meet air.",
        "enzyme",
        (
            ("Cutting breaks the cells and lets oxygen reach polyphenol oxidase.", "oxidase"),
            ("The reaction makes quinones that link into brown melanin pigments.", "melanin"),
        ),
        "Cut apples turn brown because they start to rot immediately.",
    ),
    Topic(
        "Why is it colder at the top of a mountain?",
        "earth science",
        "Air gets colder with height because rising air expands as the pressure drops.",
        "expand",
        (
            ("Expanding air does work on its surroundings and loses heat doing it.", "work"),
            ("The ground warms the air from below, and at height there is less of it to warm.", "ground"),
        ),
        "Mountain tops are colder because they are further from the Sun's heat in space.",
    ),
    Topic(
        "Why do stars twinkle?",
        "astronomy",
        "Stars twinkle because turbulence in Earth's atmosphere bends their light.",
        "turbulen",
        (
            ("Pockets of air at different temperatures refract the light by different amounts.", "pockets"),
            (
                "A star is so far away it is nearly a point, so every shift shows; planets twinkle less.",
                "point",
            ),
        ),
        "Stars twinkle because they switch on and off as they burn.",
    ),
    Topic(
        "Why does the body shiver when it is cold?",
        "biology",
        "Shivering makes heat: the muscles contract rapidly and the work warms the body.",
        "muscles",
        (
            ("The hypothalamus detects the body cooling and triggers the contractions.", "hypothalamus"),
            ("Most of the energy of a contraction is given off as heat.", "energy"),
        ),
        "We shiver to shake off the cold air around the skin.",
    ),
    Topic(
        "Why does popcorn pop?",
        "chemistry",
        "Popcorn pops because water in the kernel turns to steam under a hard shell.",
        "steam",
        (
            ("The hull is strong and nearly waterproof, so the pressure inside builds up.", "hull"),
            ("When it bursts, the starch puffs into a foam that sets as it cools.", "foam"),
        ),
        "Popcorn pops because the kernel catches fire inside.",
    ),
    Topic(
        "Why are rainbows curved?",
        "physics",
        "A rainbow is curved because each colour reaches the eye from drops at one fixed angle.",
        "angle",
        (
            ("Each drop refracts and reflects sunlight back at about 42 degrees for red.", "42"),
            ("All drops at that angle around the point opposite the Sun lie on a circle.", "circle"),
        ),
        "Rainbows are curved because the Earth is round.",
    ),
    Topic(
        "Why do boats made of steel float?",
        "physics",
        "A steel boat floats because its shape displaces a weight of water equal to its own weight.",
        "displace",
        (
            ("The hull encloses a large volume of air, so the boat's average density is low.", "average"),
            (
                "Archimedes' principle gives an upward force equal to the weight of water pushed aside.",
                "archimedes",
            ),
        ),
        "Steel boats float because the engines keep pushing them up.",
    ),
    Topic(
        "Why does the heart beat without us thinking about it?",
        "biology",
        "The heart beats on its own because of a natural pacemaker, the sinoatrial node.",
        "pacemaker",
        (
            ("Cells of the node fire electrical impulses by themselves at a steady rhythm.", "impulses"),
            ("The impulse spreads through the walls and makes the chambers contract in order.", "chambers"),
        ),
        "The heart beats because the brain sends it a command for every beat.",
    ),
    Topic(
        "Why do we see lightning before we hear thunder?",
        "physics",
        "We see lightning first because light travels far faster than sound.",
        "faster",
        (
            ("Light covers a few kilometres in microseconds.", "microseconds"),
            ("Sound moves about 340 metres a second, so the thunder arrives seconds later.", "340"),
        ),
        "We see lightning first because thunder happens after the lightning ends.",
    ),
    Topic(
        "Why does yeast make bread rise?",
        "biology",
        "Yeast makes bread rise by fermenting sugars and releasing carbon dioxide gas.",
        "carbon dioxide",
        (
            ("The gas is trapped in the elastic gluten network of the dough.", "gluten"),
            ("In the oven the bubbles expand with heat before the crumb sets.", "bubbles"),
        ),
        "Yeast makes bread rise because it is a kind of baking powder.",
    ),
)


def _rubric(index: int) -> list[dict[str, Any]]:
    rubric: list[dict[str, Any]] = [
        {"id": "accurate", "description": "The answer states the right cause.", "weight": 2.0},
        {
            "id": "explains",
            "description": "The answer explains how the cause leads to the effect, step by step.",
            "scale": [1, 5],
            "pass_at": 3,
        },
    ]
    if index % 2 == 0:
        rubric.append({"id": "concise", "description": f"The answer takes at most {CONCISE_WORDS} words."})
    return rubric


def _explains(steps: int) -> int:
    return min(5, 1 + steps)


def _labels(index: int, answer: str, accurate: bool, steps: int) -> dict[str, int]:
    """A person's scores of an answer put together as given: known from how it was made."""
    labels = {"accurate": int(accurate), "explains": _explains(steps)}
    if index % 2 == 0:
        labels["concise"] = int(len(answer.split()) <= CONCISE_WORDS)
    return labels


def _answer(topic: Topic, *, cause: bool, steps: int, myth: bool = False, denied: bool = False) -> str:
    parts = [topic.myth] if myth else []
    if denied:
        parts.append(f"Some say this: {topic.cause[:-1].lower()}; that is not it.")
    if cause:
        parts.append(topic.cause)
    parts += [sentence for sentence, _ in topic.steps[:steps]]
    return " ".join(parts)


def _calibration(index: int, topic: Topic) -> list[tuple[str, dict[str, int]]]:
    """Answers made to meet or miss each criterion of the topic, with their scores by construction."""
    full = len(topic.steps)
    made = [
        (_answer(topic, cause=True, steps=full), True, full),
        (_answer(topic, cause=True, steps=0), True, 0),
        (_answer(topic, cause=False, steps=0, myth=True), False, 0),
        (_answer(topic, cause=False, steps=1, denied=True), False, 1),
        (_answer(topic, cause=True, steps=full, myth=True) + " " + topic.cause, True, full),
    ]
    return [(text, _labels(index, text, accurate, steps)) for text, accurate, steps in made]


class JudgeEnvironment(EnvironmentGenerator):
    name = "judge"
    title = "Short Explanations"
    size = len(_TOPICS)
    seed_offset = 7
    submission_format = "jsonl"

    def competition(self) -> dict[str, Any]:
        description = "Explain everyday phenomena in a few sentences; a judge model grades each answer."
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "template": self.name,
            "tasks": [task("Explanations", description)],
            "phases": [phase("Answer every question in a few sentences.")],
            "leaderboards": [
                leaderboard(
                    ("Accuracy", "accuracy", "desc"),
                    ("Mean rubric score", "mean_score", "desc"),
                    ("Unjudged", "unjudged", "asc"),
                )
            ],
            "criteria": criteria(
                ("accurate", "The answer states the right cause."),
                ("explains", "The answer explains how the cause leads to the effect."),
                ("concise", f"The answer takes at most {CONCISE_WORDS} words."),
            ),
            "judge": {
                "connection": JUDGE_CONNECTION,
                "model_id": JUDGE_MODEL,
                "calibration": CALIBRATION_FILE,
            },
            "finetune": {
                "selection_criterion": "failed_and_near_miss",
                "language": "en",
                "system_prompt": "Explain the cause in a few sentences, step by step.",
                "augmentation": {"factor": 1},
                "target_template": {"en": "{answer}"},
                "suggested_hyperparams": {"method": "sft", "learning_rate": 0.0001, "epochs": 1},
            },
        }

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        number = index % len(_TOPICS)
        topic = _TOPICS[number]
        case_id = f"explain-{index:06d}"
        reference = _answer(topic, cause=True, steps=len(topic.steps))
        case = {
            "id": case_id,
            "question": topic.question,
            "answer": reference,
            "reference": reference,
            "rubric": _rubric(number),
            "domain": topic.domain,
            "difficulty": "medium" if len(topic.steps) < 3 else "hard",
        }
        if fail:
            kind = pick(rng, [("myth", 50), ("bare", 30), ("denied", 20)])
            text = _answer(
                topic,
                cause=kind == "bare",
                steps=0 if kind != "denied" else 1,
                myth=kind == "myth",
                denied=kind == "denied",
            )
        else:
            text = _answer(topic, cause=True, steps=rng.randint(2, len(topic.steps)))
        return case, {"id": case_id, "prediction_text": text}

    def write_extras(self, bundle_dir: Path, rng: random.Random, cases: int) -> None:
        with JsonlWriter(bundle_dir / CALIBRATION_FILE) as out:
            for number, topic in enumerate(_TOPICS):
                for variant, (text, labels) in enumerate(_calibration(number, topic)):
                    out.write(
                        {
                            "id": f"calibration-{number:03d}-{variant}",
                            "question": topic.question,
                            "rubric": _rubric(number),
                            "reference": _answer(topic, cause=True, steps=len(topic.steps)),
                            "answer": text,
                            "labels": labels,
                        }
                    )

    def judge_reply(self, prompt: str) -> tuple[str, str] | None:
        """The simulated judge's keyword-rule grading of a judging prompt about one of these questions, or
        of a pairwise prompt: the answer its rules score higher is the better one (a tie when level)."""
        found = _PROMPT.search(prompt)
        if found is None:
            return _pairwise_reply(prompt)
        number = _topic_number(found["question"])
        if number is None:
            return None
        scores = _grades(number, found["answer"])
        reply = {"criteria": [{"id": name, "score": score, "reason": why} for name, score, why in scores]}
        return f"explain-{number:06d}", json.dumps(reply)


def _topic_number(question: str) -> int | None:
    return next((n for n, t in enumerate(_TOPICS) if t.question == question), None)


def _grades(number: int, answer: str) -> list[tuple[str, int, str]]:
    """The simulated judge's score and reason for each criterion of topic ``number``'s rubric."""
    topic, answer = _TOPICS[number], answer.lower()
    steps = sum(key in answer for _, key in topic.steps)
    scores = [
        (
            "accurate",
            int(topic.key in answer),
            "it names the cause" if topic.key in answer else "no cause",
        ),
        ("explains", _explains(steps), f"it gives {steps} step(s) of the mechanism"),
    ]
    if number % 2 == 0:
        short = len(answer) <= CONCISE_CHARS
        scores.append(("concise", int(short), "it is short" if short else "it is long"))
    return scores


def _pairwise_reply(prompt: str) -> tuple[str, str] | None:
    """Which of a pairwise prompt's two answers the simulated judge's rules score higher, whichever is
    shown first: a judge with no position bias."""
    found = _PAIRWISE.search(prompt)
    number = None if found is None else _topic_number(found["question"])
    if found is None or number is None:
        return None
    first, second = (
        sum(score for _, score, _ in _grades(number, found[side])) for side in ("first", "second")
    )
    better = "tie" if first == second else "A" if first > second else "B"
    reason = f"its rubric points: A {first}, B {second}"
    return f"explain-{number:06d}", json.dumps({"better": better, "reason": reason})


# The template's example, found by examplegen.generate under the template's name.
GENERATORS = (JudgeEnvironment(),)
