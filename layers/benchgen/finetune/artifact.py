"""``finetune_artifact.zip``: the training data a run leaves behind, built from its own verdicts.

Layers: seeds (the cases the model got wrong, plus passed or near-miss cases under the wider selection
criteria), deterministic augmentations of the wrong ones, and optionally a slice of the bundle's pool.
The zip holds ``manifest.json``, ``README.md`` and the rows in four formats under ``data/``. Nothing in it
depends on the wall clock or on the order verdicts arrive in, so the same inputs give the same bytes.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from benchgen.bundle.spec import Finetune, SelectionCriterion
from benchgen.environment import Environment
from benchgen.errors import BundleError, ScoringError
from benchgen.finetune.augment import Settings, augment
from benchgen.finetune.formats import (
    MESSAGES,
    PREFERENCE,
    PROMPT_COMPLETION,
    ROWS,
    write_formats,
)
from benchgen.finetune.seed import (
    LAYERS,
    Source,
    case_text,
    pool_count,
    pool_example,
    pool_rows,
    seed_example,
    select,
    target_template,
)
from benchgen.finetune.split import SPLIT_RULE, SPLITS, split_for
from benchgen.finetune.store import (
    OrderedExamples,
    Reference,
    SelectedCases,
    Selection,
    choose_pool_rows,
    scratch_db,
)
from benchgen.naming import dataset_name
from benchgen.runs import RunInfo
from benchgen.verdicts import Verdict
from benchgen.zipwrite import write_zip

ARTIFACT_NAME = "finetune_artifact.zip"
VERDICTS_NAME = "verdicts.jsonl"
NO_FINETUNE = "the benchmark's scoring program did not emit one"
NO_VERDICTS = (
    "the scoring output holds no per-case verdicts (verdicts.jsonl), so there is nothing to learn from"
)
NOTHING_SELECTED = (
    "the run left no case to train on: the model got none wrong and the selection adds no others"
)
DEFAULT_HYPERPARAMS: dict[str, float | int | str] = {
    "method": "lora",
    "learning_rate": 2e-4,
    "epochs": 2,
    "lora_rank": 16,
    "lora_alpha": 32,
    "lora_dropout": 0.05,
    "target_modules": "all-linear",
    "dpo_learning_rate": 5e-6,
    "dpo_beta": 0.1,
}


class ArtifactReport(BaseModel):
    """What building the artifact produced, or why nothing was produced."""

    emitted: bool
    reason: str | None = None
    example_count: int = 0
    counts: dict[str, int] = Field(default_factory=dict)  # rows per source layer
    splits: dict[str, int] = Field(default_factory=dict)  # rows per split
    sha256: str | None = None
    dataset_name: str | None = None
    selection_criterion: str | None = None
    path: Path | None = None


@dataclass
class _Tally:
    layers: Counter[str] = field(default_factory=Counter)
    splits: Counter[str] = field(default_factory=Counter)
    source_cases: int = 0
    skipped_cases: int = 0  # selected, but neither the reference nor the verdict holds the question


@contextmanager
def verdict_lines(scoring_output: Path) -> Iterator[Iterator[bytes] | None]:
    """The lines of ``verdicts.jsonl`` in the scoring output zip (at its root, or else the shallowest)."""
    try:
        archive = zipfile.ZipFile(scoring_output)
    except zipfile.BadZipFile as exc:
        raise ScoringError(f"{scoring_output.name} is not a zip archive holding {VERDICTS_NAME}") from exc
    with archive:
        names = [n for n in archive.namelist() if n == VERDICTS_NAME or n.endswith("/" + VERDICTS_NAME)]
        if not names:
            yield None
            return
        with archive.open(min(names, key=lambda n: (n.count("/"), n))) as stream:
            yield iter(stream)


def selections(
    lines: Iterator[bytes],
    criterion: SelectionCriterion,
    *,
    wanted: Callable[[Verdict], bool] | None = None,
) -> Iterator[Selection]:
    """Each verdict line that selects its case (and that ``wanted`` accepts), with the layer it joins; the
    rest are read and dropped."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            verdict = Verdict.model_validate_json(line)
        except ValueError as exc:
            raise ScoringError(f"{VERDICTS_NAME} line {number} is not a verdict: {exc}") from exc
        source = select(verdict, criterion)
        if source is not None and (wanted is None or wanted(verdict)):
            yield verdict.case_id, source, line


def references(env: Environment) -> Iterator[Reference]:
    """Question, answer and solution of every case, streamed from ``cases.jsonl`` when there is one."""
    try:
        path = env.cases_path
    except BundleError:
        return  # a custom scoring program may judge without cases.jsonl: then the verdicts carry the text
    with path.open("rb") as stream:
        for number, line in enumerate(stream, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                raise BundleError(
                    path.name, f"line {number} is not valid JSON; write one case object a line"
                ) from exc
            case_id = record.get("id") if isinstance(record, dict) else None
            if isinstance(case_id, str):
                solution = record.get("solution")
                yield (
                    case_id,
                    str(record.get("question") or ""),
                    str(record.get("answer") or ""),
                    solution if isinstance(solution, str) else None,
                )


def _collect(
    env: Environment,
    finetune: Finetune,
    selected: SelectedCases,
    *,
    run: RunInfo,
    settings: Settings,
    db: sqlite3.Connection,
    store: OrderedExamples,
) -> _Tally:
    tally = _Tally()
    language = finetune.language
    template = target_template(finetune.target_template, language)
    default_criteria = [criterion.id for criterion in env.spec.criteria]
    for source, verdict, reference, _ in selected:
        text = case_text(verdict, reference)
        if text is None:
            tally.skipped_cases += 1
            continue
        tally.source_cases += 1
        seed = seed_example(
            verdict,
            text,
            source=source,
            run_id=run.run_id,
            template=template,
            language=language,
            system=finetune.system_prompt,
            default_criteria=default_criteria,
        )
        split = split_for(seed.split_key)
        family = [seed, *augment(seed, settings)] if source is Source.SEED else [seed]
        for example in family:
            store.add(example, split)
            tally.layers[example.source.value] += 1
            tally.splits[split.value] += 1
    pool_path = env.pool_path
    if finetune.pool is not None and pool_path is not None:
        count = pool_count(finetune.pool.share, tally.layers[Source.SEED.value])
        for row_id, row in choose_pool_rows(db, pool_rows(pool_path), count):
            example = pool_example(
                row_id,
                row,
                run_id=run.run_id,
                template=template,
                language=language,
                system=finetune.system_prompt,
            )
            split = split_for(example.split_key)
            store.add(example, split)
            tally.layers[Source.POOL.value] += 1
            tally.splits[split.value] += 1
    return tally


def _manifest(
    env: Environment,
    finetune: Finetune,
    *,
    run: RunInfo,
    name: str,
    settings: Settings,
    tally: _Tally,
    files: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    pool = finetune.pool
    return {
        "kind": "finetune",
        "dataset_name": name,
        "benchmark": run.benchmark,
        "run_id": run.run_id,
        "environment": {"id": run.environment_id, "version": run.environment_version},
        "base_model": run.model,
        "overall_score": run.overall_score,
        "selection_criterion": finetune.selection_criterion.value,
        "language": finetune.language,
        "criteria": [{"id": c.id, "description": c.description} for c in env.spec.criteria],
        "example_count": sum(tally.layers.values()),
        "counts": {layer.value: tally.layers[layer.value] for layer in LAYERS},
        "source_cases": tally.source_cases,
        "skipped_cases": tally.skipped_cases,
        "splits": {"counts": {s.value: tally.splits[s.value] for s in SPLITS}, "rule": SPLIT_RULE},
        "augmentation": settings.as_dict(),
        "pool": None if pool is None else {"path": pool.path, "share": pool.share},
        "target_template": target_template(finetune.target_template, finetune.language),
        "system_prompt": finetune.system_prompt,
        "suggested_hyperparams": dict(finetune.suggested_hyperparams or DEFAULT_HYPERPARAMS),
        "files": files,
    }


def _readme(manifest: dict[str, Any]) -> str:
    counts = manifest["counts"]
    splits = manifest["splits"]["counts"]
    files = manifest["files"]
    augmentation = manifest["augmentation"]
    pool = manifest["pool"]
    lines = [
        f"# {manifest['dataset_name']}",
        "",
        f"Fine-tuning data built by BenchGen from run `{manifest['run_id']}` of the benchmark "
        f"**{manifest['benchmark']}** (environment `{manifest['environment']['id']}` version "
        f"`{manifest['environment']['version']}`), for the base model `{manifest['base_model']}`.",
        "",
        "## How it was built",
        f"- Selection: `{manifest['selection_criterion']}`. Every case the model got wrong became one seed "
        "example: the benchmark's question as the prompt, and as the answer a short reasoning plus the "
        "benchmark's correct final answer. The model's own answer is never a target; it appears only as "
        "`rejected` in the preference rows.",
        f"- Augmentation: factor {augmentation['factor']}, so each wrong case gives up to "
        f"{augmentation['variants_per_seed']} variants besides its seed (connectors reworded, an instruction "
        "prefix or suffix, an alternate system prompt). Numbers in a question are never changed.",
        "- Pool: "
        + (
            "none."
            if pool is None
            else f"a {pool['share']:.0%} share of `{pool['path']}` relative to the seeds."
        ),
        f"- Splits: {manifest['splits']['rule']}. All variants of a case share its split.",
        "",
        "## Counts",
        "",
        "| layer | rows |",
        "|---|---|",
        *(f"| {layer} | {count} |" for layer, count in counts.items()),
        f"| **total** | **{manifest['example_count']}** |",
        "",
        "| split | rows |",
        "|---|---|",
        *(f"| {split} | {count} |" for split, count in splits.items()),
        "",
        "## Files",
        "Each file lists train rows first, then validation, then test; `manifest.json` gives every file's "
        "rows per split and its sha256. Train on train (and validate on validation) only: the test rows are "
        "held out for the evaluation run.",
        "",
        f'- `{MESSAGES}` ({files[MESSAGES]["rows"]} rows): `{{"messages": [system?, user, assistant]}}`, '
        "for OpenAI-compatible chat fine-tuning and TRL's SFTTrainer.",
        f'- `{PROMPT_COMPLETION}` ({files[PROMPT_COMPLETION]["rows"]} rows): `{{"prompt", "completion"}}`, '
        "for Amazon Bedrock text-model customization and TRL prompt-completion training.",
        f'- `{PREFERENCE}` ({files[PREFERENCE]["rows"]} rows): `{{"prompt", "chosen", "rejected"}}` '
        "with the model's own wrong answer as `rejected`, for DPO.",
        f"- `{ROWS}` ({files[ROWS]['rows']} rows): one row per example with its split, source case, run, "
        "source layer, variant, verdict and criteria, for inspection and for any other format.",
        "",
        "## Suggested hyperparameters",
        *(f"- `{key}`: {value}" for key, value in manifest["suggested_hyperparams"].items()),
        "",
    ]
    return "\n".join(lines)


def build_artifact(env: Environment, scoring_output: Path, out_dir: Path, *, run: RunInfo) -> ArtifactReport:
    """Write ``out_dir/finetune_artifact.zip`` from the run's verdicts, when the environment asks for one."""
    finetune = env.spec.finetune
    if finetune is None:
        return ArtifactReport(emitted=False, reason=NO_FINETUNE)
    criterion = finetune.selection_criterion.value
    settings = Settings.resolve(finetune.augmentation, finetune.language)
    with ExitStack() as stack:
        lines = stack.enter_context(verdict_lines(scoring_output))
        if lines is None:
            return ArtifactReport(emitted=False, reason=NO_VERDICTS, selection_criterion=criterion)
        out_dir.mkdir(parents=True, exist_ok=True)
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=out_dir, prefix=".artifact-")))
        db = stack.enter_context(scratch_db(root / "scratch.sqlite"))
        selected = SelectedCases(db)
        selected.add(selections(lines, finetune.selection_criterion))
        selected.join_references(references(env))
        store = OrderedExamples(db)
        tally = _collect(env, finetune, selected, run=run, settings=settings, db=db, store=store)
        if not len(store):
            return ArtifactReport(emitted=False, reason=NOTHING_SELECTED, selection_criterion=criterion)
        stats = write_formats(store.ordered(), root / "build")
        name = dataset_name(run.benchmark, run.model, run.overall_score, run.finished_at.date())
        files = {path: stats[path].as_dict() for path in sorted(stats)}
        manifest = _manifest(env, finetune, run=run, name=name, settings=settings, tally=tally, files=files)
        members: dict[str, Path | bytes] = {path: root / "build" / path for path in stats}
        members["manifest.json"] = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        members["README.md"] = _readme(manifest).encode("utf-8")
        target = out_dir / ARTIFACT_NAME
        digest = write_zip(target, members)
    return ArtifactReport(
        emitted=True,
        example_count=manifest["example_count"],
        counts=manifest["counts"],
        splits=manifest["splits"]["counts"],
        sha256=digest,
        dataset_name=name,
        selection_criterion=criterion,
        path=target,
    )
