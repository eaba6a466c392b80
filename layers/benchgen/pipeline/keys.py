"""The S3 key layout. Each trigger prefix belongs to one function, and no function writes under its own."""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchgen.errors import BenchGenError

ENVIRONMENTS = "environments/"
SUBMISSIONS = "submissions/"
PREDICTIONS = "predictions/"
RUNS = "runs/"

PREDICTION_OUTPUT = "prediction_output.zip"
SCORES = "scores.json"
SCORING_OUTPUT = "scoring_output.zip"
DETAILED_HTML = "detailed_results.html"
DETAILED_JSON = "detailed_results.json"
FINETUNE_ARTIFACT = "finetune_artifact.zip"
SCORING_LOG = "logs/scoring.log"

# File labels as the run shows them, in the order a reader expects.
RUN_FILE_LABELS = {
    "submission": "Submission File",
    PREDICTION_OUTPUT: "Prediction Output",
    SCORING_OUTPUT: "Scoring Output",
    DETAILED_HTML: "Detailed Results",
    DETAILED_JSON: "Detailed Results (JSON)",
    FINETUNE_ARTIFACT: "Finetune Artifact",
    SCORES: "Scores",
    SCORING_LOG: "Scoring Log",
}

_SEGMENT = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"


class ObjectKeyError(BenchGenError):
    """An object landed under a trigger prefix with a key that does not follow the layout."""


@dataclass(frozen=True)
class BundleKey:
    environment_id: str
    version: str


@dataclass(frozen=True)
class SubmissionKey:
    run_id: str
    filename: str


def parse_bundle_key(key: str) -> BundleKey:
    match = re.fullmatch(rf"environments/({_SEGMENT})/({_SEGMENT})/bundle\.zip", key)
    if not match:
        raise ObjectKeyError(f"{key}: upload a bundle as environments/<environment_id>/<version>/bundle.zip")
    return BundleKey(match[1], match[2])


def parse_submission_key(key: str) -> SubmissionKey:
    match = re.fullmatch(rf"submissions/({_SEGMENT})/({_SEGMENT})", key)
    if not match:
        raise ObjectKeyError(f"{key}: upload a submission as submissions/<run_id>/<file name>")
    return SubmissionKey(match[1], match[2])


def parse_prediction_key(key: str) -> str:
    """The run id of a prediction output key."""
    match = re.fullmatch(rf"predictions/({_SEGMENT})/prediction_output\.zip", key)
    if not match:
        raise ObjectKeyError(f"{key}: prediction outputs live at predictions/<run_id>/prediction_output.zip")
    return match[1]


def bundle_key(environment_id: str, version: str) -> str:
    return f"{ENVIRONMENTS}{environment_id}/{version}/bundle.zip"


def submission_key(run_id: str, filename: str) -> str:
    return f"{SUBMISSIONS}{run_id}/{filename}"


def prediction_key(run_id: str) -> str:
    return f"{PREDICTIONS}{run_id}/{PREDICTION_OUTPUT}"


def run_key(run_id: str, name: str) -> str:
    return f"{RUNS}{run_id}/{name}"


def execution_name(run_id: str) -> str:
    """Deterministic, so that a second start for the same run collides instead of running twice."""
    return f"run-{run_id}"[:80]


def correlation_id(key: str) -> str:
    """The id that ties together the logs of every function handling this object and what follows from it.

    The run id for a run's objects (ingest, score and the artifact task all log under it), the
    ``<environment_id>/<version>`` of a bundle, and the key itself for anything off the layout.
    """
    for parse in (lambda k: parse_submission_key(k).run_id, parse_prediction_key):
        try:
            return parse(key)
        except ObjectKeyError:
            pass
    try:
        bundle = parse_bundle_key(key)
    except ObjectKeyError:
        return key
    return f"{bundle.environment_id}/{bundle.version}"
