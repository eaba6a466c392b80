import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, sys.argv[1])
from model import Model

shared = sys.argv[2]
while True:
    done = os.path.join(shared, "done")
    if os.path.exists(done):
        os.remove(done)
        break
    training = os.path.join(shared, "training_data")
    if not os.path.exists(training):
        time.sleep(0.02)
        continue
    with open(training, encoding="utf-8") as handle:
        rows = [line.strip().split(",") for line in handle if line.strip()]
    os.remove(training)
    folder = os.path.join(shared, "test_data")
    with open(os.path.join(folder, "rows.csv"), encoding="utf-8") as handle:
        points = [[float(value) for value in line.split(",")] for line in handle if line.strip()]
    shutil.rmtree(folder)
    model = Model()
    model.fit([[float(x), float(y)] for x, y, _ in rows], [label for _, _, label in rows])
    handle, temporary = tempfile.mkstemp(dir=shared)
    with os.fdopen(handle, "w", encoding="utf-8") as answer:
        answer.write("".join(label + "\n" for label in model.predict(points)))
    os.replace(temporary, os.path.join(shared, "predictions"))
