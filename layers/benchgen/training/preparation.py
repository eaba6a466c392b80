"""A preparation: one or more scored runs of an environment version turned into inspectable training rows.

It reuses the run artifact's machinery (selection, seed examples, augmentation, pool rows, splits by a
stable hash, the SQLite scratch store), so memory stays flat however many cases the runs judged. What it
adds: a method (demonstration, preference or reinforcement), a criteria scope, several runs (the first run in
``run_ids`` that selected a case is its source), generation settings that override the bundle's, and the
held-out set: every case of the environment version whose id falls in the test bucket, passed or failed.
No train or validation row may share a held-out case's id or text; such candidates are dropped here and
counted, so packaging normally finds nothing to refuse.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Protocol, TypeVar

from pydantic import ConfigDict, Field

from benchgen.bundle.spec import Criterion, Finetune, SelectionCriterion
from benchgen.cases import CaseText, read_case_lines
from benchgen.environment import Environment
from benchgen.errors import BenchGenError, BundleError, ScoringError
from benchgen.finetune.artifact import DEFAULT_HYPERPARAMS
from benchgen.finetune.augment import AugmentSettings, augment
from benchgen.finetune.seed import (
    Example,
    Source,
    case_text,
    pool_count,
    pool_example,
    pool_rows,
    rejected_output,
    seed_example,
    selections,
    target_template,
)
from benchgen.finetune.split import SPLITS, Split, SplitShares, split_for
from benchgen.finetune.store import OrderedExamples, SelectedCases, choose_pool_rows, scratch_db
from benchgen.judging import JudgeSettings
from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import MAX_CRITERIA, MAX_KEY_CHARS
from benchgen.report.detailed import BREAKDOWN_FIELDS
from benchgen.stored_numbers import Storable
from benchgen.training.examples import (
    EXAMPLES_NAME,
    HELD_OUT_NAME,
    Kind,
    PreparedExample,
    SourceContext,
    text_hash,
)
from benchgen.training.grading import CaseLines
from benchgen.training.held_out import HeldOutStore
from benchgen.verdicts import VERDICTS_NAME, Verdict, verdict_lines
from benchgen.vocabulary import Method, TemplateName

MAX_RUNS = 20
_Id = Annotated[str, Field(min_length=1, max_length=MAX_KEY_CHARS)]
STATE_VERSION = "benchgen-preparation-1"  # changes whenever the meaning of the hashed bytes changes

OUTSIDE_SCOPE = "rows whose governing criteria are outside the preparation's criteria scope"
NO_QUESTION = "selected cases with no question text in cases.jsonl or in the verdict"
PASSED_NO_REJECTED = "rows of cases the model got right: preference needs the model's own wrong answer"
EMPTY_NO_REJECTED = "rows of wrong cases where the model gave no output to use as the rejected answer"
POOL_NO_REJECTED = "pool rows: no run judged them, so there is no wrong answer of the model to reject"
HELD_OUT_TEXT = "train or validation rows whose case id or text is a held-out case's"
POOL_NO_GRADING = "pool rows: reinforcement grades answers to the environment's cases, and a pool row is none"

_KINDS = {Source.AUGMENTED: Kind.AUGMENTED, Source.POOL: Kind.POOL}  # every judged layer is a seed


class PreparationError(BenchGenError):
    """A spec that cannot be prepared; the message says what to change."""


class SourceProblem(StrEnum):
    """Which check of a preparation's runs and scope refused it (the API answers each with its status)."""

    REPEATED_RUN = "repeated_run"
    UNKNOWN_RUN = "unknown_run"
    OTHER_VERSION = "other_version"
    UNKNOWN_CRITERION = "unknown_criterion"


class SourcesRefused(PreparationError):
    """The spec's runs or criteria cannot be drawn from; ``problem`` names the check that refused them."""

    def __init__(self, problem: SourceProblem, message: str) -> None:
        super().__init__(message)
        self.problem = problem


class RunOnVersion(Protocol):
    """What checking a preparation's runs reads of each: a run's record (the API) or a run handed to
    Generate."""

    @property
    def run_id(self) -> str: ...
    @property
    def environment_id(self) -> str: ...
    @property
    def environment_version(self) -> str: ...


RunT = TypeVar("RunT", bound=RunOnVersion)


MAX_SEED = 2**32 - 1


class GenerationSettings(LazyModel):
    """How rows are generated; None takes the value of the bundle's ``finetune:`` section."""

    # Each number strict: a string or a boolean is refused, not read as one.
    model_config = ConfigDict(frozen=True, extra="forbid")

    augmentation_factor: int | None = Field(
        default=None, ge=0, le=50, strict=True
    )  # counts the seed, as the artifact
    pool_share: Annotated[float, Field(ge=0.0, le=1.0, strict=True), Storable] | None = (
        None  # 0 = no pool rows
    )
    # Mixed into the augmentation and pool choices; 0 = the artifact's. 32 bits, as a record keeps it.
    seed: int = Field(default=0, ge=0, le=MAX_SEED, strict=True)
    splits: SplitShares = SplitShares.model_construct()
    # Reinforcement only: the share of the cases the runs got right that joins the mistakes (0 = none, 1 =
    # all), chosen by a stable hash of the case id under ``seed``, so that a policy trained on its mistakes
    # is still rewarded for what it already answers well. Left out of the JSON when unset, so the specs of
    # the other methods (and the state hashes over them) keep their bytes.
    correct_share: Annotated[float, Field(ge=0.0, le=1.0, strict=True), Storable] | None = Field(
        default=None, exclude_if=lambda value: value is None
    )


class PreparationSpec(LazyModel):
    """What a trainer asks for."""

    model_config = ConfigDict(extra="forbid")

    # Each text as long as a record keeps it, and no more criteria than an environment records.
    environment_id: str = Field(min_length=1, max_length=MAX_KEY_CHARS)
    environment_version: str = Field(min_length=1, max_length=MAX_KEY_CHARS)
    method: Method
    # Ids of the environment's `criteria:`; [] = all.
    criteria: list[_Id] = Field(default_factory=list, max_length=MAX_CRITERIA)
    selection: SelectionCriterion = SelectionCriterion.WRONG_PLUS_AUGMENTED
    run_ids: list[_Id] = Field(min_length=1, max_length=MAX_RUNS)
    settings: GenerationSettings = GenerationSettings.model_construct()


@dataclass(frozen=True)
class RunSource:
    """A scored run to draw from, with its scoring output on local disk."""

    run_id: str
    model: str
    environment_id: str
    environment_version: str
    scoring_output: Path


class GenerationReport(LazyModel):
    example_count: int
    kinds: dict[str, int]
    splits: dict[str, int]
    source_cases: int  # judged cases that gave at least one example
    held_out_count: int
    dropped: dict[str, int]  # reason -> candidate rows it dropped
    base_model: str
    suggested_hyperparams: dict[str, float | int | str]
    state_hash: str


def _names(values: Sequence[str]) -> str:
    return ", ".join(values)


def check_sources(
    spec: PreparationSpec, found: Mapping[str, RunT | None], *, criteria: Sequence[str] | None
) -> list[RunT]:
    """The spec's runs, in its order, once each can be drawn from: named once, found (``found`` maps every
    run id of the spec to its run, ``None`` when there is none), on the spec's environment version; and
    every criterion of its scope one of the version's ``criteria`` (not checked when they are unknown).

    The one check of a preparation's runs and scope: the API makes it before it records a preparation,
    Generate again over what it was handed. :class:`SourcesRefused` names the first problem.
    """
    repeated = sorted({run_id for run_id in spec.run_ids if spec.run_ids.count(run_id) > 1})
    if repeated:
        raise SourcesRefused(
            SourceProblem.REPEATED_RUN, f"run_ids names {_names(repeated)} more than once: list each run once"
        )
    missing = [run_id for run_id in spec.run_ids if found.get(run_id) is None]
    if missing:
        raise SourcesRefused(
            SourceProblem.UNKNOWN_RUN, f"no run {_names(missing)}: check run_ids (GET /runs lists runs)"
        )
    runs = [run for run in (found[run_id] for run_id in spec.run_ids) if run is not None]
    version = f"{spec.environment_id} version {spec.environment_version}"
    elsewhere = [
        f"{run.run_id} ({run.environment_id} version {run.environment_version})"
        for run in runs
        if (run.environment_id, run.environment_version) != (spec.environment_id, spec.environment_version)
    ]
    if elsewhere:
        raise SourcesRefused(
            SourceProblem.OTHER_VERSION,
            f"runs {', '.join(elsewhere)} are not on {version}: a preparation draws from runs of one "
            "environment version only",
        )
    unknown = [criterion for criterion in spec.criteria if criteria is not None and criterion not in criteria]
    if unknown:
        valid = ", ".join(criteria or ()) or "none: leave criteria empty"
        raise SourcesRefused(
            SourceProblem.UNKNOWN_CRITERION,
            f"criteria {_names(unknown)} are not criteria of {version}; the valid ids are {valid}",
        )
    return runs


def check_spec(spec: PreparationSpec, env: Environment, runs: Sequence[RunSource]) -> None:
    """Raise a PreparationError naming the first thing that keeps ``spec`` from being prepared."""
    given = {run.run_id: run for run in runs}
    check_sources(
        spec,
        {run_id: given.get(run_id) for run_id in spec.run_ids},
        criteria=[criterion.id for criterion in env.spec.criteria],
    )
    extra = sorted(set(given) - set(spec.run_ids))
    if extra:
        raise PreparationError(
            f"runs {_names(extra)} were given but run_ids does not name them; add them to run_ids or "
            "leave them out"
        )
    try:
        env.cases_path  # noqa: B018 - the property raises when the bundle has no cases
    except BundleError as exc:
        raise PreparationError(
            f"the environment has no cases to hold out or learn from ({exc}); prepare from an environment "
            "whose reference data holds cases.jsonl"
        ) from exc
    if spec.settings.correct_share is not None and spec.method is not Method.REINFORCEMENT:
        raise PreparationError(
            f"correct_share is {spec.settings.correct_share} but the method is {spec.method.value}: only a "
            "reinforcement preparation mixes in the cases the model got right; leave correct_share unset"
        )
    finetune = env.spec.finetune or Finetune()
    if spec.settings.pool_share and finetune.pool is None:
        raise PreparationError(
            f"pool_share is {spec.settings.pool_share} but the environment's finetune section names no pool; "
            "leave pool_share unset or 0"
        )


@dataclass(frozen=True)
class _Plan:
    """The spec resolved against the bundle: everything one row needs."""

    method: Method
    scope: frozenset[str]
    shares: SplitShares
    augmentation: AugmentSettings
    pool_share: float
    pool_path: Path | None
    template: str
    language: str
    system: str
    all_criteria: list[str]
    scoring_template: TemplateName | None  # the built-in template that judged the runs; None: a program
    criteria: tuple[Criterion, ...]
    correct_share: float
    judge: JudgeSettings | None  # the environment's judge, for a template that asks one

    @classmethod
    def resolve(cls, spec: PreparationSpec, env: Environment) -> _Plan:
        finetune = env.spec.finetune or Finetune()
        settings = spec.settings
        augmentation = AugmentSettings.resolve(finetune.augmentation, finetune.language, seed=settings.seed)
        if settings.augmentation_factor is not None:
            augmentation = dataclasses.replace(augmentation, factor=settings.augmentation_factor)
        bundle_share = finetune.pool.share if finetune.pool is not None else 0.0
        return cls(
            method=spec.method,
            scope=frozenset(spec.criteria),
            shares=settings.splits,
            augmentation=augmentation,
            pool_share=bundle_share if settings.pool_share is None else settings.pool_share,
            pool_path=env.pool_path,
            template=target_template(finetune.target_template, finetune.language),
            language=finetune.language,
            system=finetune.system_prompt,
            all_criteria=[criterion.id for criterion in env.spec.criteria],
            scoring_template=env.template,
            criteria=tuple(env.spec.criteria),
            correct_share=settings.correct_share or 0.0,
            judge=env.spec.judge,
        )


@dataclass
class _Tally:
    kinds: Counter[str] = field(default_factory=Counter)
    splits: Counter[str] = field(default_factory=Counter)
    dropped: Counter[str] = field(default_factory=Counter)
    seed_rows: int = 0  # kept seed rows of wrong cases: what the pool share is a share of
    source_cases: int = 0


class _Builder:
    """Turns finetune examples into prepared ones, keeping those the spec admits."""

    def __init__(self, plan: _Plan, held_out: HeldOutStore, store: OrderedExamples) -> None:
        self.plan = plan
        self.held_out = held_out
        self.store = store
        self.tally = _Tally()

    def _refusal(self, example: PreparedExample) -> str | None:
        """Why ``example`` may not be kept, or None."""
        if self.plan.scope and not self.plan.scope.intersection(example.criteria):
            return OUTSIDE_SCOPE
        if self.plan.method == Method.REINFORCEMENT and example.kind is Kind.POOL:
            return POOL_NO_GRADING
        if self.plan.method == Method.PREFERENCE and example.rejected is None:
            if example.kind is Kind.POOL:
                return POOL_NO_REJECTED
            verdict = example.source.verdict
            return PASSED_NO_REJECTED if verdict is not None and verdict.passed else EMPTY_NO_REJECTED
        if example.split is not Split.TEST and self.held_out.touches(
            example.source.case_id, (text_hash(example.prompt), example.source_text_hash)
        ):
            return HELD_OUT_TEXT
        return None

    def add(
        self,
        example: Example,
        *,
        run_id: str | None,
        response: str | None,
        breakdown: dict[str, str],
        question: str,
        grading: dict[str, Any] | None = None,
    ) -> bool:
        """Keep ``example`` as a prepared one, or count why not; whether it was kept."""
        prepared = PreparedExample(
            example_id=example.example_id,
            split=split_for(example.split_key, self.plan.shares),
            kind=_KINDS.get(example.source, Kind.SEED),
            variant=example.variant,
            criteria=list(example.criteria) or list(self.plan.all_criteria),
            breakdown=breakdown,
            system=example.system,
            prompt=example.input,
            chosen=example.target,
            rejected=example.rejected if self.plan.method == Method.PREFERENCE else None,
            grading=grading,
            source=SourceContext(
                case_id=example.case_id,
                run_id=run_id,
                layer=example.source,
                response=response,
                verdict=example.verdict,
            ),
            source_text_hash=text_hash(question),
        )
        refusal = self._refusal(prepared)
        if refusal is not None:
            self.tally.dropped[refusal] += 1
            return False
        self.store.add_json(prepared.split, prepared.example_id, prepared.model_dump_json().encode("utf-8"))
        self.tally.kinds[prepared.kind.value] += 1
        self.tally.splits[prepared.split.value] += 1
        self.tally.seed_rows += example.source is Source.SEED
        return True

    def add_case(
        self,
        source: Source,
        verdict: Verdict,
        example: Example,
        run_id: str,
        grading: dict[str, Any] | None = None,
    ) -> None:
        """A judged case's family: its seed and, for a wrong case, its variants (which keep the seed's
        grading: augmentation never touches a number, so the case's answer stays the right one)."""
        family = [example, *augment(example, self.plan.augmentation)] if source is Source.SEED else [example]
        breakdown = {
            name: str(value) for name in BREAKDOWN_FIELDS if (value := getattr(verdict, name)) is not None
        }
        response = verdict.raw_prediction.strip() or verdict.prediction or None
        kept = [
            self.add(
                member,
                run_id=run_id,
                response=response,
                breakdown=breakdown,
                question=example.input,
                grading=grading,
            )
            for member in family
        ]
        self.tally.source_cases += any(kept)

    def add_pool(self, db: sqlite3.Connection) -> None:
        plan = self.plan
        if plan.pool_path is None:
            return
        count = pool_count(plan.pool_share, self.tally.seed_rows)
        for row_id, row in choose_pool_rows(
            db, pool_rows(plan.pool_path), count, seed=plan.augmentation.seed
        ):
            example = pool_example(
                row_id, row, run_id="", template=plan.template, language=plan.language, system=plan.system
            )
            breakdown = {name: row[name] for name in BREAKDOWN_FIELDS if isinstance(row.get(name), str)}
            self.add(example, run_id=None, response=None, breakdown=breakdown, question=example.input)


def _wrong_with_output(verdict: Verdict) -> bool:
    return rejected_output(verdict) is not None


def _mixed_in(share: float, seed: int) -> Callable[[Verdict], bool]:
    """Whether a case the model got right is among the ``share`` of them a reinforcement preparation mixes
    in: its id's hash under ``seed``, read as a fraction of 2**64, falls below the share."""

    def wanted(verdict: Verdict) -> bool:
        digest = hashlib.sha256(f"{verdict.case_id}\x1f{seed}".encode()).digest()
        return verdict.passed and int.from_bytes(digest[:8], "big") < share * 2**64

    return wanted


def _passes(spec: PreparationSpec) -> list[tuple[SelectionCriterion, Callable[[Verdict], bool] | None]]:
    """The selections, in the order they claim a case: for preference, first the runs that got it wrong
    with an answer to reject; for reinforcement, the spec's selection (the mistakes) before the correct
    cases mixed in."""
    if spec.method == Method.PREFERENCE:
        return [(spec.selection, _wrong_with_output), (spec.selection, None)]
    share = spec.settings.correct_share
    if spec.method == Method.REINFORCEMENT and share:
        return [(spec.selection, None), (SelectionCriterion.ALL_ITEMS, _mixed_in(share, spec.settings.seed))]
    return [(spec.selection, None)]


def _select(spec: PreparationSpec, runs: Sequence[RunSource], selected: SelectedCases) -> None:
    """Each case's source: the first run in ``run_ids`` that selected it, and for preference the first that
    got it wrong with an answer to reject (a case no run got wrong keeps its first run, to be counted)."""
    by_id = {run.run_id: run for run in runs}
    for criterion, wanted in _passes(spec):
        for run_id in spec.run_ids:
            run = by_id[run_id]
            try:
                with verdict_lines(run.scoring_output) as lines:
                    if lines is None:
                        raise PreparationError(
                            f"run {run_id!r}: its scoring output holds no per-case verdicts "
                            f"({VERDICTS_NAME}); leave the run out or score it again with a scoring program "
                            "that writes them"
                        )
                    selected.add(selections(lines, criterion, wanted=wanted), origin=run_id)
            except ScoringError as exc:
                raise PreparationError(f"run {run_id!r}: {exc}; leave the run out or score it again") from exc


def _grading(lines: CaseLines, plan: _Plan, case_id: str, text: CaseText) -> dict[str, Any] | None:
    """A reinforcement example's grading fields (None for the other methods)."""
    if plan.method is not Method.REINFORCEMENT:
        return None
    try:
        return lines.grading(case_id, text, plan.scoring_template, plan.criteria, plan.judge)
    except ValueError as exc:
        raise PreparationError(
            f"case {case_id!r} in cases.jsonl is not a case its scoring can grade ({exc}); fix the case in "
            "the environment's reference data"
        ) from exc


def _write_lines(path: Path, lines: Iterator[bytes]) -> None:
    with path.open("wb") as stream:
        for line in lines:
            stream.write(line)
            stream.write(b"\n")


def generate(
    spec: PreparationSpec, env: Environment, runs: Sequence[RunSource], out_dir: Path
) -> GenerationReport:
    """Write ``out_dir/examples.jsonl`` and ``out_dir/held_out.jsonl`` for ``spec``; each appears whole."""
    check_spec(spec, env, runs)
    plan = _Plan.resolve(spec, env)
    out_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        root = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=out_dir, prefix=".preparation-")))
        db = stack.enter_context(scratch_db(root / "scratch.sqlite"))
        held_out = HeldOutStore(db)
        held_out_count = held_out.fill(env, plan.shares)
        selected = SelectedCases(db)
        _select(spec, runs, selected)
        selected.join_references(env.case_references())
        case_lines = CaseLines(db)
        if plan.method is Method.REINFORCEMENT and env.cases_file is not None:
            case_lines.fill(read_case_lines(env.cases_file))
        store = OrderedExamples(db)
        builder = _Builder(plan, held_out, store)
        for source, verdict, reference, run_id in selected:
            text = case_text(verdict, reference)
            if text is None:
                builder.tally.dropped[NO_QUESTION] += 1
                continue
            example = seed_example(
                verdict,
                text,
                source=source,
                run_id=run_id,
                template=plan.template,
                language=plan.language,
                system=plan.system,
                default_criteria=plan.all_criteria,
            )
            grading = _grading(case_lines, plan, verdict.case_id, text)
            builder.add_case(source, verdict, example, run_id, grading)
        builder.add_pool(db)
        tally = builder.tally
        if not len(store):
            dropped = "; ".join(f"{count} {reason}" for reason, count in sorted(tally.dropped.items()))
            raise PreparationError(
                f"no example is left to train on ({dropped or 'the runs selected no case'}); widen the "
                "selection or the criteria scope, or add runs that got cases wrong"
            )
        _write_lines(root / EXAMPLES_NAME, (body for _, body in store.ordered_json()))
        _write_lines(root / HELD_OUT_NAME, (case.model_dump_json().encode("utf-8") for case in held_out))
        for name in (EXAMPLES_NAME, HELD_OUT_NAME):
            os.replace(root / name, out_dir / name)
    finetune = env.spec.finetune or Finetune()
    base_model = {run.run_id: run.model for run in runs}[spec.run_ids[0]]
    return GenerationReport(
        example_count=len(store),
        kinds={kind.value: tally.kinds[kind.value] for kind in Kind},
        splits={split.value: tally.splits[split.value] for split in SPLITS},
        source_cases=tally.source_cases,
        held_out_count=held_out_count,
        dropped=dict(sorted(tally.dropped.items())),
        base_model=base_model,
        suggested_hyperparams=dict(finetune.suggested_hyperparams or DEFAULT_HYPERPARAMS),
        state_hash=state_hash(spec, out_dir / EXAMPLES_NAME),
    )


def criteria_scope(spec: PreparationSpec, env: Environment) -> list[str]:
    """The criteria a preparation covers, as coverage reads them: the spec's, or all of the environment's."""
    return list(spec.criteria) or [criterion.id for criterion in env.spec.criteria]


def canonical_spec(spec: PreparationSpec) -> bytes:
    """The spec as the state hash reads it: JSON with sorted keys, no spaces."""
    document: dict[str, Any] = spec.model_dump(mode="json")
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def state_hash(spec: PreparationSpec, examples: Path) -> str:
    """sha256 over a version tag, the canonical spec and the bytes of ``examples``: the preparation state."""
    digest = hashlib.sha256()
    digest.update(STATE_VERSION.encode("utf-8") + b"\n")
    digest.update(canonical_spec(spec) + b"\n")
    with examples.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
