"""Built-in scoring templates (``math``, ``qa``, ``routing``, ``code``), used when a task has no program."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from benchgen.bundle.spec import TemplateName
from benchgen.scoring import code, math, qa, routing
from benchgen.scoring.templates import Aggregator, ScoringOptions, ScoringTemplate

Builder = Callable[[ScoringOptions], ScoringTemplate]


def _math(options: ScoringOptions) -> ScoringTemplate:
    return ScoringTemplate(TemplateName.MATH, math.judge, math.MathAggregator)


def _qa(options: ScoringOptions) -> ScoringTemplate:
    return ScoringTemplate(TemplateName.QA, qa.make_judge(), qa.QaAggregator)


def _routing(options: ScoringOptions) -> ScoringTemplate:
    return ScoringTemplate(TemplateName.ROUTING, routing.judge, routing.RoutingAggregator)


def _code(options: ScoringOptions) -> ScoringTemplate:
    judge = code.make_judge(
        time_limit=options.time_limit,
        workdir=options.workdir,
        sandbox=options.sandbox,
        runtime=options.runtime,
    )
    return ScoringTemplate(TemplateName.CODE, judge, code.CodeAggregator)


# Every TemplateName has its entry (a unit test holds the two equal): a template missing here is an error
# when a run asks for it, never another template's judging.
BUILDERS: Mapping[TemplateName, Builder] = MappingProxyType(
    {
        TemplateName.MATH: _math,
        TemplateName.QA: _qa,
        TemplateName.ROUTING: _routing,
        TemplateName.CODE: _code,
    }
)


def build_template(name: TemplateName, options: ScoringOptions | None = None) -> ScoringTemplate:
    """The judge and aggregator of template ``name``, configured by ``options``."""
    builder = BUILDERS.get(name)
    if builder is None:
        raise ValueError(f"there is no scoring template {name!r}: the templates are {', '.join(BUILDERS)}")
    return builder(options or ScoringOptions())


__all__ = ["BUILDERS", "Aggregator", "ScoringOptions", "ScoringTemplate", "build_template"]
