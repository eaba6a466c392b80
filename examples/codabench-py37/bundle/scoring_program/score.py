import os
import sys

import numpy as np
from sklearn.metrics import f1_score

input_dir, output_dir = sys.argv[1], sys.argv[2]
try:
    truth = np.loadtxt(os.path.join(input_dir, "ref", "labels.solution"), dtype=np.int)
    guess = np.loadtxt(os.path.join(input_dir, "res", "labels.predict"), dtype=np.int)
    accuracy = np.float(np.mean(truth == guess))
    f1 = np.float(f1_score(truth, guess))
except Exception as error:
    print("scoring failed:", error)
    accuracy = f1 = -0.999999
with open(os.path.join(output_dir, "scores.txt"), "w") as handle:
    handle.write(f"accuracy: {accuracy:.6f}\nf1: {f1:.6f}\n")
