"""A judge's agreement with people: the figures recomputed by hand and from their definition, and the judge
asked about a calibration set as a judging pass asks it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchgen.inference.model import Answer, ModelCallError
from benchgen.inference.pacing import Budget
from benchgen.inference.retry import Backoff
from benchgen.judging import JudgeSettings
from benchgen.records.judge_calibration import UNDEFINED_KAPPA, CalibrationStatus
from benchgen.scoring.calibration import (
    CALIBRATION_LIMIT,
    CalibrationError,
    agreement,
    calibrate,
    read_calibration,
)
from benchgen.scoring.judge import ASKS, JudgeCase
from tests.judged import judgment, labelled

SETTINGS = JudgeSettings(connection="conn-judge", model_id="judge-model")
QUICK = Backoff(attempts=1, base_s=0.0, cap_s=0.0, throttled_s=0.0)


def _pairs(table: dict[tuple[bool, bool], int]) -> list[tuple[bool | None, bool]]:
    return [pair for pair, count in table.items() for _ in range(count)]


def test_a_hand_worked_table_gives_its_kappa_and_interval() -> None:
    # Given 50 answers: both pass 20, judge alone 5, person alone 10, both fail 15
    # po = 35/50 = 0.7; judge passes 0.5, person 0.6; pe = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.2/0.5 = 0.4
    # se = sqrt(0.7*0.3 / (50 * 0.25)) = 0.129615; half-width 1.959964 * se = 0.254041
    pairs = _pairs({(True, True): 20, (True, False): 5, (False, True): 10, (False, False): 15})

    # When its agreement is measured
    found = agreement("correct", pairs)

    # Then the figures are the hand-worked ones
    assert (found.n, found.accuracy, found.kappa) == (50, 0.7, 0.4)
    assert found.kappa_low == pytest.approx(0.146, abs=1e-3)
    assert found.kappa_high == pytest.approx(0.654, abs=1e-3)


@given(st.lists(st.booleans(), min_size=2).filter(lambda labels: len(set(labels)) == 2))
def test_a_judge_that_always_agrees_has_kappa_one(labels: list[bool]) -> None:
    assert agreement("c", [(label, label) for label in labels]).kappa == 1.0


@given(st.lists(st.tuples(st.booleans() | st.none(), st.booleans()), min_size=1))
def test_accuracy_and_counts_match_a_direct_count(pairs: list[tuple[bool | None, bool]]) -> None:
    found = agreement("c", pairs)
    judged = [(judge, person) for judge, person in pairs if judge is not None]
    assert (found.n, found.unjudged) == (len(judged), len(pairs) - len(judged))
    if judged:
        agreed = sum(judge == person for judge, person in judged)
        assert found.accuracy == pytest.approx(agreed / len(judged), abs=1e-4)


def test_kappa_is_undefined_when_everyone_gave_one_verdict() -> None:
    found = agreement("correct", [(True, True)] * 8)
    assert (found.accuracy, found.kappa, found.note) == (1.0, None, UNDEFINED_KAPPA)
    assert UNDEFINED_KAPPA in found.describe()


def test_poor_agreement_is_said_plainly() -> None:
    pairs = _pairs({(True, True): 20, (True, False): 5, (False, True): 10, (False, False): 15})
    assert agreement("correct", pairs).describe() == (
        "Judge agreement with people on correct: kappa 0.40 [0.15, 0.65] on 50 answers (accuracy 70%)"
    )
    weaker = _pairs({(True, True): 10, (True, False): 10, (False, True): 10, (False, False): 10})
    assert agreement("correct", weaker).describe().endswith("this judge agrees poorly with people on correct")


def _write(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


class ScriptedJudge:
    """A judge model that answers each calibration answer as scripted (by the answer's text in the
    prompt): a judgment's scores, or text it cannot be read from."""

    def __init__(self, replies: dict[str, dict[str, int] | str]) -> None:
        self.replies = replies
        self.prompts: list[str] = []

    def complete(self, prompt: str) -> Answer:
        self.prompts.append(prompt)
        answer = next(name for name in self.replies if f"\n{name}\n" in prompt)
        reply = self.replies[answer]
        if isinstance(reply, str):
            return Answer(text=reply, raw=reply)
        text = judgment(reply)
        return Answer(text=text, raw=text)


def test_the_judge_is_measured_on_the_labelled_answers_and_an_unreadable_answer_is_unjudged(
    tmp_path: Path,
) -> None:
    # Given four labelled answers (polite passes at 3 of 1..5) and a judge that agrees on correct but for
    # one answer, and cannot be read about the last
    path = _write(
        tmp_path / "calibration.jsonl",
        [labelled(1, 1, 5), labelled(2, 0, 1), labelled(3, 1, 2), labelled(4, 0, 4)],
    )
    answers = read_calibration(path, JudgeCase, ASKS)
    judge = ScriptedJudge(
        {
            "answer-1": {"correct": 1, "polite": 4},
            "answer-2": {"correct": 0, "polite": 2},
            "answer-3": {"correct": 0, "polite": 3},
            "answer-4": "I think it is fine.",
        }
    )

    # When the judge is calibrated on them
    found = calibrate(answers, ASKS, ASKS, SETTINGS, judge, QUICK, model_id="judge-model")

    # Then each criterion's figures count the three answers judged, and the unreadable one apart
    by_id = {each.criterion: each for each in found.criteria}
    assert found.status is CalibrationStatus.MEASURED
    assert (found.connection, found.model_id, found.answers) == ("conn-judge", "judge-model", 4)
    assert (by_id["correct"].n, by_id["correct"].unjudged, by_id["correct"].accuracy) == (3, 1, 0.6667)
    assert (by_id["polite"].n, by_id["polite"].accuracy) == (3, 0.6667)
    # The unreadable answer was asked about again, told what was wrong
    assert len(judge.prompts) == 5
    assert "could not be read" in judge.prompts[-1]


class Unreachable:
    def complete(self, prompt: str) -> Answer:
        raise ModelCallError("connection refused by 127.0.0.1:9", retryable=False)


def test_a_judge_that_answers_nothing_leaves_the_calibration_failed_with_its_reason(tmp_path: Path) -> None:
    answers = read_calibration(_write(tmp_path / "c.jsonl", [labelled(1, 1, 5)]), JudgeCase, ASKS)

    found = calibrate(answers, ASKS, ASKS, SETTINGS, Unreachable(), QUICK, model_id="judge-model")

    assert found.status is CalibrationStatus.FAILED
    assert found.lines() == [f"UNCALIBRATED judge: calibration failed: {found.reason}"]
    assert "connection refused" in (found.reason or "")


def test_a_label_off_its_scale_is_refused_naming_thelabelled(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", [labelled(1, 1, 5), labelled(2, 1, 9)])

    with pytest.raises(
        CalibrationError, match=r"c.jsonl line 2: the label of 'polite' must be an integer from 1 to 5"
    ):
        read_calibration(path, JudgeCase, ASKS)


def test_a_calibration_set_above_the_limit_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", [labelled(index, 1, 5) for index in range(CALIBRATION_LIMIT + 1)])

    with pytest.raises(CalibrationError, match=f"more than {CALIBRATION_LIMIT} labelled answers"):
        read_calibration(path, JudgeCase, ASKS)


class Crowded:
    """A judge that answers only once ``together`` calls are in flight at once (the calls before wait for
    them, a minute at most), and counts the most that ever were."""

    def __init__(self, together: int) -> None:
        self.barrier = threading.Barrier(together, timeout=60)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.most = 0

    def complete(self, prompt: str) -> Answer:
        with self.lock:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            self.barrier.wait()
        except threading.BrokenBarrierError:
            raise ModelCallError("asked alone", retryable=False) from None
        finally:
            with self.lock:
                self.in_flight -= 1
        return Answer(text=judgment({"correct": 1, "polite": 5}), raw="")


def test_the_judge_is_asked_about_several_answers_at_once_within_its_bound(tmp_path: Path) -> None:
    # Given six labelled answers and a judge whose connection allows three requests in flight
    path = _write(tmp_path / "calibration.jsonl", [labelled(index, 1, 5) for index in range(6)])
    answers = read_calibration(path, JudgeCase, ASKS)
    judge = Crowded(3)

    # When it is calibrated
    found = calibrate(answers, ASKS, ASKS, SETTINGS, judge, QUICK, model_id="judge-model", budget=Budget(3))

    # Then every answer was judged, three at a time and never more
    assert found.status is CalibrationStatus.MEASURED
    assert [(c.n, c.unjudged) for c in found.criteria] == [(6, 0), (6, 0)]
    assert judge.most == 3
