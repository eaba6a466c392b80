"""The math template beside the graders people use instead, on the hand-graded answer corpus.

For every answer in ``tests/data/math_answers.jsonl`` (English and Turkish model answers, each with a
gold value and a careful human grader's verdict) it asks four graders for a verdict and prints, in one
table, how often each agrees with the careful grader and how many answers per second it grades:

- template: :func:`benchgen.scoring.math.judge`, the ``math`` template;
- lm-eval strict-match and flexible-extract: the two filters of lm-evaluation-harness's GSM8K task
  (``lm_eval/tasks/gsm8k/gsm8k.yaml``, lm-eval 0.4.13), re-implemented below from that task file;
- math-verify: Hugging Face's ``math_verify.verify(parse(gold), parse(answer))``, installed for the
  bench only (``pip install -c constraints.txt -e '.[bench]'``, which ``make bench`` runs); when it is
  not installed its row says so.

A second table gives the agreement per class of answer. Speed is CPU time of this process, pinned to
one core where the platform allows, over the corpus repeated; the last line is the template's
extraction alone (the part that reads the answer), which should stay at 50,000 answers/s or more.

    python bench/grader_bench.py
    python bench/grader_bench.py --seconds 3 --json grader-bench.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "math_answers.jsonl"
TASK_FILE = "lm_eval/tasks/gsm8k/gsm8k.yaml (lm-eval 0.4.13)"

Grade = Callable[[str, str], bool]

# lm_eval/tasks/gsm8k/gsm8k.yaml, filter_list: a "regex" filter then "take_first".
STRICT_MATCH = re.compile(r"#### (\-?[0-9\.\,]+)")
FLEXIBLE_EXTRACT = re.compile(r"(-?[$0-9.,]{2,})|(-?[0-9]+)")
# The same file's exact_match metric: these patterns are deleted, in order, from the extracted answer
# and from the target (the whole GSM8K solution, "... #### 72"); ignore_case is true and
# ignore_punctuation false; a response the regex does not match becomes "[invalid]".
IGNORED = [re.compile(pattern) for pattern in (",", r"\$", r"(?s).*#### ", r"\.$")]
FALLBACK = "[invalid]"


def regex_filter(pattern: re.Pattern[str], response: str, group_select: int) -> str:
    """lm-eval's ``regex`` filter: the selected match (first non-empty group of it), stripped."""
    matches = pattern.findall(response)
    if not matches:
        return FALLBACK
    chosen = matches[group_select]
    if isinstance(chosen, tuple):
        chosen = next((group for group in chosen if group), FALLBACK)
    return str(chosen).strip()


def gsm8k_exact_match(extracted: str, target: str) -> bool:
    """lm-eval's ``exact_match`` with the GSM8K task's ``regexes_to_ignore`` and ``ignore_case``."""
    for pattern in IGNORED:
        extracted = pattern.sub("", extracted)
        target = pattern.sub("", target)
    return extracted.lower() == target.lower()


def strict_match(response: str, gold: str) -> bool:
    return gsm8k_exact_match(regex_filter(STRICT_MATCH, response, 0), f"#### {gold}")


def flexible_extract(response: str, gold: str) -> bool:
    return gsm8k_exact_match(regex_filter(FLEXIBLE_EXTRACT, response, -1), f"#### {gold}")


def template(response: str, gold: str) -> bool:
    from benchgen.cases import Case, Prediction
    from benchgen.scoring.math import judge

    return judge(
        Case(id="q", question="?", answer=gold), Prediction(id="q", prediction_text=response), []
    ).passed


def math_verify_grader() -> Grade | None:
    """math-verify's documented use, or None when the package is not installed."""
    try:
        from math_verify import parse, verify
    except ImportError:
        return None
    # It logs every answer it cannot parse; the table is the result.
    logging.getLogger("math_verify").setLevel(logging.CRITICAL)

    def grade(response: str, gold: str) -> bool:
        return bool(verify(parse(gold), parse(response)))

    return grade


def load(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def pin_to_one_core() -> str:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        return "pinned to one core"
    return "not pinned (no sched_setaffinity here)"


def _rate(work: Callable[[], object], count: int, seconds: float) -> float:
    """Answers per CPU second: ``work`` grades ``count`` answers and runs for at least ``seconds``."""
    rounds = 0
    started = time.process_time()
    while True:
        work()
        rounds += 1
        spent = time.process_time() - started
        if spent >= seconds:
            return rounds * count / spent


def measure(
    graders: dict[str, Grade | None], rows: Sequence[dict[str, Any]], seconds: float
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name, grade in graders.items():
        if grade is None:
            results[name] = None
            continue
        passed = [grade(row["response"], row["gold"]) for row in rows]
        agree = [
            ("correct" if ok else "wrong") == row["verdict"] for ok, row in zip(passed, rows, strict=True)
        ]

        def work(grade: Grade = grade) -> None:
            for row in rows:
                grade(row["response"], row["gold"])

        results[name] = {"agree": agree, "rate": _rate(work, len(rows), seconds)}
    return results


def extraction_rate(rows: Sequence[dict[str, Any]], seconds: float) -> float:
    from benchgen.scoring.extract import extract_answer

    responses = [row["response"] for row in rows]

    def work() -> None:
        for response in responses:
            extract_answer(response)

    return _rate(work, len(responses), seconds)


def report(rows: Sequence[dict[str, Any]], results: dict[str, Any], extraction: float, pinned: str) -> str:
    total = len(rows)
    lines = [
        f"{total} answers ({sum(r['language'] == 'en' for r in rows)} English, "
        f"{sum(r['language'] == 'tr' for r in rows)} Turkish) from {CORPUS.name}; "
        f"lm-eval filters from {TASK_FILE}; CPU time, {pinned}",
        "",
        f"{'grader':<20} {'agrees':>9} {'rate':>7} {'answers/s':>11}",
    ]
    for name, result in results.items():
        if result is None:
            lines.append(f"{name:<20} not installed: pip install -c constraints.txt -e '.[bench]'")
            continue
        agreed = sum(result["agree"])
        lines.append(f"{name:<20} {agreed:>4}/{total:<4} {agreed / total:>7.1%} {result['rate']:>11,.0f}")
    classes = sorted({row["class"] for row in rows}, key=lambda name: [r["class"] for r in rows].index(name))
    measured = [name for name, result in results.items() if result is not None]
    lines += ["", f"{'class':<22} " + " ".join(f"{name:>20}" for name in measured)]
    for name in classes:
        indexes = [index for index, row in enumerate(rows) if row["class"] == name]
        cells = [f"{sum(results[g]['agree'][i] for i in indexes)}/{len(indexes)}" for g in measured]
        lines.append(f"{name:<22} " + " ".join(f"{cell:>20}" for cell in cells))
    lines += ["", f"template extraction alone: {extraction:,.0f} answers/s on one core (target >= 50,000)"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=1.0, help="CPU seconds per speed measurement (1)")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    args = parser.parse_args(argv)
    pinned = pin_to_one_core()
    rows = load(CORPUS)
    graders: dict[str, Grade | None] = {
        "template": template,
        "lm-eval strict-match": strict_match,
        "lm-eval flexible": flexible_extract,
        "math-verify": math_verify_grader(),
    }
    results = measure(graders, rows, args.seconds)
    extraction = extraction_rate(rows, args.seconds)
    print(report(rows, results, extraction, pinned))
    if args.json is not None:
        summary = {
            name: None
            if result is None
            else {"agreed": sum(result["agree"]), "answers_per_s": result["rate"]}
            for name, result in results.items()
        }
        document = {"answers": len(rows), "graders": summary, "extraction_answers_per_s": extraction}
        args.json.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
