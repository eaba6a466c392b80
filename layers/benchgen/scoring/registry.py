"""The built-in scoring templates' definitions, each found by its name in ``benchgen.vocabulary.TEMPLATES``.

A template's definition is the ``TEMPLATE`` of ``benchgen/scoring/<name>.py``. Looking a template up
imports its module once (Python keeps it in ``sys.modules``): only the templates a function asks about are
loaded, and listing them loads each.
"""

from __future__ import annotations

from benchgen import vocabulary
from benchgen.scoring.templates import TemplateDefinition
from benchgen.vocabulary import TemplateName

PACKAGE = "benchgen.scoring"


def template(name: str) -> TemplateDefinition:
    """The definition of template ``name`` (a :class:`TemplateName` or its name); a ValueError naming the
    templates when there is none of that name."""
    return TemplateName(name).defined_in(
        PACKAGE, "TEMPLATE", TemplateDefinition, "name", "docs/architecture.md#adding-a-scoring-template"
    )


def templates() -> list[TemplateDefinition]:
    """Every template's definition, in the order of ``TEMPLATES``."""
    return [template(name) for name in vocabulary.TEMPLATES]
