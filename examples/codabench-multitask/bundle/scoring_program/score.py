import os
import sys

input_dir, output_dir = sys.argv[1], sys.argv[2]
with open(os.path.join(input_dir, "ref", "task.txt"), encoding="utf-8") as handle:
    name = handle.read().strip()
with open(os.path.join(input_dir, "ref", name + ".solution"), encoding="utf-8") as handle:
    truth = handle.read().split()
with open(os.path.join(input_dir, "res", name + ".predict"), encoding="utf-8") as handle:
    guess = handle.read().split()
correct = sum(t == g for t, g in zip(truth, guess, strict=False))
with open(os.path.join(output_dir, "scores.txt"), "w", encoding="utf-8") as handle:
    handle.write(f"accuracy: {correct / len(truth)}\n")
    handle.write(f"task: {name}\n")
