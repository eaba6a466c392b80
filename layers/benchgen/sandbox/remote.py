"""Programs run in the sandbox function: the job travels as one archive, through presigned URLs only.

The calling side stages the job's folders, zips them and hands them to an invoker; the sandbox side
(``serve``) fetches the archive, runs the job with the same runner as a laptop does, and uploads what
the program may return. Neither URL reaches the program: it sees its folders, nothing more.
"""

from __future__ import annotations

import shutil
import tempfile
import urllib.request
from pathlib import Path
from typing import Any, Protocol

from pydantic import ConfigDict

from benchgen.bundle.archive import Budget, extract_zip
from benchgen.lazy_model import LazyModel
from benchgen.sandbox.job import ProgramJob, ProgramResult, StagedJob
from benchgen.sandbox.local import run_staged
from benchgen.sandbox.runner import become_subreaper, kill_descendants
from benchgen.sandbox.stage import HOME, copy_back, stage
from benchgen.zipwrite import zip_folder

TRANSFER_TIMEOUT_S = 120
# The full result travels in the outputs archive: a synchronous answer holds at most 6 MB, and the output
# tails (up to a MiB each, every control character six bytes once escaped in JSON) would not fit.
RESULT_NAME = "result.json"
_CHUNK = 1 << 20


class SandboxRequest(LazyModel):
    """What the sandbox function receives."""

    model_config = ConfigDict(frozen=True)

    job_url: str
    outputs_url: str
    job: StagedJob


class Invoker(Protocol):
    def invoke(self, archive: Path, job: dict[str, Any], outputs: Path) -> dict[str, Any]: ...


class RemoteSandbox:
    """Runs each job in the sandbox function, then copies back what the program may return."""

    def __init__(self, invoker: Invoker) -> None:
        self.invoker = invoker

    def run(self, job: ProgramJob) -> ProgramResult:
        with tempfile.TemporaryDirectory(prefix="sandbox-") as scratch:
            work = Path(scratch)
            staged = stage(job, work / "root")
            zip_folder(work / "root", work / "job.zip")
            self.invoker.invoke(work / "job.zip", staged.model_dump(mode="json"), work / "outputs.zip")
            returned = work / "returned"
            extract_zip(work / "outputs.zip", returned, label="the sandbox outputs", budget=Budget())
            for name in staged.collect:
                copy_back(returned / name, job.folders[name])
            return ProgramResult.model_validate_json((returned / RESULT_NAME).read_bytes())


def _url(url: str) -> str:
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"a presigned URL must be http(s), not {url[:16]!r}")
    return url


def _fetch(url: str, target: Path) -> None:
    with (
        urllib.request.urlopen(_url(url), timeout=TRANSFER_TIMEOUT_S) as response,  # noqa: S310 - checked
        target.open("wb") as sink,
    ):
        shutil.copyfileobj(response, sink, _CHUNK)


def _send(url: str, source: Path) -> None:
    with source.open("rb") as body:
        request = urllib.request.Request(_url(url), data=body, method="PUT")  # noqa: S310 - checked
        request.add_header("Content-Length", str(source.stat().st_size))
        request.add_header("Content-Type", "application/zip")
        with urllib.request.urlopen(request, timeout=TRANSFER_TIMEOUT_S) as response:  # noqa: S310
            response.read()


def serve(request: SandboxRequest, scratch: Path) -> ProgramResult:
    """Fetch the job, run it, upload what the program may return; answer the program's result."""
    job = request.job
    _fetch(request.job_url, scratch / "job.zip")
    root = scratch / "root"
    extract_zip(scratch / "job.zip", root, label="the sandbox job", budget=Budget())
    # A zip keeps no empty folder: the program still gets every one of its folders.
    for place in [*job.folders.values(), HOME]:
        (root / place).mkdir(parents=True, exist_ok=True)
    result = run_staged(job, root)
    returned = scratch / "returned"
    returned.mkdir()
    for name, place in job.collect.items():
        copy_back(root / place, returned / name)
    (returned / RESULT_NAME).write_text(result.model_dump_json(), encoding="utf-8")
    zip_folder(returned, scratch / "outputs.zip")
    _send(request.outputs_url, scratch / "outputs.zip")
    return result


def contain_strays() -> None:
    """On Lambda the program shares its runner's uid and could kill it: its orphans then come to this
    process, which kills them (and anything else it started) before the next invocation."""
    become_subreaper()
    kill_descendants()


def empty_folder(folder: Path) -> None:
    """Remove everything inside ``folder`` (Lambda keeps /tmp between the invocations of a warm sandbox)."""
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
