import json
import os
import shutil
import sys

import numpy as np
import pandas as pd
from sklearn.metrics import mean_absolute_error, mean_squared_error

device = "cuda" if shutil.which("nvidia-smi") else "cpu"
print("scoring on", device)
input_dir, output_dir = sys.argv[1], sys.argv[2]
truth = pd.read_csv(os.path.join(input_dir, "ref", "targets.csv"))
guess = pd.read_csv(os.path.join(input_dir, "res", "predictions.csv"))
joined = truth.merge(guess, on="id", suffixes=("", "_predicted"))
scores = {
    "mae": float(mean_absolute_error(joined["target"], joined["target_predicted"])),
    "rmse": float(np.sqrt(mean_squared_error(joined["target"], joined["target_predicted"]))),
}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
