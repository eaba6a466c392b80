"""Writes a generated environment (a bundle folder) and its submission to disk, streaming case by case."""

from __future__ import annotations

import random
import shutil
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from benchgen import vocabulary
from benchgen.vocabulary import TemplateName
from examplegen.arithmetic_env import ArithmeticEnvironment
from examplegen.base import REFERENCE_DIR, EnvironmentGenerator
from examplegen.codabench_leniency import CODABENCH_LENIENCY
from examplegen.codabench_style import CODABENCH_STYLE, generate_codabench_style
from examplegen.custom_program_env import CustomProgramEnvironment
from examplegen.failures import failure_plan
from examplegen.writing import JsonlWriter, PredictionsWriter, SubmissionFormat, write_text, write_yaml

EXAMPLES_SEED = 20260601
# The Codabench-style bundles' seed offset, fixed at the environment count it had when they were first
# written, so that adding an environment above leaves their bytes as they were.
CODABENCH_SEED_OFFSET = 6


def generators() -> dict[str, EnvironmentGenerator]:
    """Every environment the generator knows, by name: each template's examples (the ``GENERATORS`` of
    ``examplegen/<template>_env.py``) in the order of the templates, then the others."""
    found: list[EnvironmentGenerator] = [
        generator
        for name in vocabulary.TEMPLATES
        for generator in import_module(f"examplegen.{TemplateName(name).module}_env").GENERATORS
    ]
    found += [CustomProgramEnvironment(), ArithmeticEnvironment()]
    return {generator.name: generator for generator in found}


def judge_reply(prompt: str) -> tuple[str, str] | None:
    """The simulated judge's answer to a judging prompt, from the environment whose case it is about, with
    that case's id; None when no environment knows the case."""
    for generator in _GENERATORS.values():
        reply = generator.judge_reply(prompt)
        if reply is not None:
            return reply
    return None


_GENERATORS = generators()
ENVIRONMENTS = tuple(generators())
# The size of each checked-in example, in the order examples/README.md lists them.
EXAMPLE_SIZES = {name: generator.size for name, generator in generators().items()}


@dataclass(frozen=True)
class GeneratedEnvironment:
    name: str
    title: str
    scoring: str  # the built-in template, or "scoring program"
    bundle_dir: Path
    submission_path: Path
    cases: int
    failing: int  # cases the submission was written to get wrong
    has_finetune: bool

    @property
    def fail_share(self) -> float:
        return self.failing / self.cases


def generate_environment(
    name: str,
    out_dir: Path,
    *,
    cases: int,
    seed: int,
    submission_format: SubmissionFormat | None = None,
) -> GeneratedEnvironment:
    """Writes ``out_dir/bundle/`` (competition.yaml, reference/cases.jsonl, extras) and
    ``out_dir/submission/predictions.json`` (or ``.jsonl``). Same name, size and seed give the same bytes."""
    known = generators()
    if name not in known:
        raise ValueError(f"unknown environment {name!r}; choose one of: {', '.join(known)}")
    if cases < 1:
        raise ValueError(f"cases must be at least 1, got {cases}")
    generator = known[name]
    # Generated data only needs reproducibility, not unpredictability.
    rng = random.Random(seed)  # noqa: S311
    bundle_dir = out_dir / "bundle"
    competition = generator.competition()
    write_yaml(bundle_dir / "competition.yaml", competition)
    failing = 0
    fmt = submission_format or generator.submission_format
    with (
        JsonlWriter(bundle_dir / REFERENCE_DIR / "cases.jsonl") as case_file,
        PredictionsWriter(out_dir / "submission", fmt) as predictions,
    ):
        for index, fail in enumerate(failure_plan(rng, cases)):
            case, prediction = generator.make_case(rng, index, fail)
            case_file.write(case)
            predictions.write(prediction)
            failing += fail
        submission_path = predictions.finish(generator.submission_metadata(rng, cases))
    generator.write_extras(bundle_dir, rng, cases)
    return GeneratedEnvironment(
        name=name,
        title=competition["title"],
        scoring=competition.get("template", "scoring program"),
        bundle_dir=bundle_dir,
        submission_path=submission_path,
        cases=cases,
        failing=failing,
        has_finetune="finetune" in competition,
    )


def generate_examples(out: Path, *, seed: int = EXAMPLES_SEED) -> list[GeneratedEnvironment]:
    """The committed ``examples/`` tree: every environment, small, with a fixed seed.

    Each environment's folder is replaced as a whole so files from an older generator do not linger.
    """
    made = []
    for name, generator in generators().items():
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        made.append(
            generate_environment(name, target, cases=generator.size, seed=seed + generator.seed_offset)
        )
    generate_codabench_style(out, seed=seed + CODABENCH_SEED_OFFSET)
    # After the others, so that their seeds (and bytes) stay as they were.
    leniency_seed = seed + CODABENCH_SEED_OFFSET + len(CODABENCH_STYLE)
    generate_codabench_style(out, seed=leniency_seed, writers=CODABENCH_LENIENCY)
    write_text(out / "README.md", examples_readme(made, out, seed))
    return made


def examples_readme(made: list[GeneratedEnvironment], out: Path, seed: int) -> str:
    """The tree's README; it names the folder ``examples`` wherever it is written, so copies compare equal."""
    rows = [
        f"| `{item.name}` | {item.title} | {item.scoring} | {item.cases} | {item.failing} "
        f"| `{item.submission_path.relative_to(out).as_posix()}` | {'yes' if item.has_finetune else 'no'} |"
        for item in made
    ]
    first = made[0]
    bundle = (Path("examples") / first.bundle_dir.relative_to(out)).as_posix()
    submission = (Path("examples") / first.submission_path.relative_to(out)).as_posix()
    return "\n".join(
        [
            "# Examples",
            "",
            f"Generated by `benchgen examples generate --out examples` (seed {seed}). Do not edit these",
            "files by hand: `tests/unit/test_examples_in_sync.py` fails when they drift from the generator.",
            "",
            "Each folder holds an environment bundle (`bundle/`: `competition.yaml`, `reference/cases.jsonl`",
            "and, for some, a pool or a scoring program) and a submission that gets about 30% of the cases",
            "wrong in the ways models do.",
            "",
            "| folder | title | scoring | cases | meant to fail | submission | finetune |",
            "|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Try one:",
            "",
            "```",
            f"benchgen bundle check {bundle}",
            f"benchgen score --bundle {bundle} --submission {submission} --out out/{first.name}",
            "```",
            "",
            "## Codabench-style bundles",
            "",
            "Written the way bundles published for Codabench are (programs of their own, no `cases.jsonl`),",
            "each with the submissions it takes in `submission/`:",
            "",
            "- `codabench-app`: programs that only name `/app` paths; a code submission (`submission/code`)",
            "  and a results submission (`submission/results`); a boolean column and score keys that are no",
            "  column. `/app` is there with the local runner as root and in the sandbox function's image.",
            "- `codabench-multitask`: a phase of two tasks and a computed column; `--phase Final` runs one.",
            "- `codabench-interactive`: `ingestion_only_during_scoring`, the two programs talking through",
            "  `shared/` while both run (side by side needs the local runner as root).",
            "- `codabench-handshake`: the same, where each program deletes the files the other made in",
            "  `shared/` (training data, test rows, answers), as Codabench's official examples do.",
            "- `codabench-lock`: a scoring program that locks a file it creates in `input/res`.",
            "- `codabench-sklearn`: a scikit-learn classifier, two phases, a code submission",
            "  (`submission/code`) and a results submission (`submission/results`); `--phase Final`.",
            "- `codabench-plot`: a scoring program that reads with pandas and plots with matplotlib into",
            "  its detailed results. These two name `docker_image: codalab/codalab-legacy:py312`.",
            "- `codalab-v15`: a CodaLab-era bundle, its `competition.yaml` in version 1.5 (converted as",
            "  Codabench imports it): two phases (`--phase Development`, `--phase Final`), each naming its",
            "  programs and data as zips in the bundle, an ingestion program and a code submission.",
            "- `codabench-scratch`: a scoring program that writes scratch files in its own folder.",
            "- `codabench-ingestion-fails`: the submitted model raises half-way; the ingestion program fails",
            "  and the scoring program, reading its exit code in `input/res/metadata`, still scores: the run",
            "  completes with a warning.",
            "- `codabench-top-folder`: reference data zipped with its folder; unpacked as it is, as",
            "  Codabench does, the scoring program reads `input/ref/reference_data/values.solution`.",
            "- `codabench-removed-alias`: a CodaLab-era scoring program that uses `np.float` and writes a",
            "  fallback score when that fails, run in the `runtime: scientific` its bundle names; numpy 1.24",
            "  removed the name, so the run fails and names it, rather than completing with the fallback.",
            "- `codabench-py37`: `docker_image: codalab/codalab-legacy:py37` and a scoring program of 2019",
            "  that uses `np.float` and `np.int` (gone since numpy 1.24) and scikit-learn's `f1_score`; it",
            "  runs in the legacy runtime, with a warning naming the libraries whose versions differ.",
            "- `codabench-gpu`: `docker_image: codalab/codalab-legacy:gpu`, whose scoring program uses the",
            "  GPU when there is one and the CPU otherwise: it runs on the CPU, with a warning.",
            "",
            "```",
            "benchgen score --bundle examples/codabench-multitask/bundle "
            "--submission examples/codabench-multitask/submission --out out/multitask",
            "```",
            "",
        ]
    )
