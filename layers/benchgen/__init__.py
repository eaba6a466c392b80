"""BenchGen: benchmark environments that judge a model, turn its mistakes into training data, and evaluate
the model trained on it against held-out cases.

The library is built in layers whose imports point down (docs/architecture.md, "Layers"): the ground
(errors, names, settings), the formats (bundles, cases, verdicts), the records, the domain (scoring, the
finetune artifact, training material, comparisons, the provider kinds), the ports, the steps, the adapters
(``benchgen.aws``, the only code that imports boto3) and the entry points (the API, the handlers, their
wiring, the task inputs).
"""
