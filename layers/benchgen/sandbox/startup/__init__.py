"""What every program's Python runs first (see :mod:`benchgen.sandbox.startup.sitecustomize`)."""
