"""How a program of a run ended, as the run records it: its exit code, its time limit, the end of its stderr.

Every outcome keeps the end of its program's stderr (the traceback that explains it), bounded, so that
the run record holds every program's and stays small.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import ConfigDict

from benchgen.lazy_model import LazyModel

TAIL_LINES = 20
TAIL_CHARS = 1500
# What a program's error output says when it needed CUDA: a missing driver or library, or a CUDA-only module.
NEEDS_CUDA = re.compile(
    r"lib(?:cuda|cudart|cudnn|nvidia)[\w.-]*|nvidia-smi|NVIDIA driver"
    r"|CUDA driver|no CUDA GPUs|CUDA is not available|Torch not compiled with CUDA enabled|CUDA_ERROR\w*"
    r"|No module named '(?:cupy|pycuda|cudf|cuml|numba\.cuda\.cudadrv|tensorrt)\w*'",
    re.IGNORECASE,
)


def last_lines(text: str, count: int = TAIL_LINES) -> str:
    """The last ``count`` lines of a program's output, for the message that says why it failed."""
    return "\n".join(text.strip().splitlines()[-count:])


def stderr_tail(text: str) -> str:
    """The last ``TAIL_LINES`` lines of ``text``, at most their last ``TAIL_CHARS`` characters."""
    tail = last_lines(text, TAIL_LINES)
    return tail if len(tail) <= TAIL_CHARS else f"[...] {tail[-TAIL_CHARS:]}"


class ProgramOutcome(LazyModel):
    """One program run of a run: which, in which task, how it ended and the end of its stderr."""

    model_config = ConfigDict(frozen=True)

    program: str  # "ingestion program" or "scoring program", as a run's messages name it
    task: str | None = None  # in a phase of several tasks, the task's label
    exit_code: int
    timed_out: bool = False
    time_limit_s: int
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def problem(self, *, where: str = "", stderr: str | None = None) -> str | None:
        """What went wrong, for the run's warning or error; None when nothing did. ``where`` says how
        the program ran when that matters (", run beside the scoring program,"); ``stderr``, the whole
        stderr when at hand, gives its last lines uncut (the run keeps a long reason whole in a file)."""
        if self.ok:
            return None
        if self.timed_out:
            return f"the {self.program}{where} passed the time limit of {self.time_limit_s} s and was stopped"
        said = (self.stderr_tail if stderr is None else last_lines(stderr)) or "(nothing on stderr)"
        failure = f"the {self.program}{where} exited with code {self.exit_code}:\n{said}"
        found = NEEDS_CUDA.search(self.stderr_tail if stderr is None else stderr)
        if found is None:
            return failure
        return (
            f"the {self.program} needs a GPU: its error output names {found.group(0)!r}, and BenchGen runs "
            "programs on the CPU (AWS Lambda has no GPU); a program that falls back to the CPU when it finds "
            f"no CUDA device runs here\n{failure}"
        )


def in_task(label: str, outcomes: Iterable[ProgramOutcome]) -> list[ProgramOutcome]:
    """``outcomes`` as of the task ``label`` of a phase of several tasks."""
    return [outcome.model_copy(update={"task": label}) for outcome in outcomes]
