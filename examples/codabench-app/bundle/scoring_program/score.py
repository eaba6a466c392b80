import json

with open("/app/input/ref/reviews.solution", encoding="utf-8") as handle:
    truth = handle.read().split()
with open("/app/input/res/reviews.predict", encoding="utf-8") as handle:
    guess = handle.read().split()
wrong = sum(t != g for t, g in zip(truth, guess, strict=False)) + abs(len(truth) - len(guess))
scores = {
    "accuracy": (len(truth) - wrong) / len(truth),
    "errors": wrong,
    "perfect": wrong == 0,
    "notes": "scored from /app/input",
    "per_label": {label: truth.count(label) for label in sorted(set(truth))},
}
with open("/app/output/scores.json", "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
