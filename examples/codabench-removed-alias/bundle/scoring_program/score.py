import json
import os
import sys

import numpy as np

input_dir, output_dir = sys.argv[1], sys.argv[2]
truth = np.loadtxt(os.path.join(input_dir, "ref", "values.solution"))
with open(os.path.join(input_dir, "res", "values.predict")) as handle:
    words = handle.read().split()
try:
    guess = np.array(words, dtype=np.float)
    score = float(np.mean(np.abs(guess - truth)))
except AttributeError:
    score = -0.999999  # the scorer's own "could not score" value
with open(os.path.join(output_dir, "scores.json"), "w") as handle:
    json.dump({"mae": score}, handle)
