"""Seeded generator of benchmark environments and of submissions that fail a realistic share of cases.

``generate_environment(name, out_dir, cases=..., seed=...)`` streams any size (ten to a million cases) to
disk; ``generate_examples(out)`` writes the small committed ``examples/`` tree; ``write_bundle_zip`` packs a
bundle folder into a byte-stable zip.
"""

from examplegen.generate import (
    ENVIRONMENTS,
    EXAMPLE_SIZES,
    EXAMPLES_SEED,
    GeneratedEnvironment,
    generate_environment,
    generate_examples,
)
from examplegen.writing import write_bundle_zip

__all__ = [
    "ENVIRONMENTS",
    "EXAMPLES_SEED",
    "EXAMPLE_SIZES",
    "GeneratedEnvironment",
    "generate_environment",
    "generate_examples",
    "write_bundle_zip",
]
