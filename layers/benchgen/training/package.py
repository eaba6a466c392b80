"""Exact packages: one export profile applied to one preparation state, written as a deterministic zip.

``build_package`` reads a preparation's ``examples.jsonl`` and ``held_out.jsonl`` as a stream, renders each
example in the profile's row format into ``train.jsonl``, ``validation.jsonl`` and ``test.jsonl``, and adds
``manifest.json``, ``README.md`` and ``contamination.json`` (the training rows against the question of every
held-out case, read from the environment's cases); a reinforcement profile adds ``grader.py``, the
environment's scoring as the profile's grader. Nothing in it depends on the clock or the
machine, so the same state and profile give the same bytes under the same package id.

It refuses (``PackageRefused``, with a message that says what to change) rather than write a package a
trainer must not use: a training or validation row that comes from a held-out case (by case id) or repeats
one's text (by text hash), a method the profile does not take, or a row count outside the profile's limits.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ConfigDict, ValidationError

from benchgen.errors import BenchGenError
from benchgen.finetune.split import SPLITS, Split
from benchgen.lazy_model import LazyModel
from benchgen.records.judge_calibration import JudgeAgreement, JudgeCalibration
from benchgen.training.contamination import RowText, contamination_report
from benchgen.training.examples import (
    EXAMPLES_NAME,
    HELD_OUT_NAME,
    HeldOutCase,
    Kind,
    PreparedExample,
    text_hash,
)
from benchgen.training.export_profiles import (
    LENGTH_RULE,
    PROFILES,
    PROGRAM_COMMAND,
    Profile,
    approx_tokens,
    profiles_for,
    rewrite_reserved,
)
from benchgen.vocabulary import TEMPLATES, Method
from benchgen.zipwrite import write_zip

PACKAGE_FORMAT = "benchgen-package-1"  # part of every package id: a new layout gets new ids
SPLIT_FILES = {split: f"{split.value}.jsonl" for split in SPLITS}
MANIFEST_NAME = "manifest.json"
README_NAME = "README.md"
CONTAMINATION_NAME = "contamination.json"
GRADER_NAME = "grader.py"
MAX_NAMED = 5  # examples a message or report names before it just counts
_TRAINED = (Split.TRAIN, Split.VALIDATION)
_TESTS_NOTE = (
    "; a code case's answer is judged by running the case's test command with the Python running grader.py, "
    "so what the tests import must be installed there"
)


class PreparationInfo(LazyModel):
    """What a package records about the preparation it was built from."""

    model_config = ConfigDict(frozen=True)

    state_hash: str
    method: Method
    environment_id: str
    environment_version: str
    benchmark: str
    base_model: str
    suggested_hyperparams: dict[str, float | int | str]
    spec: dict[str, Any]


class PackageRefused(BenchGenError):
    """The preparation cannot be packaged with this profile; the message names what to change."""


class PackageReport(LazyModel):
    package_id: str
    profile: str
    sha256: str
    path: Path
    size: int
    files: dict[str, dict[str, Any]]  # file name -> {sha256, rows, bytes}
    rewrites: list[str]  # what the profile rewrote or dropped, one sentence each
    contamination: dict[str, Any]  # the 13-gram report's summary


def package_id(state_hash: str, profile: str) -> str:
    """``pkg-`` and 24 hex digits of sha256 over the package format, the state hash and the profile id."""
    digest = hashlib.sha256(f"{PACKAGE_FORMAT}\n{state_hash}\n{profile}".encode())
    return f"pkg-{digest.hexdigest()[:24]}"


@dataclass
class _File:
    rows: int = 0
    size: int = 0
    digest: Any = field(default_factory=hashlib.sha256)

    def as_dict(self) -> dict[str, Any]:
        return {"sha256": self.digest.hexdigest(), "rows": self.rows, "bytes": self.size}


@dataclass
class _Sample:
    """How often something happened and its first few instances: messages name a few and count all."""

    separator: str = ", "
    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, item: str) -> None:
        self.count += 1
        if len(self.first) < MAX_NAMED:
            self.first.append(item)

    def named(self) -> str:
        more = self.count - len(self.first)
        return self.separator.join(self.first) + (f" and {more} more" if more > 0 else "")


@dataclass
class _Written:
    """What writing the rows found, beside the files themselves."""

    files: dict[Split, _File] = field(default_factory=lambda: {split: _File() for split in SPLITS})
    reserved: Counter[str] = field(default_factory=Counter)
    rewritten: _Sample = field(default_factory=_Sample)  # rows whose text was rewritten
    too_long: _Sample = field(default_factory=_Sample)  # "<example id> (~<tokens> tokens)"
    dropped: set[str] = field(default_factory=set)  # ids of the training rows left out
    repeated: _Sample = field(default_factory=_Sample)  # validation rows repeating a training prompt
    leaks: _Sample = field(default_factory=lambda: _Sample(separator="; "))  # a sentence per example
    without_rejected: _Sample = field(default_factory=_Sample)
    without_grading: _Sample = field(default_factory=_Sample)
    # Graded by the environment's own scoring program, which grader.py does not hold.
    program_graded: _Sample = field(default_factory=_Sample)
    tests_graded: _Sample = field(default_factory=_Sample)  # graded by running the case's tests
    # Graded by a model against the case's rubric, and that model's settings as the first such row names it.
    model_graded: _Sample = field(default_factory=_Sample)
    grading_model: dict[str, Any] | None = None
    longest: int = 0

    def counted(self, profile: Profile) -> int:
        """The rows that count against the profile's row limits."""
        return sum(self.files[split].rows for split in profile.counted)


def choose_profile(profile: str, method: Method) -> Profile:
    """The profile named ``profile`` when it accepts ``method``; else a refusal naming the ones that do."""
    chosen = PROFILES.get(profile)
    if chosen is None:
        raise PackageRefused(f"there is no export profile {profile!r}; choose one of: {', '.join(PROFILES)}")
    if not chosen.accepts(method):
        raise PackageRefused(
            f"profile {profile} does not take {method.value} preparations; for {method.value} choose one of: "
            f"{', '.join(profiles_for(method))}"
        )
    return chosen


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    if not path.is_file():
        raise PackageRefused(f"the preparation has no {path.name}; generate the preparation again")
    with path.open("rb") as stream:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                yield number, line


def _first_problem(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the line"
    return f"{where}: {problem['msg']}"


def _examples(path: Path) -> Iterator[PreparedExample]:
    for number, line in _lines(path):
        try:
            yield PreparedExample.model_validate_json(line)
        except ValidationError as exc:
            raise PackageRefused(
                f"{path.name} line {number} is not a prepared example ({_first_problem(exc)}); "
                "generate the preparation again"
            ) from exc


def _held_out(path: Path) -> list[HeldOutCase]:
    cases = []
    for number, line in _lines(path):
        try:
            cases.append(HeldOutCase.model_validate_json(line))
        except ValidationError as exc:
            raise PackageRefused(
                f"{path.name} line {number} is not a held-out case ({_first_problem(exc)}); "
                "generate the preparation again"
            ) from exc
    return cases


def _leak(example: PreparedExample, ids: set[str], hashes: set[str]) -> str | None:
    """Why a train or validation example must not be trained on, or None when it may."""
    where = f"{example.split.value} example {example.example_id}"
    # A pool row's id names a row of the bundle's pool, not a case: only its text can repeat a held-out case.
    if example.kind is not Kind.POOL and example.source.case_id in ids:
        return f"{where} comes from held-out case {example.source.case_id}"
    if text_hash(example.prompt) in hashes or example.source_text_hash in hashes:
        return f"{where} repeats the text of a held-out case"
    return None


def _write_rows(
    examples: Path, profile: Profile, held_out: list[HeldOutCase], root: Path, method: Method
) -> _Written:
    ids = {case.case_id for case in held_out}
    hashes = {case.text_hash for case in held_out}
    # Eight bytes of each training prompt's text hash, only for profiles that need validation prompts
    # apart from training ones (train rows come first in examples.jsonl).
    train_prompts: set[bytes] = set()
    asked = _asked() if method is Method.REINFORCEMENT else None
    written = _Written()
    handles: dict[Split, IO[bytes]] = {}
    try:
        for split in SPLITS:
            handles[split] = (root / SPLIT_FILES[split]).open("wb")
        for example in _examples(examples):
            if example.split in _TRAINED and (leak := _leak(example, ids, hashes)) is not None:
                written.leaks.add(leak)
                continue
            if method is Method.PREFERENCE and example.rejected is None:
                written.without_rejected.add(example.example_id)
                continue
            if method is Method.REINFORCEMENT:
                if example.grading is None:
                    written.without_grading.add(example.example_id)
                    continue
                template = example.grading.get("template")
                grading_model = example.grading.get(asked) if asked is not None else None
                if template is None:
                    written.program_graded.add(example.example_id)
                elif grading_model is not None:
                    written.model_graded.add(example.example_id)
                    written.grading_model = written.grading_model or grading_model
                elif _runs_tests(template):
                    written.tests_graded.add(example.example_id)
            if profile.distinct_validation:
                prompt = bytes.fromhex(text_hash(example.prompt)[:16])
                if example.split is Split.TRAIN:
                    train_prompts.add(prompt)
                elif example.split is Split.VALIDATION and prompt in train_prompts:
                    written.repeated.add(example.example_id)
                    written.dropped.add(example.example_id)
                    continue
            example, found = rewrite_reserved(example, profile.reserved)
            if found:
                written.reserved.update(found)
                written.rewritten.add(example.example_id)
            tokens = approx_tokens(example)
            if profile.max_row_tokens is not None and tokens > profile.max_row_tokens:
                written.too_long.add(f"{example.example_id} (~{tokens:,} tokens)")
                written.dropped.add(example.example_id)
                continue
            written.longest = max(written.longest, tokens)
            line = (
                json.dumps(profile.render(example), ensure_ascii=False, separators=(",", ":")) + "\n"
            ).encode("utf-8")
            handles[example.split].write(line)
            stats = written.files[example.split]
            stats.rows += 1
            stats.size += len(line)
            stats.digest.update(line)
    finally:
        for handle in handles.values():
            handle.close()
    return written


def _runs_tests(template: str) -> bool:
    """Whether grader.py judges the answers of ``template``'s cases by running each case's tests."""
    # Imported here: only a reinforcement package asks, and the registry loads the scoring library.
    from benchgen.scoring import registry

    return template in TEMPLATES and registry.template(template).runs_tests


def _asked() -> str:
    """The key of a case's grading fields that names the model grading it against its rubric."""
    # Imported here, as _runs_tests imports the registry: only a reinforcement package asks.
    from benchgen.scoring.grader import ASKED

    return ASKED


def _refuse_unsafe(written: _Written) -> None:
    if written.leaks.count:
        raise PackageRefused(
            f"{written.leaks.count} training or validation examples come from the held-out test cases "
            f"({written.leaks.named()}): generate the preparation again so that they are "
            "dropped, and package that state"
        )
    if written.without_rejected.count:
        raise PackageRefused(
            f"{written.without_rejected.count} examples of this preference preparation have no rejected "
            f"answer ({written.without_rejected.named()}): generate the preparation again with method "
            "preference"
        )
    if written.without_grading.count:
        raise PackageRefused(
            f"{written.without_grading.count} examples of this reinforcement preparation have no grading "
            f"fields ({written.without_grading.named()}): generate the preparation again with method "
            "reinforcement"
        )


def _refuse_ungradable(profile: Profile, written: _Written) -> None:
    if written.program_graded.count and not profile.grades_with_programs:
        able = ", ".join(other.id for other in PROFILES.values() if other.grades_with_programs)
        raise PackageRefused(
            f"profile {profile.id} grades with grader.py, which holds the built-in templates' scoring, and "
            "this environment judges its cases with its own scoring program "
            f"({written.program_graded.count} examples, such as {written.program_graded.first[0]}): choose "
            f"{able}, whose grader command scores completions as a run is scored"
        )
    if written.tests_graded.count and not profile.runs_tests:
        able = ", ".join(other.id for other in PROFILES.values() if other.runs_tests)
        raise PackageRefused(
            f"profile {profile.id} runs grader.py on the provider's machines, and this environment's code "
            "template grades an answer by running the case's tests, whose command and dependencies are not "
            f"there ({written.tests_graded.count} examples, such as {written.tests_graded.first[0]}): choose "
            f"{able}, whose grader.py runs each case's test command where the trainer runs"
        )

    if written.model_graded.count and profile.no_grading_model is not None:
        able = ", ".join(
            other.id
            for other in PROFILES.values()
            if other.grader is not None
            and other.no_grading_model is None
            and other.accepts(Method.REINFORCEMENT)
        )
        raise PackageRefused(
            f"profile {profile.id} cannot reward answers its grading model must grade against each case's "
            f"rubric ({written.model_graded.count} examples, such as {written.model_graded.first[0]}): "
            f"{profile.no_grading_model}; choose {able}, whose grader.py asks that model where the "
            "trainer runs"
        )


def _fits(profile: Profile, written: _Written) -> bool:
    count = written.counted(profile)
    return profile.min_rows <= count and (profile.max_rows is None or count <= profile.max_rows)


def _check_rows(profile: Profile, method: Method, written: _Written) -> None:
    if _fits(profile, written):
        return
    count = written.counted(profile)
    what = " and ".join(split.value for split in profile.counted)
    low = count < profile.min_rows
    fitting = [
        other.id
        for other in PROFILES.values()
        if other.accepts(method) and other is not profile and _fits(other, written)
    ]
    instead = f"choose a profile whose limits these rows meet ({', '.join(fitting)})" if fitting else ""
    if low:
        change = (
            "raise the augmentation factor or the pool share, widen the criteria or the case filter, "
            "or draw from more runs"
        )
        limit = f"needs at least {profile.min_rows:,}"
    else:
        change = "lower the augmentation factor or the pool share, or narrow the criteria or the case filter"
        limit = f"takes at most {profile.max_rows:,}"
    rows = "row" if (profile.min_rows if low else profile.max_rows) == 1 else "rows"
    raise PackageRefused(
        f"profile {profile.id} {limit} {what} {rows} and this preparation gives {count:,}: "
        f"{change}{', or ' + instead if instead else ''}"
    )


def _rewrites(profile: Profile, written: _Written) -> list[str]:
    notes = []
    if written.reserved:
        strings = ", ".join(
            f"`{word}` ({written.reserved[word]}x) -> `{profile.reserved[word]}`"
            for word in profile.reserved
            if written.reserved[word]
        )
        notes.append(
            f"rewrote strings the provider reserves in {written.rewritten.count} rows: {strings} "
            f"(rows {written.rewritten.named()})"
        )
    if written.too_long.count:
        notes.append(
            f"dropped {written.too_long.count} rows longer than the profile's {profile.max_row_tokens:,} "
            f"tokens ({LENGTH_RULE}): {written.too_long.named()}"
        )
    if written.repeated.count:
        notes.append(
            f"dropped {written.repeated.count} validation rows whose prompt is also a training prompt, "
            f"which the provider does not allow: {written.repeated.named()}"
        )
    return notes


def _training_texts(examples: Path, dropped: set[str]) -> Iterator[RowText]:
    for example in _examples(examples):
        if example.split in _TRAINED and example.example_id not in dropped:
            texts = [example.system, example.prompt, example.chosen, example.rejected or ""]
            yield RowText(example.example_id, example.split.value, texts)


class HeldOutMismatch(BenchGenError):
    """The environment's cases are not the ones the preparation held out."""


def held_out_questions(
    held_out: list[HeldOutCase], cases: Iterable[tuple[str, str]]
) -> list[tuple[str, str]]:
    """The question of every held-out case, read from the environment's ``(case id, question)`` pairs (the
    first of a repeated id, as the preparation took it), in held-out order.

    Only the questions are compared: a rewording's instruction prefixes and suffixes are shared by every
    case, so they would match every training row that got the same wording. Each question must hash to what
    the preparation recorded, or the report would check other text than the one kept out of training.
    """
    wanted = {case.case_id: case.text_hash for case in held_out}
    found: dict[str, str] = {}
    for case_id, question in cases:
        digest = wanted.get(case_id)
        if digest is None or case_id in found:
            continue
        if text_hash(question) != digest:
            raise HeldOutMismatch(
                f"held-out case {case_id}'s question in the environment is not the one the preparation held "
                "out (its text hash differs): package a preparation of this environment version as it is"
            )
        found[case_id] = question
    missing = [case.case_id for case in held_out if case.case_id not in found]
    if missing:
        raise HeldOutMismatch(
            f"{len(missing)} held-out cases of the preparation are not cases of the environment "
            f"({', '.join(missing[:5])}{' ...' if len(missing) > 5 else ''}): package a preparation of this "
            "environment version"
        )
    return [(case.case_id, found[case.case_id]) for case in held_out]


def _json(value: Any) -> bytes:
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _manifest(
    pid: str,
    info: PreparationInfo,
    profile: Profile,
    files: dict[str, dict[str, Any]],
    held_out: list[HeldOutCase],
    rewrites: list[str],
    contamination: dict[str, Any],
    written: _Written,
    grader: bytes | None,
    program: str | None,
    calibration: JudgeCalibration | None = None,
) -> dict[str, Any]:
    limits = profile.limits()
    limits["rows"]["actual"] = written.counted(profile)
    limits["row_tokens"]["longest"] = written.longest
    manifest: dict[str, Any] = {
        "kind": "benchgen-package",
        "format": PACKAGE_FORMAT,
        "package_id": pid,
        "profile": {
            "id": profile.id,
            "title": profile.title,
            "row_shape": profile.shape,
            "methods": sorted(method.value for method in profile.methods),
        },
        "preparation": {
            "state_hash": info.state_hash,
            "method": info.method.value,
            "benchmark": info.benchmark,
            "environment": {"id": info.environment_id, "version": info.environment_version},
            "base_model": info.base_model,
            "spec": info.spec,
        },
        "files": files,
        "held_out": {
            "count": len(held_out),
            "note": "every case of the environment version in the test bucket; ids and text hashes only",
            "cases": [case.model_dump() for case in held_out],
        },
        "suggested_hyperparams": {
            "values": dict(info.suggested_hyperparams),
            "note": "the benchmark author's suggestions, carried and never applied",
        },
        "rewrites": rewrites,
        "contamination": contamination,
        "limits": limits,
    }
    if grader is not None:
        manifest["grader"] = {
            "file": GRADER_NAME,
            "sha256": hashlib.sha256(grader).hexdigest(),
            "bytes": len(grader),
            "note": "the environment's own scoring as a reward in [0, 1]; imports only the standard library"
            + (_TESTS_NOTE if written.tests_graded.count else ""),
        }
    if grader is not None and written.grading_model is not None:
        manifest["grading_model"] = _grading_model(written.grading_model, calibration)
    elif written.program_graded.count:
        manifest["grader"] = {
            "program": program,
            "command": PROGRAM_COMMAND,
            "predictions": '{"id": <grading.case_id>, "prediction_text": <completion>}',
            "note": "the environment judges its cases by running a program, as a run's are judged: each "
            "case's verdict score is the reward of its completion",
        }
    return manifest


def _grading_model(settings: dict[str, Any], calibration: JudgeCalibration | None) -> dict[str, Any]:
    """What the manifest says of the model that grades answers against their rubric: its settings as the
    environment gives them, the environment variables grader.py reads to reach it, and its calibration."""
    from benchgen.scoring.grader import JUDGE_API_KEY, JUDGE_MODEL, JUDGE_TIMEOUT, JUDGE_URL

    agreement = None if calibration is None else JudgeAgreement.of(calibration)
    return {
        "settings": settings,
        "endpoint": {
            "url": JUDGE_URL,
            "model": JUDGE_MODEL,
            "api_key": JUDGE_API_KEY,
            "timeout_seconds": JUDGE_TIMEOUT,
            "note": "environment variables grader.py reads where it runs, naming an OpenAI-compatible chat "
            "completions endpoint; neither the endpoint nor its key is in this package",
        },
        "calibration": None
        if agreement is None
        else agreement.model_dump(mode="json", exclude={"connection"}),
        "calibration_note": "uncalibrated (the environment version records no agreement of this grading "
        "model with people, so its rewards are not measured against human labels)"
        if agreement is None
        else "; ".join(agreement.summary),
        "no_reward": "an answer the grading model gives no readable judgment of after asking once more, or "
        "whose call timed out or was throttled, has no reward (None; null from the grader command)",
    }


def _grading_model_lines(manifest: dict[str, Any]) -> list[str]:
    """The README's section on the model that grades answers, when one does."""
    if "grading_model" not in manifest:
        return []
    model = manifest["grading_model"]
    endpoint = model["endpoint"]
    settings = model["settings"]
    prompt = "the environment's own" if settings.get("prompt") else "the template's default"
    return [
        "",
        "## Rewards from a grading model (AI feedback)",
        f"A model grades each answer against its case's rubric, as it graded the run: model "
        f"`{settings.get('model_id') or '(set by the endpoint)'}`, sampling "
        f"`{json.dumps(settings.get('sampling', {}), sort_keys=True)}`, {prompt} prompt; the reward is the "
        "weighted mean of its criteria's places on their scales, from 0 to 1.",
        f"- Before training, set `{endpoint['url']}` to the base URL of an OpenAI-compatible "
        "endpoint serving that model (such as `http://localhost:8000/v1`), "
        f"`{endpoint['model']}` if it serves it under another id, `{endpoint['api_key']}` if it "
        f"needs a key, and `{endpoint['timeout_seconds']}` for the seconds a call may take (60 by "
        "default, at most 300). grader.py needs network access to it; neither the endpoint nor its "
        "key is in this package.",
        f"- {model['no_reward'][0].upper()}{model['no_reward'][1:]}: TRL's GRPOTrainer leaves such a "
        "completion out of its group's baseline.",
        f"- Calibration: {model['calibration_note']}.",
    ]


def _use(manifest: dict[str, Any], profile: Profile) -> str:
    """How the files are used: the profile's words, unless the environment's scoring runs a program."""
    grader = manifest.get("grader", {})
    if "program" not in grader:
        return profile.use
    return (
        f"grading runs the environment's scoring program `{grader['program']}`: write the completions as "
        f"predictions.jsonl lines `{grader['predictions']}` and run `{grader['command']}`; each case's "
        "verdict score in the scoring output is the reward of its completion."
    )


def _readme(manifest: dict[str, Any], profile: Profile) -> str:
    prep = manifest["preparation"]
    files = manifest["files"]
    contamination = manifest["contamination"]
    lines = [
        f"# Training package {manifest['package_id']}",
        "",
        f"Training data for **{prep['benchmark']}** (environment `{prep['environment']['id']}` version "
        f"`{prep['environment']['version']}`), base model `{prep['base_model']}`, method "
        f"`{prep['method']}`, in the export profile `{profile.id}`: {profile.title}.",
        "",
        "## How it was made",
        f"A BenchGen preparation (state hash `{prep['state_hash']}`) turned the "
        "benchmark's judged cases into examples: each prompt is a benchmark question, each target the "
        "benchmark's correct reasoning and answer, and in preference rows the rejected answer is the model's "
        "own wrong one. The preparation's settings are in `manifest.json` under `preparation.spec`. The same "
        "state and profile always give this package, byte for byte.",
        *(
            [
                "",
                "Reinforcement rows carry no target: each prompt comes with the fields the benchmark's "
                "scoring needs (`grading`), and the grader rewards an answer as that scoring judged the run, "
                "from 0 to 1.",
            ]
            if "grader" in manifest
            else []
        ),
        "",
        "## Files",
        f"Every row has the shape `{profile.shape}`.",
        "",
        "| file | rows | sha256 |",
        "|---|---|---|",
        *(f"| `{name}` | {meta['rows']} | `{meta['sha256']}` |" for name, meta in files.items()),
        *(
            [f"| `{GRADER_NAME}` | (the grader) | `{manifest['grader']['sha256']}` |"]
            if "sha256" in manifest.get("grader", {})
            else []
        ),
        "",
        f"- Use: {_use(manifest, profile)}",
        "- `manifest.json`: the preparation state, the profile and its limits, every file's sha256 and row "
        "count, the held-out case ids and text hashes, the suggested hyperparameters, what was rewritten.",
        f"- `{CONTAMINATION_NAME}`: the {contamination['n']}-gram overlap between the training rows and the "
        f"held-out cases: {contamination['rows_with_overlap']} of {contamination['rows_checked']} rows "
        f"overlap, over the {contamination['held_out_cases_checked']} of {manifest['held_out']['count']} "
        f"held-out cases whose question is at least {contamination['n']} words long (the other "
        f"{contamination['held_out_cases_too_short']} have no {contamination['n']}-gram to share); every "
        "held-out case is also kept out of training by case id and text hash.",
        *_grading_model_lines(manifest),
        "",
        "## What not to train on",
        "- `test.jsonl` holds the held-out cases' rows. Never train or validate on it: the evaluation of the "
        "trained model runs on these cases, and a model that saw them measures nothing.",
        f"- The {manifest['held_out']['count']} held-out cases listed in `manifest.json` (`held_out.cases`) "
        "must not reach training from any other source either.",
        "",
        "## Rewrites",
        *([f"- {note}" for note in manifest["rewrites"]] or ["- none"]),
        "",
        "## Suggested hyperparameters (suggestions only, never applied)",
        *(f"- `{key}`: {value}" for key, value in manifest["suggested_hyperparams"]["values"].items()),
        "",
    ]
    return "\n".join(lines)


def build_package(
    prep_dir: Path,
    info: PreparationInfo,
    profile: str,
    out_dir: Path,
    *,
    cases: Iterable[tuple[str, str]],
    scoring_program: str | None = None,
    judge_calibration: JudgeCalibration | None = None,
) -> PackageReport:
    """Write ``out_dir/<package_id>.zip`` from the preparation in ``prep_dir``, or refuse with the reason.

    ``cases`` are the environment version's ``(case id, question)`` pairs: the contamination report compares
    the training rows with the question of every held-out case. ``scoring_program`` names the environment's
    own scoring program, the grader a reinforcement package names when no built-in template judges.
    ``judge_calibration``: what registration measured of the environment's judge, which a package whose
    grader asks that judge carries.
    """
    chosen = choose_profile(profile, info.method)
    examples = prep_dir / EXAMPLES_NAME
    held_out = _held_out(prep_dir / HELD_OUT_NAME)
    pid = package_id(info.state_hash, chosen.id)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".package-") as tmp:
        root = Path(tmp)
        written = _write_rows(examples, chosen, held_out, root, info.method)
        _refuse_unsafe(written)
        _refuse_ungradable(chosen, written)
        _check_rows(chosen, info.method, written)
        report = contamination_report(
            _training_texts(examples, written.dropped), held_out_questions(held_out, cases)
        )
        summary = report.summary()
        files = {SPLIT_FILES[split]: written.files[split].as_dict() for split in SPLITS}
        rewrites = _rewrites(chosen, written)
        graded = chosen.grader is not None and not written.program_graded.count
        grader = chosen.grader().encode("utf-8") if graded and chosen.grader is not None else None
        manifest = _manifest(
            pid,
            info,
            chosen,
            files,
            held_out,
            rewrites,
            summary,
            written,
            grader,
            scoring_program,
            judge_calibration,
        )
        members: dict[str, Path | bytes] = {name: root / name for name in files}
        if grader is not None:
            members[GRADER_NAME] = grader
        members[MANIFEST_NAME] = _json(manifest)
        members[README_NAME] = _readme(manifest, chosen).encode("utf-8")
        members[CONTAMINATION_NAME] = _json(report.model_dump(mode="json"))
        target = out_dir / f"{pid}.zip"
        digest = write_zip(target, members)
    return PackageReport(
        package_id=pid,
        profile=chosen.id,
        sha256=digest,
        path=target,
        size=target.stat().st_size,
        files=files,
        rewrites=rewrites,
        contamination=summary,
    )
