"""The README's console screenshots are the ones the browser tests took, not pictures made by hand."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Which test writes each picture (tests/browser/conftest.py: write_screenshot), at the tests' viewport width.
SCREENSHOTS = {
    "console-run-detail.png": "test_console.py::test_the_run_detail_shows_the_apis_tiles_files_and_report",
    "console-coverage.png": "test_console.py::test_the_workspace_tabs_show_the_preparation",
    "console-train-launch.png": "test_train.py::test_a_run_launched_from_train_is_followed_to_succeeded",
    "console-training-run.png": "test_train.py::test_a_run_launched_from_train_is_followed_to_succeeded",
}
VIEWPORT_WIDTH = 1280


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    found, at = [], 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, data = png[at + 4 : at + 8], png[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", png[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + data) == crc, f"chunk {kind!r} is damaged"
        found.append((kind, data))
        at += 12 + length
    return found


@pytest.mark.parametrize("name", sorted(SCREENSHOTS))
def test_a_console_screenshot_was_written_by_its_browser_test(name: str) -> None:
    chunks = _chunks((ROOT / "docs" / name).read_bytes())
    width, _height = struct.unpack(">II", chunks[0][1][:8])
    texts = [data for kind, data in chunks if kind == b"tEXt"]
    assert texts == [f"BenchGen browser test\0tests/browser/{SCREENSHOTS[name]}".encode()]
    assert width == VIEWPORT_WIDTH
    assert f"docs/{name}" in (ROOT / "README.md").read_text(encoding="utf-8")
