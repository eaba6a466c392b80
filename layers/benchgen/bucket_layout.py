"""The S3 key layout. Each trigger prefix belongs to one function, and no function writes under its own."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from benchgen.errors import BenchGenError
from benchgen.outputs import RunOutput

ENVIRONMENTS = "environments/"
SUBMISSIONS = "submissions/"
PREDICTIONS = "predictions/"
RUNS = "runs/"
# Written by the preparation state machine's functions only; no trigger watches it.
PREPARATIONS = "preparations/"
# Written by the package build only; no trigger watches it.
PACKAGES = "packages/"
# What a training run hands its provider (train and validation files only) and where the provider writes;
# written by the training pipeline's upload step only, no trigger watches it.
TRAINING = "training/"
# Written by the evaluation pipeline's Compare step only; no trigger watches it.
EVALUATIONS = "evaluations/"
# Where a live run's provider batch jobs leave their output (Bedrock writes it; for a kind that hands it
# out through its own API, the poll step copies it here): its manifests start the batch assembly. Written
# by the provider and the poll step only; read by the assembly, which writes under runs/ and submissions/.
BATCH_OUTPUT = "batch-output/"
BATCH_MANIFEST = "manifest.json.out"
# A registered version's cases cut into shards, for runs scored in shards; written by registration only,
# no trigger watches it.
CASE_SHARDS = "case-shards/"
# A version's judge calibration's working files: its labelled answers in shards, the judge's records of them.
CALIBRATIONS = "calibrations/"

# A live run's generated submission.
GENERATED_SUBMISSION = "predictions.json"
# An environment version's bundle, as uploaded: environments/<environment_id>/<version>/bundle.zip.
BUNDLE = "bundle.zip"
# The case ids a run is restricted to (see benchgen.steps.case_scope), beside its outputs.
CASE_SCOPE = "case_scope.json"
# A preparation's coverage report, beside its examples.jsonl and held_out.jsonl.
COVERAGE = "coverage.json"
# A sharded run's inputs beside its prediction output (predictions/<run_id>/shards/: one prediction output
# per shard, and the Map's items list), and its shards' parts under runs/<run_id>/parts/<kind>/.
RUN_SHARDS = "shards/"
PARTS = "parts/"
SCORE_PART = "score"
ARTIFACT_PART = "artifact"
# The file whose upload under predictions/ starts scoring.
_PREDICTION_OUTPUT = RunOutput.PREDICTION_OUTPUT.file_name

_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
# What every name in a key (a run id among them) may be.
NAME_RULE = "1-128 letters, digits, '.', '_' or '-', starting with a letter or digit"
# A run id a submission key can name (every id POST /runs issues is one), as the API's paths take it.
RUN_ID_PATTERN = f"^{_SEGMENT}$"
_NAMES = f"each name {NAME_RULE}"


class ObjectKeyError(BenchGenError):
    """An object landed under a trigger prefix with a key that does not follow the layout."""


@dataclass(frozen=True)
class BundleKey:
    environment_id: str
    version: str

    @property
    def label(self) -> str:
        """``<environment_id>/<version>``: how logs and answers name one version."""
        return f"{self.environment_id}/{self.version}"


@dataclass(frozen=True)
class SubmissionKey:
    run_id: str
    filename: str


def parse_bundle_key(key: str) -> BundleKey:
    match = re.fullmatch(rf"environments/({_SEGMENT})/({_SEGMENT})/bundle\.zip", key)
    if not match:
        raise ObjectKeyError(
            f"{key}: upload a bundle as environments/<environment_id>/<version>/bundle.zip ({_NAMES})"
        )
    return BundleKey(match[1], match[2])


def misplaced_bundle_slot(key: str) -> BundleKey:
    """Where the rejection of a bundle uploaded to a wrongly laid out key is recorded.

    Under the key's first segment, so that it lists with that environment; the version is the rest of the
    key marked ``key:``, which no real version can be (``:`` is not allowed), so it never takes the place
    of the version the author meant to upload.
    """
    rest = key.removeprefix(ENVIRONMENTS)
    return BundleKey(rest.split("/", 1)[0] or rest, f"key:{rest}")


def bundle_slot(key: str) -> BundleKey:
    """The version an upload under environments/ is recorded as: its own, or the misplaced slot."""
    try:
        return parse_bundle_key(key)
    except ObjectKeyError:
        return misplaced_bundle_slot(key)


def parse_submission_key(key: str) -> SubmissionKey:
    match = re.fullmatch(rf"submissions/({_SEGMENT})/({_SEGMENT})", key)
    if not match:
        raise ObjectKeyError(
            f"{key}: upload a submission as submissions/<run_id>/<file name>, with no folder in between "
            f"({_NAMES})"
        )
    return SubmissionKey(match[1], match[2])


def loose_run_id(key: str) -> str | None:
    """The run id a wrongly laid out submission key still names, if its first segment is a usable one."""
    match = re.match(rf"submissions/({_SEGMENT})/", key)
    return match[1] if match else None


def parse_prediction_key(key: str) -> str:
    """The run id of a prediction output key."""
    match = re.fullmatch(rf"{PREDICTIONS}({_SEGMENT})/{re.escape(_PREDICTION_OUTPUT)}", key)
    if not match:
        raise ObjectKeyError(f"{key}: prediction outputs live at {PREDICTIONS}<run_id>/{_PREDICTION_OUTPUT}")
    return match[1]


def bundle_key(environment_id: str, version: str) -> str:
    return f"{ENVIRONMENTS}{environment_id}/{version}/{BUNDLE}"


def submission_key(run_id: str, filename: str) -> str:
    return f"{SUBMISSIONS}{run_id}/{filename}"


def prediction_key(run_id: str, name: str = _PREDICTION_OUTPUT) -> str:
    return f"{PREDICTIONS}{run_id}/{name}"


def run_key(run_id: str, name: str) -> str:
    return f"{RUNS}{run_id}/{name}"


def case_shard_key(environment_id: str, version: str, task: int, shard: int) -> str:
    """``case-shards/<environment_id>/<version>/<task index>/<shard>.jsonl``: a shard's cases.jsonl lines."""
    return f"{CASE_SHARDS}{environment_id}/{version}/{task}/{shard:05d}.jsonl"


def prediction_shard_key(run_id: str, shard: int) -> str:
    """A sharded run's prediction output for one shard's cases (no score trigger: it is no
    prediction_output.zip)."""
    return prediction_key(run_id, f"{RUN_SHARDS}{shard:05d}.zip")


def shard_items_key(run_id: str) -> str:
    """The items list the ShardedScoring Map reads: one ``{"run_id", "shard"}`` object per shard."""
    return prediction_key(run_id, f"{RUN_SHARDS}items.json")


def part_prefix(run_id: str, kind: str, shard: int) -> str:
    """Where one shard's ``score`` or ``artifact`` part folder is uploaded, file by file."""
    return run_key(run_id, f"{PARTS}{kind}/{shard:05d}/")


def part_manifest_key(run_id: str, kind: str, shard: int) -> str:
    """The names of a part's files, written after them: present only for a complete part."""
    return run_key(run_id, f"{PARTS}{kind}/{shard:05d}.json")


def preparation_key(preparation_id: str, name: str) -> str:
    """``preparations/<preparation_id>/<name>``: examples.jsonl, held_out.jsonl, coverage.json."""
    return f"{PREPARATIONS}{preparation_id}/{name}"


def package_key(package_id: str) -> str:
    """``packages/<package_id>.zip``: one export package, the same bytes for the same state and profile."""
    return f"{PACKAGES}{package_id}.zip"


def evaluation_key(evaluation_id: str, name: str) -> str:
    """``evaluations/<evaluation_id>/<name>``: an evaluation's report.json and report.html."""
    return f"{EVALUATIONS}{evaluation_id}/{name}"


def package_execution_name(package_id: str, attempt: int) -> str:
    """The package id for its first build, so a repeated request collides; ``<id>-<n>`` for a retry."""
    return package_id if attempt == 1 else f"{package_id}-{attempt}"


def training_key(training_run_id: str, name: str) -> str:
    """``training/<training_run_id>/<name>``: the uploaded train.jsonl and validation.jsonl."""
    return f"{TRAINING}{training_run_id}/{name}"


def training_output_prefix(training_run_id: str) -> str:
    """Where a Bedrock or SageMaker job writes its output for the training run."""
    return f"{TRAINING}{training_run_id}/output/"


def training_execution_name(training_run_id: str) -> str:
    """The training run's TrainingPipeline execution: one per run, so that a second start collides."""
    return training_run_id[:80]


def execution_name(run_id: str) -> str:
    """Deterministic, so that a second start for the same run collides instead of running twice."""
    return f"run-{run_id}"[:80]


def sharded_execution_name(run_id: str) -> str:
    """The run's ShardedScoring execution: one per run, so that a second start collides."""
    return f"shards-{run_id}"[:80]


def run_id_of(key: str) -> str | None:
    """The run a submission or prediction output belongs to; None for any other key."""
    for parse in (lambda k: parse_submission_key(k).run_id, parse_prediction_key):
        try:
            return parse(key)
        except ObjectKeyError:
            pass
    return None


def correlation_id(key: str) -> str:
    """The id that ties together the logs of every function handling this object and what follows from it.

    The run id for a run's objects (ingest, score and the artifact task all log under it), the
    ``<environment_id>/<version>`` of a bundle, and the key itself for anything off the layout.
    """
    run_id = run_id_of(key)
    if run_id is not None:
        return run_id
    try:
        return parse_bundle_key(key).label
    except ObjectKeyError:
        return key


def inference_items_key(run_id: str) -> str:
    """The items list the InferencePipeline's Distributed Map reads: one object per shard."""
    return run_key(run_id, "inference/items.json")


def judging_key(run_id: str, name: str) -> str:
    """A judging pass's working file: the judge it asks (``judge.json``), a shard's cases and answers
    (:func:`judging_shard_key`), the items list the JudgingPipeline's Distributed Map reads
    (``items.json``)."""
    return run_key(run_id, f"judging/{name}")


def shard_name(kind: str, shard: int) -> str:
    """A judging job's shard file, by name: the ``cases`` (with their answers) it asks about, or the
    ``judgments``."""
    return f"{kind}-{shard:05d}.jsonl"


def judging_shard_key(run_id: str, kind: str, shard: int) -> str:
    """A judging pass's shard file (:func:`shard_name`)."""
    return judging_key(run_id, shard_name(kind, shard))


def judging_batch_input_key(run_id: str, job_name: str) -> str:
    """The records one of a judging pass's batch jobs asks, as the provider reads them."""
    return judging_key(run_id, f"batch/{job_name}/records.jsonl")


def judging_batch_output_prefix(run_id: str, job_name: str) -> str:
    """Where one of a judging pass's batch jobs leaves its output: beside the pass's working files, not
    under the live runs' batch output, whose manifests assemble a live run."""
    return judging_key(run_id, f"batch-output/{job_name}/")


def judging_execution_name(run_id: str) -> str:
    """The run's JudgingPipeline execution: one per run, so that a second start collides."""
    return f"judge-{run_id}"[:80]


def calibration_key(environment_id: str, version: str, name: str) -> str:
    """A version's calibration's working file, as a judging pass's (:func:`judging_key`) for a run."""
    return f"{CALIBRATIONS}{environment_id}/{version}/{name}"


def calibration_execution_name(environment_id: str, version: str) -> str:
    """The version's calibration execution: one per version, so that a second start collides (a digest
    keeps two long labels that share their first characters apart)."""
    label = f"{environment_id}/{version}"
    digest = hashlib.sha256(label.encode("utf-8")).hexdigest()[:16]
    return f"calibrate-{re.sub(r'[^A-Za-z0-9_-]', '-', label)[:50]}-{digest}"


def inference_shard_key(run_id: str, kind: str, shard: int) -> str:
    """A live run's working file: the ``cases`` a shard asks, or the ``answers`` it got."""
    return run_key(run_id, f"inference/{kind}-{shard:05d}.jsonl")


def batch_input_key(run_id: str, job_name: str) -> str:
    """The records one of a live run's batch jobs asks, as the provider reads them."""
    return run_key(run_id, f"batch/{job_name}/records.jsonl")


def batch_output_prefix(run_id: str, job_name: str) -> str:
    """Where one of a live run's batch jobs leaves its output (in a folder of the provider's naming)."""
    return f"{BATCH_OUTPUT}{run_id}/{job_name}/"


@dataclass(frozen=True)
class BatchOutputKey:
    run_id: str
    job_name: str
    folder: str


def parse_batch_manifest_key(key: str) -> BatchOutputKey:
    """The run and job of a batch job's manifest:
    ``batch-output/<run_id>/<job>/<folder>/manifest.json.out``."""
    match = re.fullmatch(
        rf"{BATCH_OUTPUT}({_SEGMENT})/({_SEGMENT})/({_SEGMENT})/{re.escape(BATCH_MANIFEST)}", key
    )
    if not match:
        raise ObjectKeyError(
            f"{key}: a batch job's manifest lands at {BATCH_OUTPUT}<run_id>/<job>/<folder>/{BATCH_MANIFEST}"
        )
    return BatchOutputKey(match[1], match[2], match[3])


def live_execution_name(run_id: str) -> str:
    """The run's InferencePipeline execution: one per run, so that a second start collides."""
    return f"live-{run_id}"[:80]
