"""``benchgen bundle check PATH``: every problem in an environment bundle, before it is uploaded."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchgen.environment import Environment

PROGRAM_KINDS = ("scoring_program", "ingestion_program")


def register(subparsers: Any) -> None:
    bundle = subparsers.add_parser(
        "bundle", help="work with environment bundles (competition.yaml v2, or CodaLab v1.5)"
    )
    commands = bundle.add_subparsers(dest="bundle_command", required=True, metavar="COMMAND")
    check = commands.add_parser(
        "check",
        help="list every problem in a bundle (zip, folder or competition.yaml); exit 1 if there is any",
        description="Validate competition.yaml, the task folders and the reference cases of a bundle, "
        "the way registration will (including the longest execution_time_limit the stack allows).",
    )
    check.add_argument("path", type=Path, help="the bundle: a .zip, a folder, or its competition.yaml")
    check.set_defaults(func=run_check)


def count_cases(path: Path) -> int:
    with path.open("rb") as stream:
        return sum(1 for line in stream if line.strip())


def summary(path: Path) -> str:
    """One line describing a bundle that passed the check, then a line per warning."""
    from benchgen.environment import open_environment
    from benchgen.errors import BundleError

    with tempfile.TemporaryDirectory(prefix="benchgen-check-") as work:
        env = open_environment(path, Path(work))
        kind = f"template {env.template}" if env.template else "custom scoring program"
        try:
            cases = f"{count_cases(env.cases_path):,} cases"
        except BundleError:
            cases = "no cases.jsonl"
        finetune = "yes" if env.spec.finetune is not None else "no"
        choice = env.runtime
        converted = f"\n{env.spec.conversion.describe()}" if env.spec.conversion else ""
        warnings = [*choice.warnings, *import_warnings(env, choice.runtime)]
        notes = "".join(f"\nwarning: {warning}" for warning in warnings)
        return (
            f"OK: {env.spec.title} · {kind} · {cases} · finetune {finetune} · runtime {choice.describe()}"
            f"{converted}{notes}"
        )


def import_warnings(env: Environment, runtime: str) -> list[str]:
    """The modules the programs of every phase import that ``runtime``'s environment here lacks; or that
    they could not be checked, when that environment is not built."""
    from benchgen.bundle.imports import missing_imports
    from benchgen.sandbox.runtimes import RuntimeMissing, importable_modules, runtime_environment

    try:
        environment = runtime_environment(runtime)
    except RuntimeMissing as missing:
        return [f"the programs' imports were not checked against runtime {runtime}: {missing}"]
    # Each (kind, folder) once, in phase order: phases often share one scoring program.
    programs = {
        (name.replace("_", " "), folder): None
        for position in range(len(env.spec.phases))
        for view in env.phase_view(position).phase_tasks()
        for name in PROGRAM_KINDS
        if (folder := view.part(name)) is not None
    }
    return [each.describe(runtime) for each in missing_imports(programs, importable_modules(environment))]


def run_check(args: argparse.Namespace) -> int:
    from benchgen.admission import check_bundle
    from infra.timeouts import MAX_PROGRAM_SECONDS

    path: Path = args.path
    problems = check_bundle(path, max_program_seconds=MAX_PROGRAM_SECONDS)
    if problems:
        for problem in problems:
            print(f"- {problem}")
        count = f"{len(problems)} problems; fix them" if len(problems) > 1 else "1 problem; fix it"
        print(f"{path}: {count} and run the check again", file=sys.stderr)
        return 1
    print(summary(path))
    return 0
