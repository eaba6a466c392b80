import os
import sys

sys.path.insert(0, sys.argv[3])
import model

input_dir, output_dir = sys.argv[1], sys.argv[2]

with open(os.path.join(input_dir, "reviews.txt"), encoding="utf-8") as handle:
    reviews = [line.rstrip("\n") for line in handle if line.strip()]
with open(os.path.join(output_dir, "reviews.predict"), "w", encoding="utf-8") as handle:
    for review in reviews:
        handle.write(model.checked(review) + "\n")
        handle.flush()
