"""``benchgen compare``: the paired comparison of two scored runs of one benchmark, before and after.

Each run is a folder written by ``benchgen score`` (its ``run.json`` and ``scoring_output.zip``). The
comparison goes to ``--out`` as ``comparison.json`` and ``comparison.html``, and its verdict is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchgen.outputs import RunOutput
from cli.score_command import RUN_FILE

if TYPE_CHECKING:
    from benchgen.compare.report import Comparison, RunIdentity
    from benchgen.compare.selection import PackageRef


class RunFolderError(Exception):
    """A folder given as a run is not a completed ``benchgen score`` run."""


def register(subparsers: Any) -> None:
    from benchgen.compare.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    command = subparsers.add_parser(
        "compare",
        help="compare two scored runs of the same benchmark case by case (before and after training)",
        description="Pair two runs' per-case verdicts on case id and report accuracy before and after, the "
        "fixed and broken cases, an exact McNemar test, a paired bootstrap interval, per-criterion and "
        "per-breakdown deltas and a plain verdict, as comparison.json and comparison.html in --out.",
    )
    command.add_argument("--before", type=Path, required=True, help="the base model's run folder")
    command.add_argument("--after", type=Path, required=True, help="the trained model's run folder")
    command.add_argument(
        "--cases", type=Path, help="compare on these case ids only (a JSON array, or one id a line)"
    )
    command.add_argument(
        "--package-manifest",
        type=Path,
        help="a training package zip, or its manifest.json: compare on its held-out cases and name it",
    )
    command.add_argument(
        "--package-sha256", help="the package zip's sha256, when --package-manifest is a bare manifest.json"
    )
    command.add_argument("--out", type=Path, required=True, help="folder for comparison.json and .html")
    command.add_argument(
        "--resamples",
        type=int,
        default=DEFAULT_RESAMPLES,
        help=f"bootstrap resamples (default {DEFAULT_RESAMPLES})",
    )
    command.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help=f"bootstrap seed (default {DEFAULT_SEED})"
    )
    command.set_defaults(func=run_compare)


def _run(folder: Path, label: str) -> tuple[RunIdentity, Path]:
    from benchgen.compare.report import RunIdentity

    run_file = folder / RUN_FILE
    try:
        record = json.loads(run_file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RunFolderError(
            f"--{label} {folder}: cannot read {RUN_FILE} ({exc.strerror}); give a folder written by "
            "benchgen score"
        ) from exc
    except ValueError as exc:
        raise RunFolderError(f"--{label} {folder}: {RUN_FILE} is not valid JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("status") != "Completed":
        status = record.get("status") if isinstance(record, dict) else None
        raise RunFolderError(
            f"--{label} {folder}: the run is {status or 'not a run'}, not Completed; only a completed run "
            "has verdicts to compare"
        )
    scoring = RunOutput.SCORING_OUTPUT.path_in(folder)
    if not scoring.is_file():
        raise RunFolderError(f"--{label} {folder}: {scoring.name} is missing; score the run again")
    identity = RunIdentity(
        run_id=str(record.get("run_id") or folder.name),
        model=str(record.get("model") or "unnamed-model"),
        benchmark=record.get("benchmark"),
        environment_id=record.get("environment_id"),
    )
    return identity, scoring


def _with_sha256(package: PackageRef | None, sha256: str) -> PackageRef:
    """The package with the stated sha256, which must agree with the zip's own when the zip was given."""
    if package is None:
        raise RunFolderError("--package-sha256 names a package: give its manifest with --package-manifest")
    stated = sha256.strip().lower()
    if package.sha256 is not None and package.sha256 != stated:
        raise RunFolderError(
            f"--package-sha256 {stated} is not the sha256 of the package zip given ({package.sha256}); "
            "leave --package-sha256 out when giving the zip"
        )
    return package.model_copy(update={"sha256": stated})


def _percent(value: float) -> str:
    return f"{100 * value:.1f}%"


def _known(rate: float | None, answered: int | None) -> str:
    """A rate of the answers read, "not known" when the scoring did not record which could be read."""
    if answered is None:
        return "not known"
    return "n/a (none answered)" if rate is None else _percent(rate)


def _print_summary(comparison: Comparison, out: Path) -> None:
    from benchgen.compare.report import HTML_NAME, JSON_NAME, NOT_ESTABLISHED_HEADLINE

    c = comparison
    interval = f"[{100 * c.bootstrap.low:+.1f}, {100 * c.bootstrap.high:+.1f}] pts"
    print(f"verdict: {c.verdict.value} ({c.verdict_reason})")
    print(
        f"  {c.paired_cases} paired cases: accuracy {_percent(c.accuracy_before)} -> "
        f"{_percent(c.accuracy_after)} ({100 * c.difference:+.1f} pts)"
    )
    print(f"  fixed {c.fixed_count}, broken {c.broken_count}, McNemar exact p = {c.mcnemar_p:.4g}")
    print(
        f"  answer rate {_known(c.answering_before.answer_rate, c.answering_before.answered)} -> "
        f"{_known(c.answering_after.answer_rate, c.answering_after.answered)}; accuracy among answered "
        f"{_known(c.answering_before.accuracy_among_answered, c.answering_before.answered)} -> "
        f"{_known(c.answering_after.accuracy_among_answered, c.answering_after.answered)}"
    )
    print(f"  {c.bootstrap.level:.0%} bootstrap CI of the difference: {interval}")
    if c.minimum_detectable_effect is not None:
        mde = 100 * c.minimum_detectable_effect
        print(f"  minimum detectable effect at {c.power:.0%} power: {mde:.1f} pts")
    left_out = len(c.only_before) + len(c.only_after) + len(c.in_neither) + len(c.gold_differs)
    if left_out:
        print(f"  cases left out of the pairing: {left_out} (listed in the report)")
    if c.training_method is not None:
        print(f"  training method: {c.training_method}" + (f"; reward: {c.reward}" if c.reward else ""))
    if c.package_id is None:
        print("  the cases are not restricted to a package's held-out set (give --package-manifest)")
    print(f"  {NOT_ESTABLISHED_HEADLINE}.")
    print(f"  report: {out / JSON_NAME}, {out / HTML_NAME}")


def run_compare(args: argparse.Namespace) -> int:
    from benchgen.compare.output import write_comparison
    from benchgen.compare.report import compare_runs
    from benchgen.compare.selection import choose_cases, read_case_list, read_package
    from benchgen.errors import BenchGenError

    try:
        if args.resamples < 1:
            raise RunFolderError(f"--resamples must be at least 1, got {args.resamples}")
        before, before_scoring = _run(args.before, "before")
        after, after_scoring = _run(args.after, "after")
        if before.environment_id != after.environment_id:
            raise RunFolderError(
                f"the runs are of different benchmarks ({before.environment_id} before, "
                f"{after.environment_id} after); compare two runs of the same benchmark"
            )
        package = None if args.package_manifest is None else read_package(args.package_manifest)
        if args.package_sha256:
            package = _with_sha256(package, args.package_sha256)
        listed = None if args.cases is None else read_case_list(args.cases)
        comparison = compare_runs(
            before,
            before_scoring,
            after,
            after_scoring,
            cases=choose_cases(listed, package),
            package=package,
            resamples=args.resamples,
            seed=args.seed,
        )
    except (RunFolderError, BenchGenError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    write_comparison(comparison, args.out)
    _print_summary(comparison, args.out)
    return 0
