"""Operator-side code: the CDK app, the local cloud, the ``benchgen`` command line, the example generator."""
