import os
import sys

import numpy as np


def main(input_dir, output_dir, submission_dir):
    with open(os.path.join(input_dir, "task.txt"), encoding="utf-8") as handle:
        name = handle.read().strip()
    if not os.path.exists(os.path.join(submission_dir, "model.py")):
        print("a results submission: its files are the predictions")
        return
    sys.path.insert(0, submission_dir)
    from model import Model

    train = np.loadtxt(os.path.join(input_dir, "train.csv"), delimiter=",", ndmin=2)
    test = np.loadtxt(os.path.join(input_dir, "test.csv"), delimiter=",", ndmin=2)
    model = Model()
    model.fit(train[:, :-1], train[:, -1].astype(int))
    np.savetxt(os.path.join(output_dir, name + ".predict"), model.predict(test), fmt="%d")


main(sys.argv[1], sys.argv[2], sys.argv[3])
