import fcntl
import json
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
res = os.path.join(input_dir, "res")
# One scorer at a time on these predictions: a lock file beside them.
with open(os.path.join(res, "start.txt.lock"), "w", encoding="utf-8") as lock:
    fcntl.flock(lock, fcntl.LOCK_EX)
    with open(os.path.join(input_dir, "ref", "values.solution"), encoding="utf-8") as handle:
        truth = [float(value) for value in handle.read().split()]
    with open(os.path.join(res, "values.predict"), encoding="utf-8") as handle:
        guess = [float(value) for value in handle.read().split()]
    fcntl.flock(lock, fcntl.LOCK_UN)
errors = [abs(t - g) for t, g in zip(truth, guess, strict=False)]
scores = {"mae": sum(errors) / len(errors), "within_one": sum(error <= 1 for error in errors)}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
