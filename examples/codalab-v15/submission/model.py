"""Prime or composite: every odd number is taken for a prime (9, 15, 21 ... are not)."""


def predict(number):
    return "prime" if number == 2 or number % 2 == 1 else "composite"
