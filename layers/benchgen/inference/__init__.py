"""Live-model inference: asking a model each case's question and keeping what it answered."""
