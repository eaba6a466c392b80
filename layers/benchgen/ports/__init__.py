"""What the steps need from the outside world, as the small interfaces they call: one module per concern.

The adapters in :mod:`benchgen.aws` implement these on AWS and on the local cloud; a unit test hands the
steps the in-memory fakes of ``tests/fakes.py`` instead. Each interface names only the calls the steps
make. The sandbox's interface is not here but in :mod:`benchgen.sandbox.job`: the scoring engine, below
the steps, runs programs through it.
"""
