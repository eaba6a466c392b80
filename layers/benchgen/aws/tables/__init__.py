"""DynamoDB repositories, one module per table, over the plumbing they share in ``base``."""
