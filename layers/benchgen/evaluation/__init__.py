"""Separately authorized evaluation of a trained model against its base, on the package's held-out cases."""
