import sys

sys.path.insert(0, "/app/ingested_program")
import model

with open("/app/input_data/reviews.txt", encoding="utf-8") as handle:
    reviews = [line.rstrip("\n") for line in handle if line.strip()]
with open("/app/output/reviews.predict", "w", encoding="utf-8") as handle:
    handle.write("".join(model.predict(review) + "\n" for review in reviews))
