"""What each program of a run did, as the run records it, and what that means for the run.

Codabench fails a submission on the scoring program's exit code alone: an ingestion program that fails
(or a prediction step whose program fails) leaves the scoring program to decide, and it reads the
ingestion's exit code in ``input/res/metadata``. So an ingestion program's failure is the run's warning
when the scoring program goes on, and part of the run's error when the scoring program fails too. A time
limit passed fails the run, as Codabench's worker stops the submission there.

One thing fails a run whatever the exit codes say: a program that asked numpy for a name numpy removed
in 1.24 (``np.float`` ...) in a runtime without it, where the bundle's image had it. Such a program
fails or, worse, catches the AttributeError and writes a fallback score; either way its result is not
the one the bundle's image gives.

How each program ended is kept on the run (:mod:`benchgen.records.programs`).
"""

from __future__ import annotations

from benchgen.bundle.runtime import RuntimeChoice, image_numpy
from benchgen.records.programs import ProgramOutcome, stderr_tail
from benchgen.sandbox.job import ProgramResult

INGESTION = "ingestion program"
SCORING = "scoring program"
# The numpy release that removed np.float and its kin; an image whose numpy is older has them.
REMOVED_IN = (1, 24)


def outcome_of(program: str, result: ProgramResult, *, time_limit: int) -> ProgramOutcome:
    """How ``program`` ended, as its run records it."""
    return ProgramOutcome(
        program=program,
        exit_code=result.returncode,
        timed_out=result.timed_out,
        time_limit_s=time_limit,
        stderr_tail=stderr_tail(result.stderr),
    )


def _older_than_removal(version: str) -> bool:
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) < REMOVED_IN


def removed_names_problem(program: str, result: ProgramResult, choice: RuntimeChoice) -> str | None:
    """Why the run must fail when ``program`` asked numpy for names it removed, and the bundle's image
    (whose numpy ``choice`` knows, when it does) had them; None otherwise. An image whose numpy lacks
    them too gives the program the same AttributeError there: nothing differs, nothing to say."""
    if not result.removed_names:
        return None
    image_version = image_numpy(choice.image)
    if image_version is not None and not _older_than_removal(image_version):
        return None
    names = ", ".join(result.removed_names)
    had = (
        f"numpy {image_version} in the bundle's image ({choice.image}) has it"
        if image_version is not None
        else f"numpy before 1.24, as in the bundle's image ({choice.image}) if it is that old, has it"
    )
    return (
        f"the {program} used {names}, which numpy removed in 1.24: the {choice.runtime} runtime has numpy "
        f"{result.numpy_version}, where the program met an AttributeError, while {had}, so its result here "
        "could differ from the image's and the run is stopped rather than completed with it. Run the "
        "bundle in a runtime whose numpy is older than 1.24 (`runtime:` in competition.yaml), or change "
        "the program to the builtin (float, int, bool, object, str, complex) or numpy's own type "
        "(np.float64, np.int_ ...)"
    )
