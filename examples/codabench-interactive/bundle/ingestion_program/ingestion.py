import os
import sys
import time

sys.path.insert(0, sys.argv[1])
import model

shared = sys.argv[2]

number = 0
while not os.path.exists(os.path.join(shared, "done")):
    question = os.path.join(shared, f"ask-{number}")
    if not os.path.exists(question):
        time.sleep(0.02)
        continue
    with open(question, encoding="utf-8") as handle:
        answer = model.predict(handle.read())
    with open(os.path.join(shared, f"answer-{number}.tmp"), "w", encoding="utf-8") as handle:
        handle.write(answer)
    os.rename(os.path.join(shared, f"answer-{number}.tmp"), os.path.join(shared, f"answer-{number}"))
    number += 1
