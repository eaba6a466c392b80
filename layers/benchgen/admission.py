"""Every problem a bundle has, for its author, before it is registered: what the spec, its references, its
runtime, its time limits, its tasks' parts and its template find wrong in it.

Apart from :mod:`benchgen.environment` because a template's own checks are found through the scoring
registry, and scoring reads environments.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchgen.bundle.archive import Budget, Limits, open_bundle
from benchgen.bundle.load import spec_problems
from benchgen.bundle.runtime import select_runtime
from benchgen.bundle.spec import CompetitionSpec
from benchgen.environment import competition_name, task_part_problems, time_limit_problems
from benchgen.errors import BundleError
from benchgen.scoring import registry


def template_problems(spec: CompetitionSpec, *, file: str) -> list[BundleError]:
    """What the spec's template finds wrong in it (a template that grades with a judge model and no
    judge named, say)."""
    if spec.template is None:
        return []
    check = registry.template(spec.template).spec_problems
    return (
        [] if check is None else [BundleError(file, message, field=field) for field, message in check(spec)]
    )


def check_bundle(
    source: Path, *, limits: Limits | None = None, max_program_seconds: int | None = None
) -> list[str]:
    """Every problem found in a bundle, as messages for its author; an empty list means it is fine.

    ``max_program_seconds``: the longest ``execution_time_limit`` the platform can honour (none offline).
    """
    with tempfile.TemporaryDirectory(prefix="benchgen-check-") as tmp:
        workdir = Path(tmp)
        budget = Budget(limits)
        try:
            root = open_bundle(source, workdir, budget=budget)
        except BundleError as exc:
            return [str(exc)]
        spec, found = spec_problems(root)
        if spec is None:
            return [str(p) for p in found]
        file = competition_name(root)
        found += template_problems(spec, file=file)
        problems = [str(p) for p in found]
        try:
            select_runtime(spec)
        except BundleError as exc:
            problems.append(str(exc))
        if max_program_seconds is not None:
            problems += time_limit_problems(spec, file=file, maximum=max_program_seconds)
        reported = {p.field for p in found if p.field}
        for position in range(len(spec.tasks)):
            problems += task_part_problems(
                root, spec, position, file=file, skip=reported, workdir=workdir, budget=budget
            )
        return problems
