"""A judge's agreement with people as registration records it on an environment version, and as a judged
run, its report and its dataset's manifest show it beside the scores (see :mod:`benchgen.scoring.calibration`
for how it is measured)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from benchgen.lazy_model import LazyModel
from benchgen.records.bounds import Text

# Below this kappa a judge's agreement with people is called poor (Landis and Koch's "fair" and under).
POOR_KAPPA = 0.4
UNDEFINED_KAPPA = "kappa undefined: judge and people each gave one and the same verdict on every answer"
NO_LABELS = "UNCALIBRATED judge: no human-labelled answers"
STILL_RUNNING = (
    "judge calibration still running: its agreement with people on {answers} human-labelled answers is being "
    "measured"
)


class CriterionAgreement(LazyModel):
    """The judge's agreement with people on one criterion."""

    criterion: str
    n: int = Field(ge=0, description="answers both the judge and the person judged")
    accuracy: float | None = Field(default=None, description="share of those on which they agree")
    kappa: float | None = Field(default=None, description="Cohen's kappa; none when undefined")
    kappa_low: float | None = None
    kappa_high: float | None = None
    unjudged: int = Field(default=0, ge=0, description="answers the judge left unjudged, not counted in n")
    note: Text | None = None

    @property
    def poor(self) -> bool:
        return self.kappa is not None and self.kappa < POOR_KAPPA

    @property
    def warning(self) -> str | None:
        """What a reader is warned of when the judge agrees poorly with people on this criterion."""
        return f"this judge agrees poorly with people on {self.criterion}" if self.poor else None

    def describe(self) -> str:
        """One line: the figures, and when agreement is poor or cannot be measured, that too."""
        unjudged = f", {self.unjudged} unjudged" if self.unjudged else ""
        if self.kappa is None:
            reason = self.note or "no answer was judged"
            return f"Judge agreement with people on {self.criterion}: {reason} ({self.n} answers{unjudged})"
        line = (
            f"Judge agreement with people on {self.criterion}: kappa {self.kappa:.2f} "
            f"[{self.kappa_low:.2f}, {self.kappa_high:.2f}] on {self.n} answers (accuracy "
            f"{self.accuracy:.0%}{unjudged})"
        )
        return f"{line}: {self.warning}" if self.warning else line


class CalibrationStatus(StrEnum):
    MEASURED = "measured"
    RUNNING = "running"  # its human-labelled answers are being judged
    UNCALIBRATED = "uncalibrated"  # the bundle has no human-labelled answers
    FAILED = "failed"  # they could not be judged: ``reason`` says why


class JudgeCalibration(LazyModel):
    """A judge's agreement with people as measured for one environment version: the judge it was measured
    for (connection and model id), and the figures per criterion."""

    connection: str
    model_id: str | None = None
    status: CalibrationStatus = Field(
        description="measured; running (its human-labelled answers are being judged); uncalibrated (no "
        "human-labelled answers); failed (they could not be judged)"
    )
    reason: Text | None = Field(default=None, description="why it is uncalibrated or failed")
    answers: int = Field(default=0, ge=0, description="the labelled answers the judge was asked about")
    criteria: list[CriterionAgreement] = Field(default_factory=list)

    def lines(self) -> list[str]:
        """What is shown beside a judged score: a line per criterion, or why the judge is uncalibrated."""
        if self.status is CalibrationStatus.UNCALIBRATED:
            return [f"UNCALIBRATED judge: {self.reason}" if self.reason else NO_LABELS]
        if self.status is CalibrationStatus.FAILED:
            return [f"UNCALIBRATED judge: calibration failed: {self.reason}"]
        if self.status is CalibrationStatus.RUNNING:
            return [STILL_RUNNING.format(answers=self.answers)]
        return [criterion.describe() for criterion in self.criteria]


class JudgeAgreement(JudgeCalibration):
    """The agreement with people of the judge that gave a run's scores, as the run, its report and its
    dataset's manifest show it beside them."""

    uncalibrated: bool = Field(description="the judge's agreement with people was not measured")
    summary: list[str] = Field(description="a line per criterion, or why the judge is uncalibrated")
    warnings: list[str] = Field(
        default_factory=list, description="each criterion the judge agrees poorly with people on, said so"
    )

    @classmethod
    def of(cls, calibration: JudgeCalibration) -> JudgeAgreement:
        return cls(
            **calibration.model_dump(),
            uncalibrated=calibration.status is not CalibrationStatus.MEASURED,
            summary=calibration.lines(),
            warnings=[c.warning for c in calibration.criteria if c.warning is not None],
        )
