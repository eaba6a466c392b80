import json
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
# The reference data zip holds reference_data/values.solution: unpacked as it is, the folder stays.
with open(os.path.join(input_dir, "ref", "reference_data", "values.solution"), encoding="utf-8") as handle:
    truth = [float(value) for value in handle.read().split()]
with open(os.path.join(input_dir, "res", "values.predict"), encoding="utf-8") as handle:
    guess = [float(value) for value in handle.read().split()]
errors = [abs(t - g) for t, g in zip(truth, guess, strict=False)]
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump({"mae": sum(errors) / len(errors)}, handle)
