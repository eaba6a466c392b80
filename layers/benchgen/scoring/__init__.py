"""Built-in scoring templates (``math``, ``qa``, ``routing``, ``code``), used when a task has no program."""

from __future__ import annotations

from benchgen.bundle.spec import TemplateName
from benchgen.scoring import code, math, qa, routing
from benchgen.scoring.templates import Aggregator, ScoringOptions, ScoringTemplate


def build_template(name: TemplateName, options: ScoringOptions | None = None) -> ScoringTemplate:
    """The judge and aggregator of template ``name``, configured by ``options``."""
    settings = options or ScoringOptions()
    if name is TemplateName.MATH:
        return ScoringTemplate(name, math.judge, math.MathAggregator)
    if name is TemplateName.QA:
        return ScoringTemplate(name, qa.make_judge(), qa.QaAggregator)
    if name is TemplateName.ROUTING:
        return ScoringTemplate(name, routing.judge, routing.RoutingAggregator)
    judge = code.make_judge(
        time_limit=settings.time_limit, workdir=settings.workdir, sandbox=settings.sandbox
    )
    return ScoringTemplate(name, judge, code.CodeAggregator)


__all__ = ["Aggregator", "ScoringOptions", "ScoringTemplate", "build_template"]
