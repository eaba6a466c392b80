"""Built-in scoring templates, used when a task has no program: each is defined in its own module and found
by its name (:mod:`benchgen.scoring.registry`)."""

from __future__ import annotations

from benchgen.scoring import registry
from benchgen.scoring.templates import Aggregator, ScoringOptions, ScoringTemplate
from benchgen.vocabulary import TemplateName


def build_template(name: str, options: ScoringOptions | None = None) -> ScoringTemplate:
    """The judge and aggregator of template ``name``, configured by ``options``; a ValueError naming the
    templates when there is none of that name, never another template's judging."""
    definition = registry.template(name)
    return ScoringTemplate(
        TemplateName(definition.name),
        definition.build(options or ScoringOptions()),
        definition.aggregator,
        definition.case_type,
    )


__all__ = ["Aggregator", "ScoringOptions", "ScoringTemplate", "build_template"]
