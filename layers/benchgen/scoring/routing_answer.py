"""Whether a routing decision is the case's: the ``routing`` template's rule over plain text.

Routes compare case-insensitively, ignoring surrounding whitespace; an empty route is no decision. The
judge (:mod:`benchgen.scoring.routing`) turns this into a verdict; the reward and the standalone grader read
it. Standard library only: the standalone grader is built from this module's source.
"""

from __future__ import annotations


def read_route(text: str) -> str | None:
    """The route a text names, None when it names none."""
    return text.strip() or None


def gold_route(route: str | None, answer: str) -> str:
    """A case's right route: its ``route``, else its ``answer``."""
    return (route or answer).strip()


def right_route(chosen: str | None, gold: str) -> bool:
    return chosen is not None and chosen.casefold() == gold.casefold()
