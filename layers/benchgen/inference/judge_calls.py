"""Asking a judge model about one case: the one way the judging pass, calibration, pairwise judging and the
AI-feedback reward ask a judge (:mod:`benchgen.judging`)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from benchgen.inference.model import Model
from benchgen.inference.pacing import Pacer
from benchgen.inference.retry import Backoff, ask
from benchgen.judging import JUDGE_ATTEMPTS, JudgeAttempt, JudgeRecord

T = TypeVar("T")


def judge_one(
    case_id: str,
    prompt: Callable[[str | None], str],
    problem: Callable[[str], str | None],
    model: Model,
    backoff: Backoff,
    *,
    pacer: Pacer | None = None,
    deadline: float | None = None,
    first: JudgeAttempt | None = None,
) -> JudgeRecord:
    """Ask the judge ``model`` about one case: ``prompt(None)`` first, and when ``problem`` finds its answer
    unreadable, ``prompt(problem)`` once more. Each call retries as a live run's calls do (``backoff``,
    ``pacer``, ``deadline``); a call that gives no answer ends the record with its ``error``. ``first``:
    the judge's first answer, when it was asked already (through its provider's batch inference)."""
    attempts: list[JudgeAttempt] = [first] if first else []
    said: str | None = first.problem if first else None
    if first is not None and said is None:
        return JudgeRecord(id=case_id, attempts=attempts)
    for _ in range(JUDGE_ATTEMPTS - len(attempts)):
        text = prompt(said)
        outcome = ask(functools.partial(model.complete, text), backoff, pacer=pacer, deadline=deadline)
        if outcome.answer is None:
            return JudgeRecord(
                id=case_id, attempts=attempts, error=outcome.error or "the judge gave no answer"
            )
        answer = outcome.answer
        said = problem(answer.text)
        attempts.append(
            JudgeAttempt(
                text=answer.text,
                problem=said,
                input_tokens=answer.input_tokens,
                output_tokens=answer.output_tokens,
            )
        )
        if said is None:
            break
    return JudgeRecord(id=case_id, attempts=attempts)


def judge_each(items: Sequence[T], judge: Callable[[T], JudgeRecord], in_flight: int) -> list[JudgeRecord]:
    """``judge(item)`` of each of ``items``, in their order, up to ``in_flight`` of them asked at once (a
    judging pass's shard, a calibration set)."""
    with ThreadPoolExecutor(max_workers=max(1, in_flight), thread_name_prefix="judging") as pool:
        return list(pool.map(judge, items))
