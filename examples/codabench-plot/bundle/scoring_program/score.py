import base64
import io
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

input_dir, output_dir = sys.argv[1], sys.argv[2]
truth = pd.read_csv(os.path.join(input_dir, "ref", "solution.csv"))
guess = pd.read_csv(os.path.join(input_dir, "res", "predictions.csv"))
joined = truth.merge(guess, on="id", how="left", suffixes=("", "_predicted"))
joined["right"] = joined["label"] == joined["label_predicted"]
by_category = joined.groupby("category")["right"].mean().sort_index()
figure, axes = plt.subplots(figsize=(5, 3))
axes.bar(by_category.index, by_category.values)
axes.set_ylim(0, 1)
axes.set_ylabel("accuracy")
figure.tight_layout()
picture = io.BytesIO()
figure.savefig(picture, format="png")
figure.savefig(os.path.join(output_dir, "accuracy_by_category.png"))
encoded = base64.b64encode(picture.getvalue()).decode("ascii")
rows = "".join(f"<tr><td>{name}</td><td>{value:.3f}</td></tr>" for name, value in by_category.items())
with open(os.path.join(output_dir, "detailed_results.html"), "w", encoding="utf-8") as handle:
    handle.write(
        "<html><body><h1>Accuracy by category</h1>"
        f'<img alt="accuracy by category" src="data:image/png;base64,{encoded}">'
        f"<table>{rows}</table></body></html>"
    )
scores = {"accuracy": float(joined["right"].mean()), "worst_category": float(by_category.min())}
with open(os.path.join(output_dir, "scores.json"), "w", encoding="utf-8") as handle:
    json.dump(scores, handle)
