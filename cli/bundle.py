"""``benchgen bundle check PATH``: every problem in an environment bundle, before it is uploaded."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from benchgen.environment import Environment
    from benchgen.records.judge_calibration import CriterionAgreement

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
    check.add_argument(
        "--calibrate",
        action="store_true",
        help="also ask the bundle's judge about its human-labelled answers (judge: calibration:) and print "
        "its agreement with people per criterion, as registration records it",
    )
    check.add_argument(
        "--judge-url",
        help="with --calibrate: the base URL of an OpenAI-compatible API serving the judge (a connection id "
        "means nothing here), e.g. http://127.0.0.1:8766/v1 for benchgen model serve",
    )
    check.add_argument(
        "--judge-model", help="with --calibrate: the judge's model id (default: judge: model_id)"
    )
    check.add_argument(
        "--judge-max-in-flight",
        type=int,
        help="with --calibrate: the most answers the judge is asked about at once, as a connection's "
        "max_in_flight bounds registration's calibration (default: a connection's default)",
    )
    check.add_argument(
        "--judge-api-key-file",
        type=Path,
        help="with --calibrate: a file holding the API key the judge's server asks for",
    )
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
    return calibration_check(path, args) if args.calibrate else 0


def calibration_check(path: Path, args: argparse.Namespace) -> int:
    """``--calibrate``: the judge's agreement with people on the bundle's labelled answers, as a table;
    1 when it could not be measured."""
    from benchgen.aws.providers.openai_compatible import ChatCompletions
    from benchgen.environment import open_environment
    from benchgen.inference.pacing import Budget
    from benchgen.judging import JudgeSettings
    from benchgen.providers.connections import base_url_problem
    from benchgen.records.judge_calibration import CalibrationStatus
    from benchgen.records.runs import DEFAULT_MAX_IN_FLIGHT
    from benchgen.scoring.calibration import JudgeAtHand, calibrate_environment

    url: str | None = args.judge_url
    problem = (
        "give --judge-url, the judge's OpenAI-compatible base URL" if url is None else base_url_problem(url)
    )
    in_flight = DEFAULT_MAX_IN_FLIGHT if args.judge_max_in_flight is None else args.judge_max_in_flight
    if in_flight < 1:
        problem = f"--judge-max-in-flight must be at least 1, not {in_flight}"
    if url is None or problem is not None:
        print(f"--calibrate: {problem}", file=sys.stderr)
        return 1
    key = args.judge_api_key_file.read_text(encoding="utf-8").strip() if args.judge_api_key_file else None

    def connect(settings: JudgeSettings, model_id: str) -> JudgeAtHand:
        model = ChatCompletions(url, model_id, settings.sampling, api_key=key)
        return JudgeAtHand(model, Budget(in_flight=in_flight))

    with tempfile.TemporaryDirectory(prefix="benchgen-calibrate-") as work:
        env = open_environment(path, Path(work))
        found = calibrate_environment(env, connect, model_id=args.judge_model)
    if found is None:
        print(
            "--calibrate: the bundle's template asks no judge (no judge: section), so there is no judge "
            "to calibrate",
            file=sys.stderr,
        )
        return 1
    if found.status is not CalibrationStatus.MEASURED:
        print("\n".join(found.lines()), file=sys.stderr)
        return 1
    print(f"Judge {found.model_id} at {url}, on {found.answers} human-labelled answers:")
    print(calibration_table(found.criteria))
    for criterion in found.criteria:
        if criterion.poor:
            print(
                f"this judge agrees poorly with people on {criterion.criterion} (kappa {criterion.kappa:.2f})"
            )
        elif criterion.kappa is None:
            print(f"{criterion.criterion}: {criterion.note}")
    return 0


def calibration_table(criteria: list[CriterionAgreement]) -> str:
    """Per criterion: n, accuracy, kappa with its 95% interval, and the answers left unjudged."""
    rows = [("criterion", "n", "accuracy", "kappa [95% CI]", "unjudged")]
    for each in criteria:
        accuracy = f"{each.accuracy:.0%}" if each.accuracy is not None else "-"
        kappa = (
            f"{each.kappa:.2f} [{each.kappa_low:.2f}, {each.kappa_high:.2f}]"
            if each.kappa is not None
            else "undefined"
        )
        rows.append((each.criterion, str(each.n), accuracy, kappa, str(each.unjudged)))
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    return "\n".join(
        "  ".join(
            cell.ljust(width) if column in (0, 3) else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    )
