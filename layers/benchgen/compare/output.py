"""Writing a comparison: ``comparison.json`` (every list in full) and ``comparison.html`` beside it."""

from __future__ import annotations

import os
from pathlib import Path

from benchgen.compare.html import render_comparison
from benchgen.compare.report import HTML_NAME, JSON_NAME, Comparison


def write_comparison(comparison: Comparison, out_dir: Path, *, table_limit: int = 200) -> tuple[Path, Path]:
    """Write both files into ``out_dir``, each whole or not at all; return their paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (
        (JSON_NAME, comparison.model_dump_json(indent=1) + "\n"),
        (HTML_NAME, render_comparison(comparison, table_limit=table_limit)),
    ):
        target = out_dir / name
        partial = target.with_name(target.name + ".part")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
        written.append(target)
    return written[0], written[1]
