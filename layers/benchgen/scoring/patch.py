"""Apply a model's unified diff to a code case's files, as GNU ``patch`` would, and run the case's tests.

What the ``code`` template (:mod:`benchgen.scoring.code`) judges and how is said there; this module is its
rule over plain files, the tests run by whatever runner it is given (the judge's sandbox, or the standalone
grader's subprocess). Standard library only: the standalone grader is built from this module's source.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FENCE = re.compile(r"```(?:diff|patch)?[ \t]*\n(.*?)```", re.DOTALL)
DEV_NULL = "/dev/null"
# GNU patch's default: a hunk whose context no longer matches may drop up to two outer context lines.
MAX_FUZZ = 2


class PatchError(ValueError):
    """The diff is malformed or does not apply; the message says where."""


@dataclass
class Hunk:
    old_start: int
    old_count: int
    # Each line starts with ' ', '-' or '+' and keeps its end of line: "\n", or nothing for a line that a
    # "\\ No newline at end of file" marker follows.
    lines: list[str] = field(default_factory=list)

    @property
    def before(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " -"]

    @property
    def after(self) -> list[str]:
        return [line[1:] for line in self.lines if line[0] in " +"]

    @property
    def first(self) -> int:
        """GNU patch's first line of the hunk: an empty old side (``-3,0``) means after line 3."""
        return self.old_start + 1 if self.old_count == 0 else self.old_start

    @property
    def prefix_context(self) -> int:
        return next((i for i, line in enumerate(self.lines) if line[0] != " "), len(self.lines))

    @property
    def suffix_context(self) -> int:
        return next((i for i, line in enumerate(reversed(self.lines)) if line[0] != " "), len(self.lines))


@dataclass
class FilePatch:
    old_path: str | None  # None: the file is created
    new_path: str | None  # None: the file is deleted
    hunks: list[Hunk] = field(default_factory=list)


def split_lines(text: str) -> list[str]:
    """Lines with their "\n"; only "\n" ends a line, as for ``patch`` (str.splitlines also splits on form
    feeds, U+2028 and more, which would change the file)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


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


def _without_crs(lines: list[str]) -> list[str]:
    """A diff whose headers end in CRLF had its line ends converted: GNU patch strips every trailing CR
    from it (and then matches only files without them); headers that disagree are refused."""
    headers = [line for line in lines if line.startswith(("--- ", "+++ ", "@@ "))]
    with_cr = {line.endswith("\r\n") for line in headers}
    if len(with_cr) > 1:
        raise PatchError("the diff mixes CRLF and LF line ends in its headers; save it with one kind")
    if with_cr != {True}:
        return lines
    return [line[:-2] + "\n" if line.endswith("\r\n") else line for line in lines]


def parse_diff(text: str) -> list[FilePatch]:
    """Parse a unified diff; raises PatchError when it is not one."""
    lines = _without_crs(split_lines(_unfence(text)))
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


def _no_newline(hunk: Hunk, where: int) -> None:
    """Apply a "\\ No newline at end of file" marker to the line before it."""
    if not hunk.lines or not hunk.lines[-1].endswith("\n"):
        raise PatchError(f"line {where}: a 'No newline at end of file' marker that follows no line")
    hunk.lines[-1] = hunk.lines[-1][:-1]


def _read_hunk(lines: list[str], index: int, header: re.Match[str]) -> tuple[Hunk, int]:
    old_count = int(header.group(2)) if header.group(2) is not None else 1
    new_count = int(header.group(4)) if header.group(4) is not None else 1
    hunk = Hunk(old_start=int(header.group(1)), old_count=old_count)
    seen_old = seen_new = 0
    position = index + 1
    while position < len(lines) and (seen_old < old_count or seen_new < new_count):
        line = lines[position]
        if line.startswith("\\"):
            _no_newline(hunk, position + 1)
            position += 1
            continue
        marker = line[:1] if line != "\n" else " "  # some editors strip the space of an empty context line
        if marker not in " -+":
            break
        hunk.lines.append(marker + line[1:] if line != "\n" else " \n")
        seen_old += marker in " -"
        seen_new += marker in " +"
        position += 1
    while position < len(lines) and lines[position].startswith("\\"):
        _no_newline(hunk, position + 1)
        position += 1
    if (seen_old, seen_new) != (old_count, new_count):
        raise PatchError(
            f"line {index + 1}: the hunk header promises {old_count} old and {new_count} new lines, "
            f"the hunk has {seen_old} and {seen_new}"
        )
    for side in (hunk.before, hunk.after):
        if any(not line.endswith("\n") for line in side[:-1]):
            raise PatchError(f"line {index + 1}: a line marked as the end of the file has lines after it")
    return hunk, position


@dataclass
class _Applying:
    """GNU patch's state while it patches one file: lines consumed so far, and the running offset."""

    content: list[str]
    frozen: int = 0  # lines of the original already written or dropped
    offset: int = 0  # how far the previous hunk landed from where its header said
    output: list[str] = field(default_factory=list)

    def matches(self, hunk: Hunk, where: int, prefix_fuzz: int, suffix_fuzz: int) -> bool:
        """Whether the hunk's old lines, less the fuzzed context, are the content from line ``where``."""
        pattern = hunk.before
        start = where - 1 + prefix_fuzz
        wanted = pattern[prefix_fuzz : len(pattern) - suffix_fuzz]
        return start >= 0 and self.content[start : start + len(wanted)] == wanted

    def locate(self, hunk: Hunk, fuzz: int) -> int:
        """Where the hunk applies with ``fuzz`` (1-based), or 0: GNU patch's search, in its order."""
        first_guess = hunk.first + self.offset
        pattern = len(hunk.before)
        if not pattern:
            return first_guess
        prefix, suffix = hunk.prefix_context, hunk.suffix_context
        context = max(prefix, suffix)
        prefix_fuzz = fuzz + prefix - context
        suffix_fuzz = fuzz + suffix - context
        max_where = len(self.content) - (pattern - suffix_fuzz) + 1
        min_where = self.frozen + 1
        max_pos_offset = max_where - first_guess
        max_neg_offset = min(first_guess - min_where, first_guess - 1)
        if prefix_fuzz < 0 and hunk.first <= 1:
            # Less context before than after a hunk at line 1: it can only apply at the start of the file.
            if self.frozen <= prefix and max_where >= 1 and self.matches(hunk, 1, 0, suffix_fuzz):
                return self._found(1, first_guess)
            return 0
        prefix_fuzz = max(prefix_fuzz, 0)
        if suffix_fuzz < 0:
            # Less context after than before: it can only apply at the end of the file.
            where = len(self.content) - pattern + 1
            if first_guess - where <= max_neg_offset and self.matches(hunk, where, prefix_fuzz, 0):
                return self._found(where, first_guess)
            return 0
        for distance in range(max(max_pos_offset, max_neg_offset) + 1):
            for where, allowed in (
                (first_guess + distance, distance <= max_pos_offset),
                (first_guess - distance, distance <= max_neg_offset),
            ):
                if allowed and self.matches(hunk, where, prefix_fuzz, suffix_fuzz):
                    return self._found(where, first_guess)
        return 0

    def _found(self, where: int, first_guess: int) -> int:
        self.offset += where - first_guess
        return where

    def copy_till(self, line: int) -> None:
        """Write the original's lines up to ``line`` (1-based, inclusive) that are not written yet."""
        if line > len(self.content):
            raise PatchError("a hunk lies past the end of the file")
        for copied in self.content[self.frozen : line]:
            self.write(copied)
        self.frozen = max(self.frozen, line)

    def write(self, line: str) -> None:
        """Add a line; like patch, end the previous one first if it had no newline (the old last line)."""
        if self.output and not self.output[-1].endswith("\n"):
            self.output[-1] += "\n"
        self.output.append(line)

    def apply(self, hunk: Hunk, where: int) -> None:
        """Write the hunk's changes at ``where``; its context is left to be copied from the original."""
        if where - 1 < self.frozen:
            raise PatchError("the hunks overlap or are out of order")
        old = 0
        for line in hunk.lines:
            if line[0] == " ":
                old += 1
            elif line[0] == "-":
                self.copy_till(where - 1 + old)
                self.frozen += 1
                old += 1
            else:
                self.copy_till(where - 1 + old)
                self.write(line[1:])


def apply_patch(patch: FilePatch, original: str | None) -> str | None:
    """The new content of one file (None: deleted), as GNU ``patch`` makes it; raises PatchError for a
    diff it would not apply whole, and for an insertion past the end of the file (which patch appends)."""
    name = patch.new_path or patch.old_path
    if patch.old_path is not None and original is None:
        raise PatchError(f"{name}: the diff changes a file that does not exist")
    if patch.old_path is None and original:
        raise PatchError(f"{name}: the diff creates a file that already exists")
    state = _Applying(split_lines(original or ""))
    for number, hunk in enumerate(patch.hunks, start=1):
        fuzz_limit = min(MAX_FUZZ, max(hunk.prefix_context, hunk.suffix_context))
        where = next((w for fuzz in range(fuzz_limit + 1) if (w := state.locate(hunk, fuzz))), 0)
        if not where:
            raise PatchError(f"{name}: hunk {number} does not match the file")
        try:
            state.apply(hunk, where)
        except PatchError as error:
            raise PatchError(f"{name}: hunk {number}: {error}") from None
    state.copy_till(len(state.content))
    result = "".join(state.output)
    if patch.new_path is None:
        if result:
            raise PatchError(f"{name}: the diff deletes the file but leaves lines in it")
        return None
    return result


def materialise(files: dict[str, str], root: Path) -> None:
    for name, content in files.items():
        path = PurePosixPath(name)
        if path.is_absolute() or ".." in path.parts:
            raise PatchError(f"the case names an unsafe file path: {name!r}")
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8"))


def apply_diff(patches: list[FilePatch], root: Path) -> None:
    """Apply parsed patches to the files under ``root``; raises PatchError (files may be half-changed).

    Files are read and written as bytes, so CRLF line ends stay as they are.
    """
    for patch in patches:
        if patch.old_path is not None and patch.new_path is not None and patch.old_path != patch.new_path:
            raise PatchError(f"{patch.old_path} -> {patch.new_path}: renaming diffs are not supported")
        source = root / (patch.old_path or patch.new_path or "")
        original = source.read_bytes().decode("utf-8") if source.is_file() else None
        updated = apply_patch(patch, original)
        if updated is None:
            source.unlink()
            continue
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_bytes(updated.encode("utf-8"))


TestRunner = Callable[[Path], tuple[bool, str]]
"""Runs a case's tests in the folder of its patched files: (passed, what happened)."""


@dataclass(frozen=True)
class PatchOutcome:
    """What became of a model output: whether it is a unified diff, applied to the case's files, and made
    the tests pass, and what happened, said for the run."""

    is_patch: bool
    applied: bool
    passed: bool
    detail: str


def patch_and_test(
    files: dict[str, str], raw: str, run_tests: TestRunner, workdir: Path | None
) -> PatchOutcome:
    """Apply the diff ``raw`` to ``files`` in a scratch folder under ``workdir`` and run the tests there."""
    is_patch = applied = passed = False
    try:
        patches = parse_diff(raw) if raw.strip() else None
        is_patch = patches is not None
        if patches is None:
            detail = "no patch"
        else:
            with tempfile.TemporaryDirectory(prefix="case-", dir=workdir) as scratch:
                root = Path(scratch) / "repo"
                root.mkdir()
                materialise(files, root)
                apply_diff(patches, root)
                applied = True
                passed, detail = run_tests(root)
    except PatchError as error:
        detail = f"patch does not apply: {error}" if is_patch else f"not a unified diff: {error}"
    return PatchOutcome(is_patch, applied, passed, detail)
