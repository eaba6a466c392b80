"""``finetune_artifact.zip``: the training data a run leaves behind, built from its own verdicts.

Layers: seeds (the cases the model got wrong, plus passed or near-miss cases under the wider selection
criteria), deterministic augmentations of the wrong ones, and optionally a slice of the bundle's pool.
The zip holds ``manifest.json``, ``README.md`` and the rows in four formats under ``data/``. Nothing in it
depends on the wall clock or on the order verdicts arrive in, so the same inputs give the same bytes.

It is built from parts (``artifact_parts.collect``): a whole run is one part, a run scored in shards one
per shard, and ``finish_artifact`` merges them into the same bytes either way.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from pydantic import Field

from benchgen.bundle.spec import Finetune
from benchgen.datasets import ArtifactManifest
from benchgen.environment import Environment
from benchgen.errors import ScoringError
from benchgen.finetune.artifact_parts import PartTally, collect, read_tally
from benchgen.finetune.augment import AugmentSettings
from benchgen.finetune.formats import (
    FORMATS,
    MESSAGES,
    PREFERENCE,
    PROMPT_COMPLETION,
    ROWS,
    FileStats,
    format_lines,
    pieces,
    sizes,
)
from benchgen.finetune.seed import (
    LAYERS,
    Source,
    pool_count,
    pool_example,
    pool_rows,
    source_case_id,
    target_template,
)
from benchgen.finetune.split import SPLIT_RULE, SPLITS, split_for
from benchgen.finetune.spool import MergeOrder, Run, SortedSpool, Tie
from benchgen.finetune.store import choose_pool_rows, scratch_db
from benchgen.lazy_model import LazyModel
from benchgen.naming import dataset_name
from benchgen.outputs import RunOutput
from benchgen.records.runs import RunInfo
from benchgen.scoring.calibration import judge_agreement
from benchgen.verdicts import verdict_lines
from benchgen.zipwrite import building_zip, entry, file_sha256

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


class ArtifactReport(LazyModel):
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
    # What the zip's manifest.json says, as the dataset record reads it: handed on, not read back.
    manifest: ArtifactManifest | None = None


class _Tally:
    """The parts' tallies added up, with the pool's rows once chosen."""

    def __init__(self, tallies: Sequence[PartTally]) -> None:
        self.layers: Counter[str] = Counter()
        self.splits: Counter[str] = Counter()
        self.rows: Counter[str] = Counter()
        self.bytes: Counter[str] = Counter()
        self.source_cases = sum(t.source_cases for t in tallies)
        self.skipped_cases = sum(t.skipped_cases for t in tallies)
        for tally in tallies:
            self.layers.update(tally.layers)
            self.rows.update(tally.rows)
            self.bytes.update(tally.bytes)
            self.add_runs(tally.runs)

    def add_runs(self, runs: Sequence[Run]) -> None:
        for run in runs:
            for split, count in zip(SPLITS, run.counts, strict=True):
                self.splits[split.value] += count


def _manifest(
    env: Environment,
    finetune: Finetune,
    *,
    run: RunInfo,
    name: str,
    settings: AugmentSettings,
    tally: _Tally,
    files: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    pool = finetune.pool
    judge = judge_agreement(env)
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
        # the agreement with people of the judge that gave the run's verdicts, when a judge gave them
        **({"judge": judge.model_dump(mode="json")} if judge is not None else {}),
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
    """Write ``out_dir/finetune_artifact.zip`` from the run's verdicts, when the environment asks for one:
    the whole run as one part, then finished, as a run in shards is."""
    finetune = env.spec.finetune
    if finetune is None:
        return ArtifactReport(emitted=False, reason=NO_FINETUNE)
    with ExitStack() as stack:
        lines = stack.enter_context(verdict_lines(scoring_output))
        if lines is None:
            return ArtifactReport(
                emitted=False, reason=NO_VERDICTS, selection_criterion=finetune.selection_criterion.value
            )
        out_dir.mkdir(parents=True, exist_ok=True)
        part = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=out_dir, prefix=".artifact-part-")))
        collect(env, lines, env.cases_file, part, run_id=run.run_id)
        return finish_artifact(env, [part], out_dir, run=run)


def _refuse_shared_case(parts: Sequence[int | None]) -> Tie:
    """Two parts may not hold one case: shards are disjoint slices of ``cases.jsonl``, whose ids are
    unique. Keeping the first part's copy instead would mean holding every case id in memory."""

    def on_tie(key: bytes, earlier: int, later: int) -> None:
        first, second = parts[earlier], parts[later]
        if first is not None and second is not None and first != second:
            case = source_case_id(key.decode("utf-8"))
            raise ScoringError(
                f"artifact parts {first} and {second} both hold case {case!r}; a case belongs to one part "
                "only: collect each part from its own slice of the cases"
            )

    return on_tie


def _pool(env: Environment, finetune: Finetune, tally: _Tally, scratch: Path, *, run: RunInfo) -> list[Run]:
    """Runs of the pool's examples: the share of the seed rows of every part, chosen and sorted."""
    pool_path = env.pool_path
    if finetune.pool is None or pool_path is None:
        return []
    count = pool_count(finetune.pool.share, tally.layers[Source.SEED.value])
    if count <= 0:
        return []
    template = target_template(finetune.target_template, finetune.language)
    position = {split: number for number, split in enumerate(SPLITS)}
    spool = SortedSpool(scratch, "pool-")
    with scratch_db(scratch / "pool.sqlite") as db:
        for row_id, row in choose_pool_rows(db, pool_rows(pool_path), count):
            example = pool_example(
                row_id,
                row,
                run_id=run.run_id,
                template=template,
                language=finetune.language,
                system=finetune.system_prompt,
            )
            split = split_for(example.split_key)
            fields = pieces(example)
            spool.add(position[split], example.example_id.encode("utf-8"), fields)
            tally.layers[Source.POOL.value] += 1
            rows, size = sizes([fields], split)
            tally.rows.update(dict(zip(FORMATS, rows, strict=True)))
            tally.bytes.update(dict(zip(FORMATS, size, strict=True)))
    runs = spool.close()
    tally.add_runs(runs)
    return runs


def finish_artifact(
    env: Environment, parts: Sequence[Path], out_dir: Path, *, run: RunInfo
) -> ArtifactReport:
    """Write ``out_dir/finetune_artifact.zip`` from collected parts, taken in order: their examples merged
    by (split, example id, part, order in part), plus the pool's share of all their seed rows."""
    finetune = env.spec.finetune
    if finetune is None:
        return ArtifactReport(emitted=False, reason=NO_FINETUNE)
    criterion = finetune.selection_criterion.value
    settings = AugmentSettings.resolve(finetune.augmentation, finetune.language)
    tallies = [read_tally(part) for part in parts]
    tally = _Tally(tallies)
    runs: list[tuple[Path, Run]] = []
    owners: list[int | None] = []
    for number, (part, part_tally) in enumerate(zip(parts, tallies, strict=True)):
        runs += [(part / part_run.name, part_run) for part_run in part_tally.runs]
        owners += [number] * len(part_tally.runs)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".artifact-") as scratch:
        pool_runs = _pool(env, finetune, tally, Path(scratch), run=run)
        runs += [(Path(scratch) / pool_run.name, pool_run) for pool_run in pool_runs]
        owners += [None] * len(pool_runs)
        if not sum(tally.layers.values()):
            return ArtifactReport(emitted=False, reason=NOTHING_SELECTED, selection_criterion=criterion)
        order = MergeOrder(runs, on_tie=_refuse_shared_case(owners))
        name = dataset_name(run.benchmark, run.model, run.overall_score, run.finished_at.date())
        # The README needs only each file's rows, known from the tallies, so it goes first (the zip's
        # members are in name order) and the data files stream into the zip while their hashes are taken.
        known = {path: {"rows": tally.rows[path]} for path in sorted(FORMATS)}
        manifest = _manifest(env, finetune, run=run, name=name, settings=settings, tally=tally, files=known)
        target = RunOutput.FINETUNE_ARTIFACT.path_in(out_dir)
        stats = {path: FileStats() for path in FORMATS}
        with building_zip(target) as archive:
            readme = _readme(manifest).encode("utf-8")
            with archive.open(entry("README.md", len(readme)), "w") as sink:
                sink.write(readme)
            for which, path in enumerate(FORMATS):
                with archive.open(entry(path, tally.bytes[path]), "w") as sink:
                    for position, batch in order.records():
                        split = SPLITS[position]
                        lines = format_lines(which, batch, split)
                        chunk = b"".join(lines)
                        sink.write(chunk)
                        stats[path].add(chunk, split, len(lines))
            files = {path: stats[path].as_dict() for path in sorted(stats)}
            manifest = _manifest(
                env, finetune, run=run, name=name, settings=settings, tally=tally, files=files
            )
            document = (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
            with archive.open(entry("manifest.json", len(document)), "w") as sink:
                sink.write(document)
        digest = file_sha256(target)
    return ArtifactReport(
        emitted=True,
        example_count=manifest["example_count"],
        counts=manifest["counts"],
        splits=manifest["splits"]["counts"],
        sha256=digest,
        dataset_name=name,
        selection_criterion=criterion,
        path=target,
        manifest=ArtifactManifest.model_validate(manifest),
    )
