"""A keyword model: positive when the review names a positive word. It misses negations."""

POSITIVE = ["great", "lovely", "moving", "sharp", "delightful"]


def predict(text):
    return "pos" if any(word in text for word in POSITIVE) else "neg"


def checked(text):
    if " not " in text:
        raise ValueError(f"cannot read a negation: {text!r}")
    return predict(text)
