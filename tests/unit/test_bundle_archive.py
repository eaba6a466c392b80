"""Safe reading of bundle zips and folders."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import pytest

from benchgen.bundle.archive import Budget, Limits, expand_part, extract_zip, is_junk, open_bundle
from benchgen.errors import BundleError
from tests.unit.bad_bundles import GOOD_YAML, bundle_files, good_folder, good_zip, zip_entries

MiB = 1024 * 1024


def _zeros_zip(path: Path, name: str, size: int) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr(name, b"\0" * size)
    return path


def _files_under(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def test_a_zip_is_extracted_and_its_root_returned(tmp_path: Path) -> None:
    root = open_bundle(good_zip(tmp_path), tmp_path / "work")

    assert (root / "competition.yaml").read_text() == GOOD_YAML
    assert root.parent == tmp_path / "work"


def test_a_folder_is_used_in_place(tmp_path: Path) -> None:
    folder = good_folder(tmp_path)

    assert open_bundle(folder, tmp_path / "work") == folder
    assert not (tmp_path / "work").exists()


def test_a_relative_folder_is_returned_as_an_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = good_folder(tmp_path)
    monkeypatch.chdir(tmp_path)

    assert open_bundle(Path("bundle"), Path("work")) == folder


def test_competition_yaml_itself_opens_its_folder(tmp_path: Path) -> None:
    folder = good_folder(tmp_path)

    assert open_bundle(folder / "competition.yaml", tmp_path / "work") == folder


def test_competition_yml_spelling_is_accepted(tmp_path: Path) -> None:
    source = zip_entries(tmp_path / "bundle.zip", {"competition.yml": GOOD_YAML})

    root = open_bundle(source, tmp_path / "work")

    assert (root / "competition.yml").is_file()


def test_a_missing_source_is_named(tmp_path: Path) -> None:
    with pytest.raises(BundleError) as raised:
        open_bundle(tmp_path / "nope.zip", tmp_path / "work")

    assert (
        str(raised.value)
        == f"{tmp_path / 'nope.zip'}: does not exist; give the path of a bundle zip or folder"
    )


def test_a_zip_bomb_is_refused_from_its_declared_size_before_extraction(tmp_path: Path) -> None:
    # given 32 MiB of zeros compressed into a few KiB
    source = _zeros_zip(tmp_path / "bundle.zip", "reference/cases.jsonl", 32 * MiB)
    assert source.stat().st_size < 100 * 1024

    # when it is opened with a 1 MiB limit
    with pytest.raises(BundleError) as raised:
        open_bundle(source, tmp_path / "work", budget=Budget(Limits(max_bytes=MiB)))

    # then it is refused and nothing was written
    assert str(raised.value) == (
        "bundle.zip: would expand to 32.0 MiB, more than the limit of 1.0 MiB; make the bundle smaller"
    )
    assert _files_under(tmp_path / "work") == []


def test_an_entry_whose_header_understates_its_size_is_refused(tmp_path: Path) -> None:
    # given an entry of 4 MiB whose headers both claim 100 bytes
    source = _zeros_zip(tmp_path / "bundle.zip", "big.bin", 4 * MiB)
    data = bytearray(source.read_bytes())
    struct.pack_into("<I", data, data.index(b"PK\x03\x04") + 22, 100)
    struct.pack_into("<I", data, data.index(b"PK\x01\x02") + 24, 100)
    source.write_bytes(bytes(data))

    # when it is opened with a 1 MiB limit (which the declared size passes)
    with pytest.raises(BundleError) as raised:
        open_bundle(source, tmp_path / "work", budget=Budget(Limits(max_bytes=MiB)))

    # then it is refused as damaged and nothing is left behind
    assert str(raised.value).startswith("bundle.zip: is damaged and cannot be extracted")
    assert _files_under(tmp_path / "work") == []


def test_bytes_are_counted_while_extracting_not_only_from_headers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a reader that yields more than the header declares (as a lax decompressor could)
    source = zip_entries(tmp_path / "bundle.zip", {"data.bin": b"x" * 10})
    monkeypatch.setattr(zipfile.ZipFile, "open", lambda self, info: io.BytesIO(b"x" * 5000))
    dest = tmp_path / "dest"

    # when it is extracted
    with pytest.raises(BundleError) as raised:
        extract_zip(source, dest, label="bundle.zip", budget=Budget())

    # then the extra data is noticed and the partial file removed
    assert "entry 'data.bin' holds more data than its header declares" in str(raised.value)
    assert _files_under(dest) == []


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    entries = {f"reference/{i}.txt": "x" for i in range(10)}
    source = zip_entries(tmp_path / "bundle.zip", {**bundle_files(), **entries})

    with pytest.raises(BundleError) as raised:
        open_bundle(source, tmp_path / "work", budget=Budget(Limits(max_files=5)))

    assert str(raised.value) == (
        "bundle.zip: holds 12 entries, more than the limit of 5 files per bundle; "
        "remove files the benchmark does not need"
    )


def test_the_limits_cover_every_zip_of_a_bundle_together(tmp_path: Path) -> None:
    # given two parts of 600 KiB each and a 1 MiB budget shared between them
    budget = Budget(Limits(max_bytes=MiB))
    first = _zeros_zip(tmp_path / "first.zip", "a.bin", 600 * 1024)
    second = _zeros_zip(tmp_path / "second.zip", "b.bin", 600 * 1024)
    expand_part(first, tmp_path / "work", label="first.zip", budget=budget)

    # when the second is extracted, then the budget is spent
    with pytest.raises(BundleError) as raised:
        expand_part(second, tmp_path / "work", label="second.zip", budget=budget)
    assert str(raised.value).startswith(
        "second.zip: would expand to 600.0 KiB, more than the limit of 1.0 MiB"
    )


def test_a_refused_archive_writes_nothing_even_after_good_entries(tmp_path: Path) -> None:
    source = zip_entries(tmp_path / "bundle.zip", {**bundle_files(), "../../evil.txt": "x"})
    dest = tmp_path / "a" / "b"

    with pytest.raises(BundleError):
        extract_zip(source, dest, label="bundle.zip", budget=Budget())

    assert _files_under(dest) == []
    assert not (tmp_path / "evil.txt").exists()


def test_an_entry_that_appears_twice_is_refused(tmp_path: Path) -> None:
    source = tmp_path / "bundle.zip"
    with pytest.warns(UserWarning), zipfile.ZipFile(source, "w") as zf:
        zf.writestr("competition.yaml", GOOD_YAML)
        zf.writestr("competition.yaml", "title: other\n")

    with pytest.raises(BundleError) as raised:
        open_bundle(source, tmp_path / "work")

    assert str(raised.value) == "bundle.zip: entry 'competition.yaml' appears twice; keep one copy"


@pytest.mark.parametrize(
    ("name", "junk"),
    [
        ("__MACOSX/bundle/._competition.yaml", True),
        ("bundle/.DS_Store", True),
        ("reference/._cases.jsonl", True),
        ("Thumbs.db", True),
        ("reference/cases.jsonl", False),
        ("scoring/.hidden_config", False),
    ],
)
def test_archive_clutter_is_recognised(name: str, junk: bool) -> None:
    assert is_junk(name) is junk


def test_a_zipped_part_holding_one_folder_is_unpacked_as_it_is(tmp_path: Path) -> None:
    # given a program zipped with its folder, on a Mac (as Codabench's worker unpacks it: extractall)
    part = zip_entries(tmp_path / "scoring.zip", {"scoring/metadata.yaml": "command: x\n", "__MACOSX/x": "y"})

    folder = expand_part(part, tmp_path / "work", label="scoring.zip", budget=Budget())

    # then the folder stays a folder, and nothing is left out
    assert sorted(path.name for path in folder.iterdir()) == ["__MACOSX", "scoring"]
    assert (folder / "scoring" / "metadata.yaml").read_text() == "command: x\n"


def test_a_folder_part_is_used_as_is(tmp_path: Path) -> None:
    (tmp_path / "scoring").mkdir()

    folder = expand_part(tmp_path / "scoring", tmp_path / "work", label="scoring", budget=Budget())

    assert folder == tmp_path / "scoring"


def test_the_executable_bit_of_an_entry_is_kept(tmp_path: Path) -> None:
    source = tmp_path / "scoring.zip"
    info = zipfile.ZipInfo("run.sh")
    info.external_attr = 0o100755 << 16
    with zipfile.ZipFile(source, "w") as zf:
        zf.writestr(info, "#!/bin/sh\necho hi\n")
        zf.writestr("metadata.yaml", "command: ./run.sh\n")

    folder = expand_part(source, tmp_path / "work", label="scoring.zip", budget=Budget())

    assert (folder / "run.sh").stat().st_mode & 0o777 == 0o755
    assert (folder / "metadata.yaml").stat().st_mode & 0o111 == 0


def test_extracting_into_a_folder_that_has_files_is_refused(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "keep.txt").write_text("mine")

    with pytest.raises(ValueError, match="is not empty"):
        extract_zip(good_zip(tmp_path), dest, label="bundle.zip", budget=Budget())
    assert (dest / "keep.txt").read_text() == "mine"
