"""Byte-stable writers: the same records always give the same files, whatever their size.

Everything here streams: a case or a prediction is written as soon as it is made, so generating a million
cases holds one of them in memory at a time.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal

import yaml

from benchgen.zipwrite import zip_folder

SubmissionFormat = Literal["json", "jsonl"]


def _compact_json(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def dump_json_line(record: dict[str, Any]) -> str:
    return _compact_json(record) + "\n"


class _ReadableDumper(yaml.SafeDumper):
    """YAML the way a benchmark author writes it: short scalar lists inline (``[ardından, sonra]``) and
    multi-line strings as literal blocks."""


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.Node:
    short = len(value) <= 3 and all(
        isinstance(item, int | float | str) and len(str(item)) <= 24 for item in value
    )
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=short)


_ReadableDumper.add_representer(str, _represent_str)
_ReadableDumper.add_representer(list, _represent_list)


def write_yaml(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.dump(document, Dumper=_ReadableDumper, sort_keys=False, allow_unicode=True, width=100)
    path.write_text(text, encoding="utf-8")


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


class JsonlWriter:
    """Writes one JSON object per line."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = path.open("w", encoding="utf-8", newline="\n")

    def write(self, record: dict[str, Any]) -> None:
        self._file.write(dump_json_line(record))

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class PredictionsWriter:
    """Writes a results submission as ``predictions.json`` (one object) or ``predictions.jsonl``.

    The ``.json`` form is ``{"predictions": [...], "metadata": {...}}``; it is written piece by piece so the
    list never has to exist in memory.
    """

    def __init__(self, directory: Path, fmt: SubmissionFormat) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.fmt = fmt
        self.path = directory / f"predictions.{fmt}"
        self._file: IO[str] = self.path.open("w", encoding="utf-8", newline="\n")
        self.count = 0
        if fmt == "json":
            self._file.write('{"predictions": [\n')

    def write(self, record: dict[str, Any]) -> None:
        if self.fmt == "jsonl":
            self._file.write(dump_json_line(record))
        else:
            self._file.write((",\n" if self.count else "") + _compact_json(record))
        self.count += 1

    def finish(self, metadata: dict[str, Any]) -> Path:
        if self.fmt == "json":
            self._file.write("\n],\n")
            encoded = json.dumps(metadata, ensure_ascii=False, sort_keys=True)
            self._file.write(f'"metadata": {encoded}}}\n')
        self._file.close()
        return self.path

    def __enter__(self) -> PredictionsWriter:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._file.closed:
            self._file.close()


def write_bundle_zip(folder: Path, zip_path: Path) -> Path:
    """Zips a bundle folder with its files at the archive root (as Codabench expects), byte for byte stable.

    Entries are sorted, timestamped with a fixed date and given fixed permissions, so the same folder always
    gives the same zip.
    """
    if not (folder / "competition.yaml").is_file():
        raise FileNotFoundError(f"{folder} has no competition.yaml at its root: point at the bundle folder")
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    zip_folder(folder, zip_path)
    return zip_path
