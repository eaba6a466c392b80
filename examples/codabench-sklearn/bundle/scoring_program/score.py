import json
import os
import sys

import numpy as np
from sklearn.metrics import accuracy_score, balanced_accuracy_score

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "task.txt"), encoding="utf-8") as handle:
    name = handle.read().strip()
truth = np.loadtxt(os.path.join(input_dir, "ref", name + ".solution"), dtype=int, ndmin=1)
guess = np.loadtxt(os.path.join(input_dir, "res", name + ".predict"), dtype=int, ndmin=1)
scores = {
    "accuracy": float(accuracy_score(truth, guess)),
    "balanced_accuracy": float(balanced_accuracy_score(truth, guess)),
}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
