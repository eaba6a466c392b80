"""Which built-in template judges a run: every template name has its own, and no name falls to another."""

from __future__ import annotations

import pytest

from benchgen.bundle.spec import TemplateName
from benchgen.scoring import BUILDERS, build_template


def test_every_template_name_has_a_builder() -> None:
    assert set(BUILDERS) == set(TemplateName)


@pytest.mark.parametrize("name", list(TemplateName))
def test_a_template_is_built_under_the_name_it_was_asked_for(name: TemplateName) -> None:
    assert build_template(name).name is name


def test_each_template_name_folds_its_verdicts_with_its_own_aggregator() -> None:
    aggregators = {type(build_template(name).new_aggregator()) for name in TemplateName}

    assert len(aggregators) == len(TemplateName)


def test_an_unknown_template_name_is_refused_naming_the_templates() -> None:
    with pytest.raises(ValueError, match="no scoring template 'tabular': the templates are math, qa"):
        build_template("tabular")  # type: ignore[arg-type]
