"""A run's outputs, each defined once: its id, the name of its file, and the label people read.

The engine writes each output under its file name, the pipeline records it in ``run.files`` under its id,
and only the API, where a person reads the run, shows its label.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class RunOutput(StrEnum):
    """A file a run can have, in the order people read them."""

    SUBMISSION = "submission"
    PREDICTION_OUTPUT = "prediction_output"
    SCORING_OUTPUT = "scoring_output"
    DETAILED_HTML = "detailed_results_html"
    DETAILED_JSON = "detailed_results_json"
    FINETUNE_ARTIFACT = "finetune_artifact"
    SCORES = "scores"
    SCORING_LOG = "scoring_log"
    INGEST_LOG = "ingest_log"
    FAILURE_LOG = "failure_log"
    INFERENCE_LOG = "inference_log"

    @property
    def file_name(self) -> str:
        """The output's file name, under the run's folder (``runs/<run_id>/``, or beside its predictions)."""
        name = _DESCRIPTIONS[self].file_name
        if name is None:
            raise ValueError(f"the {self.label} keeps the name it was uploaded with: read it from the run")
        return name

    @property
    def label(self) -> str:
        return _DESCRIPTIONS[self].label

    def path_in(self, folder: Path) -> Path:
        """Where the engine writes this output in ``folder``."""
        return folder / self.file_name


@dataclass(frozen=True)
class _Description:
    file_name: str | None  # None: the uploader names the file
    label: str


_DESCRIPTIONS = {
    RunOutput.SUBMISSION: _Description(None, "Submission File"),
    RunOutput.PREDICTION_OUTPUT: _Description("prediction_output.zip", "Prediction Output"),
    RunOutput.SCORING_OUTPUT: _Description("scoring_output.zip", "Scoring Output"),
    RunOutput.DETAILED_HTML: _Description("detailed_results.html", "Detailed Results"),
    RunOutput.DETAILED_JSON: _Description("detailed_results.json", "Detailed Results (JSON)"),
    RunOutput.FINETUNE_ARTIFACT: _Description("finetune_artifact.zip", "Finetune Artifact"),
    RunOutput.SCORES: _Description("scores.json", "Scores"),
    # Kept beside the outputs, so that a failed run still shows why.
    RunOutput.SCORING_LOG: _Description("logs/scoring.log", "Scoring Log"),
    # Whole texts the run record shows cut short (benchgen.records.bounds), each beside its step's outputs.
    RunOutput.INGEST_LOG: _Description("ingest.log", "Ingest Log"),
    RunOutput.FAILURE_LOG: _Description("logs/failure.log", "Failure Log"),
    # What a live run's model answered for each case, raw, with its latency.
    RunOutput.INFERENCE_LOG: _Description("inference_log.jsonl", "Inference Log"),
}


def output_for_label(label: str) -> RunOutput | None:
    """The output a label names, for run records stored when ``run.files`` was keyed by labels."""
    return _BY_LABEL.get(label)


_BY_LABEL = {description.label: output for output, description in _DESCRIPTIONS.items()}
