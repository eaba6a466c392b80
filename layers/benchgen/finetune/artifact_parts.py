"""One part of a finetune artifact: the examples of some verdicts, sorted and parked in a folder.

A whole run is one part; a run scored in shards has one part per shard, and ``artifact.finish_artifact``
merges them. A part folder holds only flat files: ``part.json`` (its tally and run files) and the run
files of ``spool`` (each split sorted by example id, ties in the order the examples were made).

The per-case loop carries msgspec records, not pydantic models, encodes each example's texts once (its
``formats.pieces``), and joins verdicts to ``cases.jsonl`` by walking both in order (a run's verdicts
follow its cases); verdicts out of that order, and cases whose ids may repeat, use an on-disk index.
Memory holds the spool's budget and the ids of the selected cases (the first verdict of a case wins).
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from pathlib import Path

import msgspec

from benchgen.cases import CaseText, case_references, decode_case, read_case_lines
from benchgen.environment import Environment
from benchgen.errors import ScoringError
from benchgen.finetune.augment import AugmentSettings, variants
from benchgen.finetune.formats import FORMATS, family_pieces, sizes
from benchgen.finetune.seed import (
    Source,
    case_text,
    example_id,
    rejected_output,
    select,
    short_reasoning,
    target_template,
    write_target,
)
from benchgen.finetune.split import SPLITS, split_for
from benchgen.finetune.spool import Run, SortedSpool
from benchgen.finetune.store import scratch_db
from benchgen.finetune.structs import ExampleRecord, SummaryRecord
from benchgen.verdicts import decode_verdict, read_verdicts

TALLY_NAME = "part.json"
RUN_PREFIX = "examples-"


class PartTally(msgspec.Struct, kw_only=True):
    """What a part holds: its runs, rows per source layer, cases used or skipped, and per format the
    rows and bytes of its lines (so the artifact knows each data file's size before writing it). Its
    examples are parked as ``formats.pieces``."""

    runs: list[Run] = []
    layers: dict[str, int] = {}
    source_cases: int = 0
    skipped_cases: int = 0  # selected, but neither the reference nor the verdict holds the question
    rows: dict[str, int] = {}
    bytes: dict[str, int] = {}


class CaseTexts:
    """The reference text of cases by id, found by walking ``cases.jsonl`` alongside the verdicts.

    Walking finds the first record of an id only where ids are unique, which registration checks for the
    cases a built-in template scores (``unique``); other cases are looked up in the index from the start.
    """

    def __init__(self, path: Path | None, stack: ExitStack, *, unique: bool) -> None:
        self._path = path
        self._stack = stack
        self._ahead: Iterator[tuple[str, bytes]] | None = None if path is None else read_case_lines(path)
        self._index: sqlite3.Connection | None = None
        if path is not None and not unique:
            self._index = self._build_index(path)

    def find(self, case_id: str) -> CaseText | None:
        if self._path is None:
            return None  # a custom scoring program may judge without cases.jsonl: the verdicts carry the text
        if self._index is None:
            for found, line in self._ahead or ():
                if found == case_id:
                    record = decode_case(line)
                    assert record is not None  # the line was read as an object with this id
                    return record.text()
            self._index = self._build_index(self._path)
        row = self._index.execute(
            "SELECT question, answer, solution FROM reference WHERE case_id = ?", (case_id,)
        ).fetchone()
        return None if row is None else CaseText(*row)

    def _build_index(self, path: Path) -> sqlite3.Connection:
        """Every case on disk (the first record of an id wins), for verdicts that do not follow the cases."""
        folder = Path(self._stack.enter_context(tempfile.TemporaryDirectory(prefix="benchgen-cases-")))
        db = self._stack.enter_context(scratch_db(folder / "cases.sqlite"))
        db.execute(
            "CREATE TABLE reference "
            "(case_id TEXT PRIMARY KEY, question TEXT NOT NULL, answer TEXT NOT NULL, solution TEXT)"
        )
        db.executemany(
            "INSERT OR IGNORE INTO reference VALUES (?, ?, ?, ?)",
            case_references(path),
        )
        db.commit()
        return db


def collect(
    env: Environment, lines: Iterable[bytes], cases: Path | None, part_dir: Path, *, run_id: str
) -> PartTally:
    """Park the examples of the selected verdicts among ``lines`` in ``part_dir``; its tally."""
    part_dir.mkdir(parents=True, exist_ok=True)
    tally = PartTally()
    finetune = env.spec.finetune
    spool = SortedSpool(part_dir, RUN_PREFIX)
    if finetune is not None:
        layers: Counter[str] = Counter()
        examples = preferences = 0  # every example has a row in every format but preference
        messages_bytes = preference_bytes = prompt_completion_bytes = rows_bytes = 0
        criterion = finetune.selection_criterion
        settings = AugmentSettings.resolve(finetune.augmentation, finetune.language)
        language = finetune.language
        template = target_template(finetune.target_template, language)
        system = finetune.system_prompt
        default_criteria = [criterion.id for criterion in env.spec.criteria]
        position = {split: number for number, split in enumerate(SPLITS)}
        seen: set[str] = set()  # the first selected verdict of a case wins
        with ExitStack() as stack:
            texts = CaseTexts(cases, stack, unique=env.template is not None)
            for verdict, _ in read_verdicts(lines, decode_verdict):
                source = select(verdict, criterion)
                case_id = verdict.case_id
                if source is None or case_id in seen:
                    continue
                seen.add(case_id)
                text = case_text(verdict, texts.find(case_id))
                if text is None:
                    tally.skipped_cases += 1
                    continue
                tally.source_cases += 1
                seed = ExampleRecord(
                    example_id=example_id(case_id, 0),
                    case_id=case_id,
                    run_id=run_id,
                    source=source,
                    input=text.question,
                    target=write_target(
                        template, reasoning=short_reasoning(text.solution, language), answer=text.answer
                    ),
                    system=system,
                    rejected=rejected_output(verdict),
                    verdict=SummaryRecord(verdict.passed, verdict.answered, verdict.prediction),
                    criteria=[result.id for result in verdict.criteria] or list(default_criteria),
                )
                split = split_for(case_id)
                augmented = (
                    variants(case_id, seed.input, seed.system, settings) if source is Source.SEED else []
                )
                layers[source.value] += 1
                if augmented:
                    layers[Source.AUGMENTED.value] += len(augmented)
                family = family_pieces(seed, augmented)
                # Each member's key is its example id (``seed.example_id``), as UTF-8.
                key = case_id.encode("utf-8")
                keys = [b"%s~%02d" % (key, variant) for variant in range(len(family))]
                spool.add_all(position[split], zip(keys, family, strict=True))
                rows, size = sizes(family, split)
                examples += rows[0]
                preferences += rows[1]
                messages_bytes += size[0]
                preference_bytes += size[1]
                prompt_completion_bytes += size[2]
                rows_bytes += size[3]
        tally.layers = dict(layers)
        tally.rows = dict(zip(FORMATS, (examples, preferences, examples, examples), strict=True))
        tally.bytes = dict(
            zip(
                FORMATS,
                (messages_bytes, preference_bytes, prompt_completion_bytes, rows_bytes),
                strict=True,
            )
        )
    tally.runs = spool.close()
    (part_dir / TALLY_NAME).write_bytes(msgspec.json.encode(tally))
    return tally


def collect_part(
    env: Environment, verdicts: Path, cases: Path | None, part_dir: Path, *, run_id: str
) -> None:
    """Park in ``part_dir`` the examples of the selected cases among ``verdicts`` (``verdicts.jsonl``
    lines), with their text from ``cases`` (``cases.jsonl`` lines; None: the verdicts carry the text)."""
    with verdicts.open("rb") as lines:
        collect(env, lines, cases, part_dir, run_id=run_id)


def read_tally(part_dir: Path) -> PartTally:
    """The tally of a collected part; a ScoringError when the folder holds none."""
    path = part_dir / TALLY_NAME
    try:
        return msgspec.json.decode(path.read_bytes(), type=PartTally)
    except (OSError, msgspec.DecodeError) as exc:
        raise ScoringError(
            f"{path} is not the tally of a collected artifact part ({exc}); collect the part again"
        ) from exc
