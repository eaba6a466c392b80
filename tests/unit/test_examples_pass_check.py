"""Every example shipped in examples/ passes ``benchgen bundle check``, as registration would accept it."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# Every folder, found on disk: an example added later is checked without a change here.
FOLDERS = sorted(path for path in EXAMPLES.iterdir() if path.is_dir())


def test_the_examples_folder_holds_examples() -> None:
    assert len(FOLDERS) >= 10
    assert all((folder / "bundle").is_dir() for folder in FOLDERS)


@pytest.mark.parametrize("folder", FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_a_shipped_example_passes_the_bundle_check(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # when the example's bundle is checked as its author would before uploading it
    code = main(["bundle", "check", str(folder / "bundle")])

    # then it has no problem
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert captured.out.startswith("OK: ")
