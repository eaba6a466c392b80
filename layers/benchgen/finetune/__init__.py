"""The finetune artifact: training data built from what a model got wrong in a run."""

from benchgen.finetune.artifact import ArtifactReport, build_artifact

__all__ = ["ArtifactReport", "build_artifact"]
