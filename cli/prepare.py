"""``benchgen prepare``: training material from runs scored on this machine, no cloud involved.

It reads the folders ``benchgen score`` wrote (``run.json`` names the run, its model and the bundle;
``scoring_output.zip`` holds the verdicts), writes a preparation into ``--out`` (``examples.jsonl``,
``held_out.jsonl``, ``coverage.json``, ``preparation.json``), prints its coverage, and with ``--profile``
packages it as the cloud would.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchgen.bundle.spec import SelectionCriterion
from benchgen.outputs import RunOutput
from benchgen.training.export_profiles import PROFILES
from benchgen.vocabulary import Method
from cli.score_command import LOCAL_VERSION, RUN_FILE

if TYPE_CHECKING:
    from benchgen.finetune.split import SplitShares
    from benchgen.training.coverage import Coverage
    from benchgen.training.preparation import GenerationReport, RunSource

COVERAGE_FILE = "coverage.json"
PREPARATION_FILE = "preparation.json"
SPLITS_HELP = "train,validation,test percentages of the case hash buckets (default 80,10,10)"


class PrepareError(Exception):
    """A command line input that cannot be prepared; the message says what to do."""


def register(subparsers: Any) -> None:
    command = subparsers.add_parser(
        "prepare",
        help="turn runs scored with `benchgen score` into a training preparation (and a package)",
        description="Generate training examples from the verdicts of one or more runs scored with "
        "`benchgen score` on the same bundle, print their coverage, and with --profile write an exact "
        "package for a training provider.",
    )
    command.add_argument(
        "--run",
        type=Path,
        action="append",
        required=True,
        metavar="DIR",
        help="a folder written by `benchgen score` (repeat for several runs on the same bundle)",
    )
    command.add_argument(
        "--method",
        choices=[method.value for method in Method],
        default=Method.DEMONSTRATION.value,
        help=f"default {Method.DEMONSTRATION.value}",
    )
    command.add_argument(
        "--criteria", default="", help="comma-separated criterion ids in scope (default: all of the bundle's)"
    )
    command.add_argument(
        "--selection",
        choices=[selection.value for selection in SelectionCriterion],
        default=None,
        help=f"the case filter (default {SelectionCriterion.WRONG_PLUS_AUGMENTED.value})",
    )
    command.add_argument(
        "--factor", type=int, default=None, help="augmentation factor, counting the seed (default: bundle's)"
    )
    command.add_argument(
        "--pool-share",
        type=float,
        default=None,
        help="pool rows per seed row, 0 for none (default: the bundle's)",
    )
    command.add_argument(
        "--correct-share",
        type=float,
        default=None,
        help="reinforcement only: the share of the cases the model got right to mix in (0 to 1; default 0)",
    )
    command.add_argument("--seed", type=int, default=0, help="mixed into the augmentation and pool choices")
    command.add_argument("--splits", type=_shares, default=None, metavar="TRAIN,VAL,TEST", help=SPLITS_HELP)
    command.add_argument(
        "--profile", default=None, help=f"also write a package in this export profile: {', '.join(PROFILES)}"
    )
    command.add_argument("--out", type=Path, required=True, help="folder for the preparation (and package)")
    command.set_defaults(func=run_prepare)


def _shares(text: str) -> SplitShares:
    from pydantic import ValidationError

    from benchgen.finetune.split import SplitShares

    parts = text.split(",")
    if len(parts) != 3 or not all(part.strip().isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not three whole percentages such as 80,10,10")
    train, validation, test = (int(part) for part in parts)
    try:
        return SplitShares(train=train, validation=validation, test=test)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(exc.errors()[0]["msg"].removeprefix("Value error, ")) from exc


@dataclass(frozen=True)
class _Run:
    source: RunSource
    bundle: Path
    benchmark: str


def _read_run(folder: Path) -> _Run:
    from benchgen.training.preparation import RunSource

    path = folder / RUN_FILE
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PrepareError(f"{folder} holds no {RUN_FILE}; give a folder `benchgen score` wrote") from None
    except ValueError as exc:
        raise PrepareError(f"{path} is not JSON ({exc}); score the run again") from exc
    if record.get("status") != "Completed":
        reason = record.get("failure_reason") or "it did not finish"
        raise PrepareError(
            f"run {record.get('run_id')} in {folder} is {record.get('status')} ({reason}); "
            "prepare from completed runs only"
        )
    scoring_output = RunOutput.SCORING_OUTPUT.path_in(folder)
    if not scoring_output.is_file():
        raise PrepareError(f"{folder} has no {scoring_output.name}; score the run again")
    bundle = Path(record["bundle"])
    if not bundle.exists():
        raise PrepareError(
            f"run {record['run_id']} was scored against {bundle}, which is not there (a relative path is "
            "read from the current folder); run the command where the bundle is"
        )
    source = RunSource(
        run_id=record["run_id"],
        model=record["model"],
        environment_id=record["environment_id"],
        environment_version=LOCAL_VERSION,
        scoring_output=scoring_output,
    )
    return _Run(source=source, bundle=bundle.resolve(), benchmark=record["benchmark"])


def _read_runs(folders: list[Path]) -> list[_Run]:
    runs = [_read_run(folder) for folder in folders]
    bundles = sorted({str(run.bundle) for run in runs})
    if len(bundles) > 1:
        raise PrepareError(
            f"the runs were scored against different bundles ({', '.join(bundles)}); a preparation draws "
            "from runs on one environment version: give runs of one bundle"
        )
    return runs


def _print_coverage(cov: Coverage) -> None:
    from benchgen.finetune.split import SPLITS

    names = [split.value for split in SPLITS]
    table = [["criterion", *names]]
    table += [
        [criterion, *(str(counts.get(name, 0)) for name in names)]
        for criterion, counts in cov.criteria.items()
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    print("coverage (examples per criterion and split):")
    for row in table:
        cells = [row[0].ljust(widths[0])] + [
            cell.rjust(width) for cell, width in zip(row[1:], widths[1:], strict=True)
        ]
        print("  " + "  ".join(cells))
    if not cov.gaps:
        print("no coverage gaps")
        return
    print(f"{len(cov.gaps)} coverage gaps:")
    for gap in cov.gaps:
        print(f"  - {gap.message}")


def _print_report(preparation_id: str, report: GenerationReport, out: Path) -> None:
    kinds = ", ".join(f"{kind} {count}" for kind, count in report.kinds.items())
    splits = ", ".join(f"{split} {count}" for split, count in report.splits.items())
    print(f"preparation {preparation_id}: {report.example_count} examples ({kinds}; {splits})")
    print(f"  {report.held_out_count} held-out cases; state hash {report.state_hash}")
    for reason, count in report.dropped.items():
        print(f"  dropped {count}: {reason}")
    print(f"  files in {out}: examples.jsonl, held_out.jsonl, {COVERAGE_FILE}, {PREPARATION_FILE}")


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run_prepare(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from benchgen.environment import open_environment
    from benchgen.errors import BenchGenError
    from benchgen.training.coverage import coverage
    from benchgen.training.examples import EXAMPLES_NAME, PreparedExample
    from benchgen.training.held_out import case_questions
    from benchgen.training.package import PreparationInfo, build_package, choose_profile
    from benchgen.training.preparation import (
        GenerationSettings,
        PreparationSpec,
        criteria_scope,
        generate,
    )

    out: Path = args.out
    try:
        runs = _read_runs(args.run)
        method = Method(args.method)
        if args.profile:
            choose_profile(args.profile, method)  # refuse before generating, not after
        settings = GenerationSettings(
            augmentation_factor=args.factor,
            pool_share=args.pool_share,
            seed=args.seed,
            **({"correct_share": args.correct_share} if args.correct_share is not None else {}),
            **({"splits": args.splits} if args.splits else {}),
        )
        spec = PreparationSpec(
            environment_id=runs[0].source.environment_id,
            environment_version=LOCAL_VERSION,
            method=method,
            criteria=[c.strip() for c in args.criteria.split(",") if c.strip()],
            run_ids=[run.source.run_id for run in runs],
            settings=settings,
            **({"selection": args.selection} if args.selection else {}),
        )
        with tempfile.TemporaryDirectory(prefix="benchgen-prepare-") as tmp:
            env = open_environment(runs[0].bundle, Path(tmp) / "environment")
            report = generate(spec, env, [run.source for run in runs], out)
            scope = criteria_scope(spec, env)
            with (out / EXAMPLES_NAME).open("rb") as lines:
                cov = coverage((PreparedExample.model_validate_json(line) for line in lines), scope=scope)
            preparation_id = f"prep-local-{report.state_hash[:12]}"
            _write_json(out / COVERAGE_FILE, cov.model_dump(mode="json"))
            record: dict[str, Any] = {
                "preparation_id": preparation_id,
                "benchmark": runs[0].benchmark,
                "spec": spec.model_dump(mode="json"),
                "runs": {run.source.run_id: str(folder) for run, folder in zip(runs, args.run, strict=True)},
                "report": report.model_dump(mode="json"),
            }
            _write_json(out / PREPARATION_FILE, record)
            _print_report(preparation_id, report, out)
            _print_coverage(cov)
            if args.profile:
                info = PreparationInfo(
                    state_hash=report.state_hash,
                    method=method,
                    environment_id=spec.environment_id,
                    environment_version=spec.environment_version,
                    benchmark=runs[0].benchmark,
                    base_model=report.base_model,
                    suggested_hyperparams=report.suggested_hyperparams,
                    spec=record["spec"],
                )
                package = build_package(
                    out,
                    info,
                    args.profile,
                    out,
                    cases=case_questions(env),
                    scoring_program=env.task.scoring_program,
                )
                record["package"] = package.model_dump(mode="json", exclude={"path"}) | {
                    "file": package.path.name
                }
                _write_json(out / PREPARATION_FILE, record)
                print(f"package {package.package_id} ({package.profile}): {package.path}")
                print(f"  sha256 {package.sha256}")
                for note in package.rewrites:
                    print(f"  {note}")
    except (BenchGenError, PrepareError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        print(f"error: {problems}", file=sys.stderr)
        return 2
    return 0
