import json
import os
import sys

import yaml

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "reviews.solution"), encoding="utf-8") as handle:
    truth = handle.read().split()
with open(os.path.join(input_dir, "res", "metadata"), encoding="utf-8") as handle:
    status = yaml.safe_load(handle)
guess = []
if os.path.exists(os.path.join(input_dir, "res", "reviews.predict")):
    with open(os.path.join(input_dir, "res", "reviews.predict"), encoding="utf-8") as handle:
        guess = handle.read().split()
correct = sum(t == g for t, g in zip(truth, guess, strict=False))
scores = {"accuracy": correct / len(truth), "ingestion_ok": status.get("ingestionExitCode") == 0}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
