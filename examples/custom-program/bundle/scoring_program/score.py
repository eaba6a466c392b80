"""Scoring program for the intent classification benchmark.

Usage: python score.py INPUT_DIR OUTPUT_DIR
INPUT_DIR/ref/cases.jsonl holds the gold labels; INPUT_DIR/res/predictions.json (or .jsonl) the predictions.
Writes OUTPUT_DIR/scores.txt (accuracy, macro_f1, coverage) and OUTPUT_DIR/detailed_results.html.
"""

import html
import json
import os
import sys


def read_predictions(res_dir):
    path = os.path.join(res_dir, "predictions.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)["predictions"]
    else:
        with open(os.path.join(res_dir, "predictions.jsonl"), encoding="utf-8") as handle:
            records = [json.loads(line) for line in handle if line.strip()]
    return {str(r["id"]): str(r.get("prediction_text", "")).strip().lower() for r in records}


def main(input_dir, output_dir):
    predicted = read_predictions(os.path.join(input_dir, "res"))
    counts = {}
    total = correct = covered = 0
    rows = []
    with open(os.path.join(input_dir, "ref", "cases.jsonl"), encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            case = json.loads(line)
            gold = case["answer"]
            guess = predicted.get(case["id"], "")
            total += 1
            covered += case["id"] in predicted
            correct += guess == gold
            for label in (gold, guess):
                counts.setdefault(label, [0, 0, 0])
            if guess == gold:
                counts[gold][0] += 1
            else:
                counts[guess][1] += 1
                counts[gold][2] += 1
            if len(rows) < 200:
                rows.append((case["id"], gold, guess))
    f1s = []
    for label, (tp, fp, fn) in counts.items():
        if label:
            f1s.append(2 * tp / (2 * tp + fp + fn) if tp else 0.0)
    scores = {
        "accuracy": correct / total if total else 0.0,
        "macro_f1": sum(f1s) / len(f1s) if f1s else 0.0,
        "coverage": covered / total if total else 0.0,
    }
    os.makedirs(output_dir, exist_ok=True)
    with open(os.path.join(output_dir, "scores.txt"), "w", encoding="utf-8") as handle:
        for key, value in scores.items():
            handle.write(f"{key}: {value:.6f}\n")
    body = "".join(
        f"<tr><td>{html.escape(i)}</td><td>{html.escape(g)}</td><td>{html.escape(p)}</td></tr>"
        for i, g, p in rows
    )
    with open(os.path.join(output_dir, "detailed_results.html"), "w", encoding="utf-8") as handle:
        handle.write(
            "<!doctype html><meta charset=utf-8><title>Intent classification</title>"
            f"<p>accuracy {scores['accuracy']:.4f}</p>"
            f"<table><tr><th>id</th><th>gold</th><th>predicted</th></tr>{body}</table>"
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
