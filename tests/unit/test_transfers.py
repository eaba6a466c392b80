"""Many small objects moved at once: uploads in the background with their files deleted once stored,
a failed one raised; downloads handed back in order, each file deleted once the next is asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchgen.steps.transfers import Uploads, downloads
from tests.fakes import MemoryStore


def test_every_upload_is_stored_and_its_file_deleted(tmp_path: Path) -> None:
    store = MemoryStore()
    with Uploads(store, at_once=3) as uploads:
        for number in range(20):
            path = tmp_path / f"part-{number}"
            path.write_text(f"part {number}")
            uploads.put(path, f"parts/{number}", content_type="text/plain")
    assert store.objects == {f"parts/{number}": f"part {number}".encode() for number in range(20)}
    assert list(tmp_path.iterdir()) == []


def test_a_failed_upload_is_raised_when_the_uploads_end(tmp_path: Path) -> None:
    class Refusing(MemoryStore):
        def upload(self, path: Path, key: str, *, content_type: str = "application/octet-stream") -> None:
            if key == "parts/3":
                raise OSError("the bucket refused parts/3")
            super().upload(path, key, content_type=content_type)

    with pytest.raises(OSError, match="refused parts/3"), Uploads(Refusing(), at_once=2) as uploads:
        for number in range(6):
            path = tmp_path / f"part-{number}"
            path.write_text("x")
            uploads.put(path, f"parts/{number}", content_type="text/plain")


def test_downloads_come_back_in_order_and_leave_no_file_behind(tmp_path: Path) -> None:
    store = MemoryStore({f"answers/{number}": f"answer {number}".encode() for number in range(40)})
    seen = [
        path.read_text() for path in downloads(store, [f"answers/{n}" for n in range(40)], tmp_path, ahead=5)
    ]
    assert seen == [f"answer {number}" for number in range(40)]
    assert list(tmp_path.iterdir()) == []


def test_a_missing_object_is_raised_where_it_comes_in_order(tmp_path: Path) -> None:
    store = MemoryStore({"answers/0": b"first"})
    read = []
    with pytest.raises(Exception, match="answers/1"):
        for path in downloads(store, ["answers/0", "answers/1"], tmp_path):
            read.append(path.read_text())
    assert read == ["first"]
