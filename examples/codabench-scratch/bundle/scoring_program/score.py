import json
import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
# Scratch files beside the program, as many published scorers keep them: its working directory and
# its own folder.
with open(os.path.join(input_dir, "ref", "labels.solution"), encoding="utf-8") as handle:
    truth = handle.read().split()
with open("truth.cache", "w", encoding="utf-8") as handle:
    handle.write(" ".join(truth))
with open(os.path.join(input_dir, "res", "labels.predict"), encoding="utf-8") as handle:
    guess = handle.read().split()
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "guess.cache"), "w", encoding="utf-8") as handle:
    handle.write(" ".join(guess))
with open("truth.cache", encoding="utf-8") as handle:
    cached = handle.read().split()
correct = sum(t == g for t, g in zip(cached, guess, strict=False))
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump({"accuracy": correct / len(cached)}, handle)
