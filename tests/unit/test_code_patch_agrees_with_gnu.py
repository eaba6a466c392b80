"""The code template's diff applier against GNU ``patch``: the same bytes, or a refusal, never a third result.

Every diff here is also given to ``patch -p1 --force`` (what a SWE harness runs). Where the applier
produces a file, patch must have produced the same bytes; the applier may refuse what patch would apply
(an insertion past the end of the file), never the other way round.
"""

from __future__ import annotations

import difflib
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from benchgen.scoring.patch import PatchError, apply_patch, parse_diff, split_lines

NO_NEWLINE = "\\ No newline at end of file\n"
# Lines that trip a naive splitter: a form feed, U+2028 and U+0085 (str.splitlines breaks on all three),
# a lone CR, an empty line, and lines that look like diff syntax.
LINES = ["a", "b", "c", "", "x\fy", "u\u2028v", "n\x85m", "cr\r", "-- not a header", "+plus", "    pass"]


def _patch_binary() -> str:
    found = shutil.which("patch")
    if found is None:
        pytest.fail("GNU patch is not installed; install it (Debian/Ubuntu: apt-get install patch) and rerun")
    return found


def gnu_patch(original: str | None, diff: str, tmp: Path) -> str | None:
    """What ``patch -p1 --force`` leaves in f.txt, or None when it does not apply the whole diff."""
    shutil.rmtree(tmp, ignore_errors=True)
    tree = tmp / "tree"
    tree.mkdir(parents=True)
    target = tree / "f.txt"
    if original is not None:
        target.write_bytes(original.encode("utf-8"))
    (tmp / "p.diff").write_bytes(diff.encode("utf-8"))
    command = [_patch_binary(), "-p1", "--force", "--no-backup-if-mismatch", "--reject-file=-"]
    done = subprocess.run(
        [*command, "-d", str(tree), "-i", str(tmp / "p.diff")], capture_output=True, check=False
    )
    if done.returncode != 0:
        return None
    return target.read_bytes().decode("utf-8") if target.exists() else None


def ours(original: str | None, diff: str) -> str | PatchError | None:
    try:
        (patch,) = parse_diff(diff)
        return apply_patch(patch, original)
    except PatchError as error:
        return error


def unified(before: str, after: str, context: int) -> str:
    """The diff ``git diff`` would write: difflib's hunks, plus the no-newline markers difflib leaves out."""
    lines = difflib.unified_diff(split_lines(before), split_lines(after), "a/f.txt", "b/f.txt", n=context)
    return "".join(line if line.endswith("\n") else line + "\n" + NO_NEWLINE for line in lines)


def assert_agrees(original: str | None, diff: str, tmp: Path) -> str | PatchError | None:
    mine = ours(original, diff)
    theirs = gnu_patch(original, diff, tmp)
    if not isinstance(mine, PatchError):
        assert theirs is not None, f"applied a diff that GNU patch refuses:\n{diff}"
        assert mine == theirs
    return mine


@st.composite
def files(draw: st.DrawFn) -> str:
    lines = draw(st.lists(st.sampled_from(LINES), max_size=14))
    text = "".join(line + "\n" for line in lines)
    open_ended: bool = draw(st.booleans())
    if lines and open_ended:
        text = text[:-1]  # no newline at the end of the file
    return text


@st.composite
def edited(draw: st.DrawFn, text: str) -> str:
    """``text`` with a few lines inserted, deleted or replaced, so hunks shift, fuzz or fail."""
    lines = split_lines(text)
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        if action == "insert":
            lines.insert(at, draw(st.sampled_from(LINES)) + "\n")
        elif lines and at < len(lines):
            if action == "delete":
                del lines[at]
            else:
                lines[at] = draw(st.sampled_from(LINES)) + ("\n" if lines[at].endswith("\n") else "")
    return "".join(lines)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), before=files(), after=files(), context=st.integers(0, 3), crlf=st.booleans())
def test_the_applier_agrees_with_gnu_patch_or_refuses(
    tmp_path: Path, data: st.DataObject, before: str, after: str, context: int, crlf: bool
) -> None:
    # given a diff between two versions, with zero to three context lines, sometimes with CRLF line ends,
    # applied to the old version or to an edited copy of it
    diff = unified(before, after, context)
    assume(diff)
    if crlf:
        diff = diff.replace("\n", "\r\n")
    target = data.draw(st.one_of(st.just(before), edited(before)))

    # when both apply it, then they agree or the applier refuses
    assert_agrees(target, diff, tmp_path / "gnu")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=files(), after=files(), context=st.integers(0, 3))
def test_a_diff_applied_to_its_own_old_version_gives_the_new_version(
    tmp_path: Path, before: str, after: str, context: int
) -> None:
    diff = unified(before, after, context)
    assume(diff)

    assert assert_agrees(before, diff, tmp_path / "gnu") == after


HEADER = "--- a/f.txt\n+++ b/f.txt\n"
CASES = {
    "zero-context insertion after line 2": ("a\nb\nc\n", HEADER + "@@ -2,0 +3 @@\n+new\n", "a\nb\nnew\nc\n"),
    "zero-context insertion at the top": ("a\nb\n", HEADER + "@@ -0,0 +1 @@\n+new\n", "new\na\nb\n"),
    "zero-context deletion": ("a\nb\nc\n", HEADER + "@@ -2 +1,0 @@\n-b\n", "a\nc\n"),
    "newline added at the end": ("a\nb", HEADER + "@@ -2 +2 @@\n-b\n" + NO_NEWLINE + "+b\n", "a\nb\n"),
    "newline removed at the end": ("a\nb\n", HEADER + "@@ -2 +2 @@\n-b\n+b\n" + NO_NEWLINE, "a\nb"),
    "a line appended after a last line without newline": ("a", HEADER + "@@ -1,0 +2 @@\n+b\n", "a\nb\n"),
    "form feed inside a line": ("p\fq\nr\n", HEADER + "@@ -1,2 +1,2 @@\n p\fq\n-r\n+R\n", "p\fq\nR\n"),
    "U+2028 inside a line": (
        "s\u2028t\nr\n",
        HEADER + "@@ -1,2 +1,2 @@\n s\u2028t\n-r\n+R\n",
        "s\u2028t\nR\n",
    ),
    "CRLF file, LF diff with CR in its lines": (
        "a\r\nb\r\n",
        HEADER + "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+B\r\n",
        "a\r\nB\r\n",
    ),
    "hunk without trailing context, applied with fuzz": (
        "def f():\n    return 1\n\nx = 2\n",
        HEADER + "@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n",
        "def f():\n    return 2\n\nx = 2\n",
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_known_hard_cases_give_gnu_patchs_bytes(name: str, tmp_path: Path) -> None:
    original, diff, expected = CASES[name]

    assert gnu_patch(original, diff, tmp_path / "gnu") == expected
    assert ours(original, diff) == expected


REFUSED = {
    "CRLF diff on a CRLF file (patch strips the diff's CRs)": (
        "a\r\nb\r\n",
        "--- a/f.txt\r\n+++ b/f.txt\r\n@@ -1,2 +1,2 @@\r\n a\r\n-b\r\n+B\r\n",
    ),
    "a stale hunk": ("a\nb\nc\n", HEADER + "@@ -1,3 +1,3 @@\n a\n-x\n+y\n c\n"),
}


@pytest.mark.parametrize("name", REFUSED)
def test_what_gnu_patch_refuses_is_refused(name: str, tmp_path: Path) -> None:
    original, diff = REFUSED[name]

    assert gnu_patch(original, diff, tmp_path / "gnu") is None
    assert isinstance(ours(original, diff), PatchError)
