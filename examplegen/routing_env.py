"""A model-routing environment (``routing``): send each request to the cheapest route that can handle it.

Routes: ``fast`` (a small model), ``retrieval`` (search-augmented), ``code`` (a code model) and ``reasoning``
(a large model). Each case lists what every route would cost for that request. Wrong predictions
over-route to the expensive model, or under-route hard and fresh-information requests to the small one.
"""

from __future__ import annotations

import random
from typing import Any

from examplegen.base import EnvironmentGenerator, Record, criteria, leaderboard, phase, task
from examplegen.failures import pick

ROUTES = ["fast", "retrieval", "code", "reasoning"]
# Dollars per request of typical length; each case scales them by its own length.
_BASE_COST = {"fast": 0.0004, "retrieval": 0.0025, "code": 0.006, "reasoning": 0.02}

_COUNTRIES = ["Portugal", "Kenya", "Vietnam", "Chile", "Norway", "Morocco", "Canada", "Nepal"]
_LANGUAGES = ["French", "Turkish", "German", "Spanish", "Japanese"]
_PHRASES = ["good morning", "where is the station", "thank you very much", "see you tomorrow"]
_TASKS = [
    "returns the n-th Fibonacci number",
    "removes duplicate lines from a file",
    "parses an ISO date and returns the weekday",
    "merges two sorted lists",
    "validates an e-mail address",
]
_COMPANIES = ["Northwind", "Contoso", "Globex", "Initech", "Umbrella Logistics"]
_CITIES = ["Lisbon", "Ankara", "Montreal", "Osaka", "Nairobi", "Oslo"]


def _request(rng: random.Random, route: str) -> tuple[str, str, str]:
    """A request for ``route`` with its domain and difficulty."""
    if route == "fast":
        options = [
            (f"Translate '{rng.choice(_PHRASES)}' into {rng.choice(_LANGUAGES)}.", "translation", "easy"),
            (f"What is the capital of {rng.choice(_COUNTRIES)}?", "general-knowledge", "easy"),
            ("Rewrite formally: 'we can't make it on friday, sorry'.", "writing", "easy"),
        ]
    elif route == "retrieval":
        options = [
            (f"What did {rng.choice(_COMPANIES)} report in its latest results?", "current-events", "medium"),
            (f"When is the {rng.choice(_CITIES)} public library open this week?", "local-info", "medium"),
            (f"Which flights leave {rng.choice(_CITIES)} for Rome tomorrow?", "travel", "hard"),
        ]
    elif route == "code":
        options = [
            (f"Write a Python function that {rng.choice(_TASKS)}.", "programming", "medium"),
            ("Why does `const f = () => { 1 }; console.log(f())` print undefined?", "debugging", "medium"),
            ("Fix this SQL: SELECT name, COUNT(*) FROM orders GROUP BY customer_id;", "debugging", "hard"),
        ]
    else:
        options = [
            (
                f"A warehouse ships {rng.randint(200, 900)} parcels a day with {rng.randint(3, 9)} vans; "
                "plan a schedule that balances the load and explain the trade-offs.",
                "planning",
                "hard",
            ),
            ("Prove that the square root of 2 is irrational, step by step.", "math", "hard"),
            (
                f"Compare renting and buying a home in {rng.choice(_CITIES)} over ten years; recommend one.",
                "analysis",
                "hard",
            ),
        ]
    return rng.choice(options)


class RoutingEnvironment(EnvironmentGenerator):
    name = "routing"
    title = "Model Routing"
    size = 40
    seed_offset = 3
    submission_format = "jsonl"

    def competition(self) -> dict[str, Any]:
        description = "Route every request to the cheapest model that can answer it well."
        return {
            "version": 2,
            "title": self.title,
            "description": description,
            "template": "routing",
            "tasks": [task("Routing", description)],
            "phases": [phase("Pick a route for every request.")],
            "leaderboards": [
                leaderboard(
                    ("Accuracy", "accuracy", "desc"),
                    ("Total cost (USD)", "total_cost_usd", "asc"),
                    ("Average cost per task (USD)", "avg_cost_usd_per_task", "asc"),
                )
            ],
            "criteria": criteria(
                ("right-route", "The chosen route is the one the request needs."),
                ("cost-aware", "No more expensive route is chosen than needed."),
            ),
            "finetune": {
                "selection_criterion": "wrong_plus_augmented",
                "language": "en",
                "system_prompt": "Answer with one route name: fast, retrieval, code or reasoning.",
                "augmentation": {
                    "factor": 2,
                    "prefixes": ["Pick the route for this request:", "Which route should handle this?"],
                },
                "target_template": {"en": "{answer}"},
                "suggested_hyperparams": {"method": "sft", "learning_rate": 0.0001, "epochs": 1},
            },
        }

    def make_case(self, rng: random.Random, index: int, fail: bool) -> tuple[Record, Record]:
        route = rng.choice(ROUTES)
        question, domain, difficulty = _request(rng, route)
        length = rng.uniform(0.6, 1.8)
        costs = {name: round(base * length, 6) for name, base in _BASE_COST.items()}
        case_id = f"route-{index:06d}"
        case = {
            "id": case_id,
            "question": question,
            "answer": route,
            "route": route,
            "costs": costs,
            "difficulty": difficulty,
            "domain": domain,
        }
        chosen = self._choose(rng, route) if fail else route
        return case, {"id": case_id, "prediction_text": chosen, "route": chosen, "cost_usd": costs[chosen]}

    @staticmethod
    def _choose(rng: random.Random, gold: str) -> str:
        if gold == "reasoning":
            return pick(rng, [("fast", 60), ("code", 25), ("retrieval", 15)])
        if gold == "fast":
            return pick(rng, [("reasoning", 70), ("retrieval", 30)])
        return pick(rng, [("reasoning", 50), ("fast", 50)])


# The template's example, found by examplegen.generate under the template's name.
GENERATORS = (RoutingEnvironment(),)
