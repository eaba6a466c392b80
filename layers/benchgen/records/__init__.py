"""Domain records kept in DynamoDB, one module per resource: environment versions, runs, datasets,
preparations, provider connections, packages, training runs and evaluations.

Every text, list and map a record keeps is bounded, once, by the types of :mod:`benchgen.records.bounds`.
"""
