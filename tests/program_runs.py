"""Writing a small program folder and running it in a scoring layout: what the program-runner tests share."""

from __future__ import annotations

import textwrap
from pathlib import Path

from benchgen.programs import Layout, ProgramResult, run_program

# The whole environment a program sees, wherever it runs: none of it comes from the host.
PROGRAM_VARIABLES = [
    "BENCHGEN_REMOVED_NAMES",
    "HOME",
    "LANG",
    "LC_ALL",
    "PATH",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONIOENCODING",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "TMPDIR",
]


def write_program(
    tmp_path: Path,
    script: str,
    command: str = "python $program/main.py $input $output",
    *,
    meta: str = "metadata.yaml",
) -> Path:
    """A program folder: ``main.py`` holding ``script`` and a metadata file naming ``command``."""
    folder = tmp_path / "program"
    folder.mkdir()
    (folder / "main.py").write_text(textwrap.dedent(script))
    (folder / meta).write_text(f"command: {command}\n")
    return folder


def run_in_layout(program: Path, layout: Layout, *, time_limit: int = 30, **kwargs: object) -> ProgramResult:
    """Run ``program`` with the layout's folders as its placeholders."""
    return run_program(
        program,
        input_dir=layout.input,
        output_dir=layout.output,
        shared_dir=layout.shared,
        ref_dir=layout.ref,
        res_dir=layout.res,
        time_limit=time_limit,
        **kwargs,  # type: ignore[arg-type]
    )
