"""The ``benchgen`` command line: one module per command, each exposing ``register(subparsers)``."""
