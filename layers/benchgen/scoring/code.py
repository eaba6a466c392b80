"""The ``code`` template (SWE-style): a prediction is a unified diff against the case's files.

- A prediction is a *patch* when it parses as a unified diff: at least one file section (``---``/``+++``)
  with at least one hunk whose line counts agree with its ``@@`` header. A diff wrapped in a markdown
  code fence is accepted.
- A case is *resolved* when the patch applies to the case's ``files`` (every hunk's context and removed
  lines found, at the stated line or shifted) and the case's ``test_command`` then exits with 0. The
  command runs like a bundle's program (no shell, ``python`` is BenchGen's interpreter, a clean
  environment without credentials, the phase time limit).
- Near miss: the patch applied but the tests failed.

Metrics: ``patches_generated`` (count), ``patch_generated_rate``, ``resolved_rate``, ``total_tasks``.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from benchgen.bundle.spec import Criterion
from benchgen.cases import Case, Prediction
from benchgen.programs import last_lines, run_program
from benchgen.sandbox.job import Sandbox
from benchgen.scoring.templates import Aggregator, Judge, case_verdict, rate
from benchgen.verdicts import Verdict

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FENCE = re.compile(r"```(?:diff|patch)?[ \t]*\n(.*?)```", re.DOTALL)
DEV_NULL = "/dev/null"


class PatchError(ValueError):
    """The diff is malformed or does not apply; the message says where."""


@dataclass
class Hunk:
    old_start: int
    old_count: int
    lines: list[str] = field(default_factory=list)  # each starts with ' ', '-' or '+'

    @property
    def before(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " -"]

    @property
    def after(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " +"]


@dataclass
class FilePatch:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    hunks: list[Hunk] = field(default_factory=list)


def _strip_prefix(raw: str) -> str | None:
    name = raw.split("\t", 1)[0].strip()
    if name == DEV_NULL:
        return None
    if name[:2] in ("a/", "b/"):
        name = name[2:]
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts:
        raise PatchError(f"unsafe or empty path in the diff: {raw.strip()!r}")
    return str(path)


def _unfence(text: str) -> str:
    fenced = _FENCE.search(text)
    return fenced.group(1) if fenced else text


def parse_diff(text: str) -> list[FilePatch]:
    """Parse a unified diff; raises PatchError when it is not one."""
    lines = _unfence(text).splitlines()
    patches: list[FilePatch] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            current = FilePatch(_strip_prefix(line[4:]), _strip_prefix(lines[index + 1][4:]))
            patches.append(current)
            index += 2
            continue
        header = _HUNK.match(line)
        if header:
            if not patches:
                raise PatchError(f"line {index + 1}: a hunk before any ---/+++ file header")
            hunk, index = _read_hunk(lines, index, header)
            patches[-1].hunks.append(hunk)
            continue
        index += 1
    if not patches:
        raise PatchError("no ---/+++ file header found")
    for patch in patches:
        if not patch.hunks:
            raise PatchError(f"{patch.new_path or patch.old_path}: a file header without any @@ hunk")
    return patches


def _read_hunk(lines: list[str], index: int, header: re.Match[str]) -> tuple[Hunk, int]:
    old_count = int(header.group(2)) if header.group(2) is not None else 1
    new_count = int(header.group(4)) if header.group(4) is not None else 1
    hunk = Hunk(old_start=int(header.group(1)), old_count=old_count)
    seen_old = seen_new = 0
    position = index + 1
    while position < len(lines) and (seen_old < old_count or seen_new < new_count):
        line = lines[position]
        if line.startswith("\\"):
            position += 1
            continue
        marker = line[:1] or " "  # some editors strip the space of an empty context line
        if marker not in " -+":
            break
        hunk.lines.append(marker + line[1:])
        seen_old += marker in " -"
        seen_new += marker in " +"
        position += 1
    while position < len(lines) and lines[position].startswith("\\"):
        position += 1
    if (seen_old, seen_new) != (old_count, new_count):
        raise PatchError(
            f"line {index + 1}: the hunk header promises {old_count} old and {new_count} new lines, "
            f"the hunk has {seen_old} and {seen_new}"
        )
    return hunk, position


def _find(content: list[str], wanted: list[str], expected: int, floor: int) -> int:
    """Where ``wanted`` starts at or after ``floor``, nearest to ``expected``; -1 if nowhere."""
    if not wanted:
        return max(min(expected, len(content)), floor)
    candidates = range(floor, len(content) - len(wanted) + 1)
    for start in sorted(candidates, key=lambda start: abs(start - expected)):
        if content[start : start + len(wanted)] == wanted:
            return start
    return -1


def apply_patch(patch: FilePatch, original: str | None) -> str | None:
    """The new content of one file (None: deleted); raises PatchError when a hunk does not fit."""
    name = patch.new_path or patch.old_path
    if patch.old_path is not None and original is None:
        raise PatchError(f"{name}: the diff changes a file that does not exist")
    content = (original or "").splitlines()
    ends_with_newline = original is None or original.endswith("\n") or original == ""
    result: list[str] = []
    cursor = 0
    for number, hunk in enumerate(patch.hunks, start=1):
        start = _find(content, hunk.before, max(hunk.old_start - 1, 0), cursor)
        if start < 0:
            raise PatchError(f"{name}: hunk {number} does not match the file")
        result.extend(content[cursor:start])
        result.extend(hunk.after)
        cursor = start + len(hunk.before)
    result.extend(content[cursor:])
    if patch.new_path is None:
        return None
    return "\n".join(result) + ("\n" if result and ends_with_newline else "")


def materialise(files: dict[str, str], root: Path) -> None:
    for name, content in files.items():
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts:
            raise PatchError(f"the case names an unsafe file path: {name!r}")
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")


def apply_diff(patches: list[FilePatch], root: Path) -> None:
    """Apply parsed patches to the files under ``root``; raises PatchError (files may be half-changed)."""
    for patch in patches:
        source = root / patch.old_path if patch.old_path else None
        original = source.read_text(encoding="utf-8") if source is not None and source.is_file() else None
        updated = apply_patch(patch, original)
        if source is not None and (updated is None or patch.new_path != patch.old_path):
            source.unlink()
        if updated is not None and patch.new_path is not None:
            target = root / patch.new_path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(updated, encoding="utf-8")


def run_tests(case: Case, root: Path, time_limit: int, sandbox: Sandbox | None = None) -> tuple[bool, str]:
    """Run the case's test command in ``root`` the way a bundle program runs; (passed, what happened)."""
    if not case.test_command:
        return False, "the case has no test_command"
    try:
        shlex.split(case.test_command)
    except ValueError as exc:
        # One case's broken command fails that case, not the whole run.
        return False, f"the case's test_command cannot be split into words ({exc}); check the quotes"
    output = root.parent / "output"
    result = run_program(
        root,
        input_dir=root,
        output_dir=output,
        shared_dir=output,
        ref_dir=root,
        res_dir=root,
        time_limit=time_limit,
        command=case.test_command,
        writable_program=True,  # the case's own scratch copy: tests may write caches beside the code
        sandbox=sandbox,
    )
    if result.timed_out:
        return False, f"tests timed out after {time_limit} s"
    if result.returncode != 0:
        tail = "\n".join(filter(None, (last_lines(result.stdout, 5), last_lines(result.stderr, 5))))
        return False, f"tests failed (exit {result.returncode}):\n{tail}"
    return True, "tests passed"


def make_judge(
    *, time_limit: int = 600, workdir: Path | None = None, sandbox: Sandbox | None = None
) -> Judge:
    def judge(case: Case, prediction: Prediction | None, criteria: Sequence[Criterion]) -> Verdict:
        raw = prediction.prediction_text if prediction is not None else ""
        patch_ok = applied = passed = False
        try:
            patches = parse_diff(raw) if raw.strip() else None
            patch_ok = patches is not None
            if patches is None:
                detail = "no patch"
            else:
                with tempfile.TemporaryDirectory(prefix="case-", dir=workdir) as scratch:
                    root = Path(scratch) / "repo"
                    root.mkdir()
                    materialise(case.files or {}, root)
                    apply_diff(patches, root)
                    applied = True
                    passed, detail = run_tests(case, root, time_limit, sandbox)
        except PatchError as error:
            detail = f"patch does not apply: {error}" if patch_ok else f"not a unified diff: {error}"
        return case_verdict(
            case,
            criteria,
            gold=case.answer or "tests pass",
            prediction=raw if patch_ok else None,
            raw_prediction=raw,
            passed=passed,
            answered=patch_ok,
            near_miss=applied and not passed,
            detail=detail,
        )

    return judge


class CodeAggregator(Aggregator):
    def scores(self) -> dict[str, float]:
        return {
            "resolved_rate": rate(self.passed, self.total),
            "patch_generated_rate": rate(self.answered, self.total),
            "patches_generated": float(self.answered),
            "resolved": float(self.passed),
            "total_tasks": float(self.total),
        }
