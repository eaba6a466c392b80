"""GSM8K-style math environments, ``gsm8k-tr`` and ``gsm8k-en``, with a submission that errs like a model.

Wrong predictions are the mistakes models make on word problems: an arithmetic slip in the last step,
stopping at an intermediate result, answering in the wrong unit, or giving no final answer at all. Right
predictions come in the formats models actually use: a bare number, "Cevap: 1.250", "The answer is 42.",
or a worked chain of thought ending in "#### 42".
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, criteria, leaderboard, phase, task
from examplegen.failures import pick
from examplegen.math_problems import Language, Problem, format_number, make_problem
from examplegen.writing import JsonlWriter

POOL_FILE = "pool/pool.jsonl"

_NO_ANSWER: dict[Language, list[str]] = {
    "tr": [
        "Bu soruyu çözmek için önce verilen miktarları toplamamız gerekiyor, ancak hangi işlemin yapılacağı "
        "açık değil.",
        "Üzgünüm, bu problemi çözemiyorum.",
        "Adım adım düşünelim. Önce toplam miktarı bulalım, ardından",
        "",
    ],
    "en": [
        "To solve this we first need to add up the amounts, but it is not clear which step comes next.",
        "I'm sorry, I can't solve this problem.",
        "Let's think step by step. First we find the total, then",
        "",
    ],
}


def _right(rng: random.Random, problem: Problem, lang: Language) -> str:
    plain = str(problem.answer)
    grouped = format_number(problem.answer, lang)
    if lang == "tr":
        forms = [
            plain,
            f"Cevap: {grouped}",
            f"Adım adım çözelim. {problem.solution}\n#### {plain}",
            f"{problem.solution} Sonuç olarak cevap {grouped}.",
        ]
    else:
        forms = [
            plain,
            f"The answer is {grouped}.",
            f"Let's think step by step. {problem.solution}\n#### {plain}",
            f"{problem.solution} So the final answer is {grouped}.",
        ]
    return rng.choice(forms)


def _slip(rng: random.Random, answer: int) -> int:
    delta = rng.choice([-10, -2, -1, 1, 2, 10, 100])
    wrong = answer + delta
    return wrong if wrong > 0 else answer + abs(delta)


def _wrong(rng: random.Random, problem: Problem, lang: Language) -> str:
    kinds = [("slip", 35), ("partial", 25), ("unit", 20 if problem.wrong_unit else 0), ("none", 20)]
    kind = pick(rng, kinds)
    if kind == "slip":
        wrong = _slip(rng, problem.answer)
        steps = problem.explain(wrong)
        if lang == "tr":
            return rng.choice([f"Adım adım çözelim. {steps}\n#### {wrong}", f"{steps} Cevap: {wrong}"])
        return rng.choice(
            [f"Let's think step by step. {steps}\n#### {wrong}", f"{steps} The answer is {wrong}."]
        )
    if kind == "partial":
        first = problem.solution.split(". ")[0]
        if lang == "tr":
            return f"{first}. Cevap: {format_number(problem.partial, lang)}"
        return f"{first}. The answer is {format_number(problem.partial, lang)}."
    if kind == "unit" and problem.wrong_unit is not None:
        unit = problem.wrong_unit
        if lang == "tr":
            return f"Cevap: {unit.value} {unit.unit}"
        return f"The answer is {unit.value} {unit.unit}."
    return rng.choice(_NO_ANSWER[lang])


class MathEnvironment(EnvironmentGenerator):
    def __init__(self, lang: Language, size: int, seed_offset: int) -> None:
        self.lang = lang
        self.size = size
        self.seed_offset = seed_offset
        self.name = f"gsm8k-{lang}"
        self.title = f"GSM8K-{lang.upper()}"
        self.submission_format = "json"

    def description(self) -> str:
        if self.lang == "tr":
            return (
                "Türkçe, GSM8K tarzı çok adımlı matematik problemleri. "
                "Son cevap sayısal olarak karşılaştırılır."
            )
        return "Grade-school math word problems in English; final answers are compared as numbers."

    def competition(self) -> dict[str, Any]:
        description = self.description()
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "image": "codalab/codalab-legacy:py39",
            "template": "math",
            "tasks": [task(self.title, description)],
            "phases": [phase("Score the final answer of every problem.")],
            "leaderboards": [
                leaderboard(
                    ("Accuracy", "accuracy", "desc"),
                    ("Exact match", "exact_match", "desc"),
                    ("Answer rate", "answer_rate", "desc"),
                )
            ],
            "criteria": criteria(
                ("final-answer", "The final answer equals the gold value."),
                ("answer-format", "The response ends with one clearly marked final answer."),
                ("units", "The answer is given in the unit the question asks for."),
            ),
            "finetune": self.finetune(),
        }

    def finetune(self) -> dict[str, Any]:
        if self.lang == "tr":
            return {
                "selection_criterion": "wrong_plus_augmented",
                "language": "tr",
                "system_prompt": "Sen dikkatli bir matematik öğretmenisin. Kısa adımlarla çöz.",
                "augmentation": {
                    "factor": 5,
                    "connectors": [
                        ["ardından", "sonra"],
                        ["daha sonra", "sonrasında"],
                        ["ayrıca", "bunun yanında"],
                    ],
                    "prefixes": [
                        "Aşağıdaki problemi çöz.",
                        "Soruyu adım adım çöz.",
                        "Şu matematik problemini cevapla:",
                    ],
                    "suffixes": [
                        "Son cevabı 'Cevap:' satırında ver.",
                        "Kısa bir açıklama yap ve sonucu yaz.",
                    ],
                    "system_prompts": [
                        "Sen yardımsever bir asistansın.",
                        "Sen ilkokul öğrencilerine matematik anlatan bir öğretmensin.",
                    ],
                },
                "pool": {"path": POOL_FILE, "share": 0.2},
                "target_template": {"tr": "{reasoning}\nCevap: {answer}"},
                "suggested_hyperparams": {
                    "method": "sft",
                    "learning_rate": 0.0002,
                    "epochs": 2,
                    "lora_rank": 16,
                    "lora_alpha": 32,
                    "lora_dropout": 0.05,
                },
            }
        return {
            "selection_criterion": "wrong_plus_augmented",
            "language": "en",
            "system_prompt": "You are a careful math tutor. Solve in short steps and give the final answer.",
            "augmentation": {
                "factor": 5,
                "connectors": [["then", "after that"], ["also", "in addition"]],
                "prefixes": ["Solve the following problem.", "Answer this math question step by step:"],
                "suffixes": ["Give the final answer after '####'.", "Keep the explanation short."],
                "system_prompts": ["You are a helpful assistant.", "You are a patient grade-school teacher."],
            },
            "target_template": {"en": "{reasoning}\n#### {answer}"},
            "suggested_hyperparams": {"method": "sft", "learning_rate": 0.0002, "epochs": 2, "lora_rank": 16},
        }

    def problem(self, rng: random.Random) -> Problem:
        return make_problem(rng, self.lang)

    def case_id(self, index: int) -> str:
        return f"{self.lang}-{index:06d}"

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        problem = self.problem(rng)
        case_id = self.case_id(index)
        case = {
            "id": case_id,
            "question": problem.question,
            "answer": str(problem.answer),
            "solution": problem.solution,
            "difficulty": problem.difficulty,
            "domain": problem.domain,
            "criteria": ["final-answer", "answer-format"] + (["units"] if problem.wrong_unit else []),
        }
        text = _wrong(rng, problem, self.lang) if fail else _right(rng, problem, self.lang)
        return case, {"id": case_id, "prediction_text": text}

    def write_extras(self, bundle_dir: Path, rng: random.Random, cases: int) -> None:
        if self.lang != "tr":
            return
        # The pool is a static training set shipped with the benchmark: same kind of problems, its own ids.
        with JsonlWriter(bundle_dir / POOL_FILE) as pool:
            for index in range(max(20, min(cases // 5, 2000))):
                problem = make_problem(rng, self.lang)
                pool.write(
                    {
                        "id": f"pool-{index:05d}",
                        "question": problem.question,
                        "answer": str(problem.answer),
                        "solution": problem.solution,
                    }
                )


# The template's examples, found by examplegen.generate under the template's name.
GENERATORS = (MathEnvironment("tr", size=50, seed_offset=0), MathEnvironment("en", size=40, seed_offset=1))
