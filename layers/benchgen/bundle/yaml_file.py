"""Reading a bundle's YAML file, bounded in size and in aliases, with the line and column of a mistake.

Apart from the spec's reading (:mod:`benchgen.bundle.load`) so that PyYAML is imported by the functions that
read a bundle, not by every function that imports the spec's reading for its other names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from benchgen.errors import BundleError, too_deep

MAX_YAML_BYTES = 1024 * 1024
# Aliases let a few lines of YAML stand for an exponentially large document; real bundles need few.
MAX_YAML_ALIASES = 50


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that refuses documents built from too many aliases."""

    aliases_seen = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self.aliases_seen += 1
            if self.aliases_seen > MAX_YAML_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_YAML_ALIASES} aliases (*name); write the values out")
        return super().compose_node(parent, index)


def read_yaml(path: Path, *, file: str | None = None) -> object:
    """The parsed content of a YAML file, or a BundleError naming the line and column of the mistake."""
    label = file or path.name
    if path.stat().st_size > MAX_YAML_BYTES:
        raise BundleError(label, f"is larger than {MAX_YAML_BYTES // 1024} KiB; keep data out of it")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BundleError(label, f"is not UTF-8 text (byte {exc.start}); save it as UTF-8") from exc
    try:
        return yaml.load(text, Loader=_BoundedLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "syntax error"
        raise BundleError(
            label, f"is not valid YAML{where}: {problem}; check the indentation and quoting there"
        ) from exc
    except yaml.YAMLError as exc:
        raise BundleError(label, f"is not valid YAML: {exc}") from exc
    except RecursionError:
        raise BundleError(label, too_deep()) from None
