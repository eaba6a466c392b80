"""Builders for environment bundles, good and bad, written into a test's tmp_path.

``CORPUS`` lists every bad bundle with the message substring its author should see. ``at_open`` says
whether ``open_environment`` refuses it too (some problems, such as a broken cases line, only
``check_bundle`` looks for).
"""

from __future__ import annotations

import json
import stat
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

GOOD_YAML = """\
version: 2
title: Tiny Math
description: Three sums.
image: codalab/codalab-legacy:py37
terms: terms.md
pages:
  - title: Overview
    file: overview.md
template: math
tasks:
  - index: 0
    name: main
    reference_data: reference
phases:
  - index: 0
    name: Test
    tasks: [0]
    execution_time_limit: 30
leaderboards:
  - title: Results
    key: main
    columns:
      - title: Accuracy
        key: accuracy
        index: 0
      - title: Answer rate
        key: answer_rate
        index: 1
"""

GOOD_CASES = [
    {"id": "q1", "question": "1+1?", "answer": "2"},
    {"id": "q2", "question": "2+2?", "answer": "4"},
    {"id": "q3", "question": "3+3?", "answer": "6"},
]

SCORING_METADATA = "command: python $program/score.py $input $output\n"
SCORING_SCRIPT = """\
import json, pathlib, sys
pathlib.Path(sys.argv[2], "scores.json").write_text(json.dumps({"accuracy": 1.0}))
"""


def cases_text(cases: Sequence[Mapping[str, object]]) -> str:
    return "".join(json.dumps(case) + "\n" for case in cases)


def write_files(folder: Path, files: Mapping[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return folder


def bundle_files(yaml_text: str = GOOD_YAML, **extra: str | bytes) -> dict[str, str | bytes]:
    """The files of a good template bundle; ``extra`` adds or replaces files by their bundle path."""
    files: dict[str, str | bytes] = {
        "competition.yaml": yaml_text,
        "reference/cases.jsonl": cases_text(GOOD_CASES),
    }
    files.update(extra)
    return files


def good_folder(tmp_path: Path, yaml_text: str = GOOD_YAML, **extra: str | bytes) -> Path:
    return write_files(tmp_path / "bundle", bundle_files(yaml_text, **extra))


def zip_entries(path: Path, entries: Mapping[str, str | bytes]) -> Path:
    """A zip holding exactly ``entries`` (names are written as given, even hostile ones)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in entries.items():
            zf.writestr(name, content)
    return path


def zip_folder(folder: Path, path: Path, *, prefix: str = "") -> Path:
    """Zip ``folder``'s contents, each name under ``prefix`` (e.g. ``"bundle/"`` for an enclosing folder)."""
    entries = {
        prefix + p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }
    return zip_entries(path, entries)


def good_zip(tmp_path: Path, yaml_text: str = GOOD_YAML, **extra: str | bytes) -> Path:
    return zip_entries(tmp_path / "bundle.zip", bundle_files(yaml_text, **extra))


def zip_bytes(entries: Mapping[str, str | bytes], tmp_path: Path, name: str = "part.zip") -> bytes:
    return zip_entries(tmp_path / name, entries).read_bytes()


def with_symlink(path: Path, files: Mapping[str, str | bytes], link: str, target: str) -> Path:
    zip_entries(path, files)
    info = zipfile.ZipInfo(link)
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr(info, target)
    return path


def yaml_with(old: str, new: str) -> str:
    assert old in GOOD_YAML, old
    return GOOD_YAML.replace(old, new)


@dataclass(frozen=True)
class BadBundle:
    name: str
    build: Callable[[Path], Path]
    message: str
    at_open: bool = True


def _not_a_zip(tmp: Path) -> Path:
    path = tmp / "bundle.zip"
    path.write_text("this is a text file, not an archive")
    return path


def _folder(yaml_text: str, **extra: str | bytes) -> Callable[[Path], Path]:
    return lambda tmp: good_folder(tmp, yaml_text, **extra)


def _cases(text: str) -> Callable[[Path], Path]:
    return _folder(GOOD_YAML, **{"reference/cases.jsonl": text})


def _without(name: str, **extra: str | bytes) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        folder = good_folder(tmp, GOOD_YAML, **extra)
        (folder / name).unlink()
        return folder

    return build


def _zip(entries: Mapping[str, str | bytes]) -> Callable[[Path], Path]:
    return lambda tmp: zip_entries(tmp / "bundle.zip", entries)


def _nested_scoring_zip(entries: Mapping[str, str | bytes]) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        scoring = zip_bytes(entries, tmp, "scoring-src.zip")
        yaml_text = yaml_with("    reference_data: reference\n", "    scoring_program: scoring.zip\n")
        return good_zip(tmp, yaml_text, **{"scoring.zip": scoring})

    return build


CORPUS: list[BadBundle] = [
    BadBundle("not a zip", _not_a_zip, "bundle.zip: is not a zip archive"),
    BadBundle(
        "no competition.yaml",
        _zip({"README.md": "hello", "reference/cases.jsonl": cases_text(GOOD_CASES)}),
        "bundle.zip: has no competition.yaml at its top level",
    ),
    BadBundle(
        "competition.yaml two folders down",
        _zip({"outer/inner/competition.yaml": GOOD_YAML, "outer/notes.md": "x"}),
        "there is one in 'outer/inner/'",
    ),
    BadBundle(
        "entry climbing out",
        _zip({**bundle_files(), "../evil.txt": "x"}),
        "bundle.zip: entry '../evil.txt' climbs out with '..'",
    ),
    BadBundle(
        "entry climbing out with backslashes",
        _zip({**bundle_files(), "reference\\..\\..\\evil.txt": "x"}),
        "climbs out with '..'",
    ),
    BadBundle(
        "absolute entry",
        _zip({**bundle_files(), "/etc/evil.txt": "x"}),
        "entry '/etc/evil.txt' is an absolute path",
    ),
    BadBundle(
        "drive letter entry",
        _zip({**bundle_files(), "C:/evil.txt": "x"}),
        "entry 'C:/evil.txt' starts with a drive letter",
    ),
    BadBundle(
        "symlink entry",
        lambda tmp: with_symlink(tmp / "bundle.zip", bundle_files(), "reference/link", "/etc/passwd"),
        "entry 'reference/link' is a symbolic link",
    ),
    BadBundle(
        "malformed yaml",
        _folder("title: Tiny\ntasks:\n  - index: 0\n   name: bad indent\n"),
        "competition.yaml: is not valid YAML at line 4, column",
    ),
    BadBundle("yaml is a list", _folder("- title: Tiny\n"), "competition.yaml: must be a mapping of keys"),
    BadBundle("empty yaml", _folder(""), "found an empty file"),
    BadBundle(
        "missing title",
        _folder(yaml_with("title: Tiny Math\n", "")),
        "competition.yaml: title: missing; add `title: <name of the benchmark>`",
    ),
    BadBundle(
        "no tasks",
        _folder(
            yaml_with("tasks:\n  - index: 0\n    name: main\n    reference_data: reference\n", "tasks: []\n")
        ),
        "competition.yaml: tasks: no tasks",
    ),
    BadBundle(
        "task without scoring program or template",
        _folder(yaml_with("template: math\n", "")),
        "competition.yaml: tasks.0.scoring_program: missing; give the path of the task's scoring program, "
        "or set `template:`",
    ),
    BadBundle(
        "unknown template",
        _folder(yaml_with("template: math\n", "template: algebra\n")),
        "competition.yaml: template: unknown template 'algebra'; known templates: "
        "math, qa, routing, code, judge",
    ),
    BadBundle(
        "template task without reference data",
        _folder(yaml_with("    reference_data: reference\n", "")),
        "competition.yaml: tasks.0.reference_data: missing; the built-in `math` template reads cases.jsonl",
    ),
    BadBundle(
        "duplicate column keys",
        _folder(yaml_with("key: answer_rate", "key: accuracy")),
        "competition.yaml: leaderboards.0.columns.1.key: 'accuracy' is already the key of column 0",
    ),
    BadBundle(
        "leaderboard without columns",
        _folder(GOOD_YAML.split("    columns:\n")[0] + "    columns: []\n"),
        "competition.yaml: leaderboards.0.columns: no columns",
    ),
    BadBundle(
        "empty leaderboards",
        _folder(GOOD_YAML.split("leaderboards:\n")[0] + "leaderboards: []\n"),
        "competition.yaml: leaderboards: no leaderboard",
    ),
    BadBundle(
        "no leaderboards key",
        _folder(GOOD_YAML.split("leaderboards:\n")[0]),
        "competition.yaml: leaderboards: missing; add `leaderboards:`",
    ),
    BadBundle(
        "wrong type",
        _folder(yaml_with("  - index: 0\n    name: main", "  - index: first\n    name: main")),
        "competition.yaml: tasks.0.index: should be a valid integer",
    ),
    BadBundle(
        "phase naming an unknown task",
        _folder(yaml_with("tasks: [0]", "tasks: [3]")),
        "competition.yaml: phases.0.tasks: task index 3 does not exist; known task indexes: 0",
    ),
    BadBundle(
        "reference data missing",
        _folder(yaml_with("reference_data: reference", "reference_data: refs")),
        "competition.yaml: tasks.0.reference_data: 'refs' does not exist in the bundle",
    ),
    BadBundle(
        "path outside the bundle",
        _folder(yaml_with("reference_data: reference", "reference_data: ../reference")),
        "competition.yaml: tasks.0.reference_data: '../reference' points outside the bundle",
    ),
    BadBundle(
        "pool missing",
        _folder(GOOD_YAML + "finetune:\n  pool:\n    path: pool.jsonl\n"),
        "competition.yaml: finetune.pool.path: 'pool.jsonl' does not exist in the bundle",
    ),
    BadBundle(
        "connector that is not a pair",
        _folder(GOOD_YAML + "finetune:\n  augmentation:\n    connectors:\n      - [ardından]\n"),
        "competition.yaml: finetune.augmentation.connectors.0: each connector is a pair [word, replacement]; "
        "found ['ardından']",
    ),
    BadBundle(
        "duplicate task index",
        _folder(
            yaml_with(
                "    reference_data: reference\n",
                "    reference_data: reference\n"
                "  - index: 0\n    name: again\n    reference_data: reference\n",
            )
        ),
        "competition.yaml: tasks.1.index: 0 is already the index of tasks.0",
    ),
    BadBundle(
        "nested scoring zip climbing out",
        _nested_scoring_zip({"metadata.yaml": SCORING_METADATA, "../evil.py": "x"}),
        "scoring.zip: entry '../evil.py' climbs out with '..'",
    ),
    BadBundle(
        "nested reference data not a zip",
        _folder(
            yaml_with("reference_data: reference", "reference_data: ref.zip"), **{"ref.zip": "plain text"}
        ),
        "ref.zip: is not a zip archive",
    ),
    BadBundle(
        "empty cases.jsonl",
        _folder(GOOD_YAML, **{"reference/cases.jsonl": ""}),
        "reference/cases.jsonl: has no cases",
        at_open=False,
    ),
    BadBundle(
        "no cases.jsonl",
        _without("reference/cases.jsonl", **{"reference/readme.txt": "x"}),
        "competition.yaml: tasks.0.reference_data: 'reference' has no cases.jsonl",
        at_open=False,
    ),
    BadBundle(
        "case line not JSON",
        _cases('{"id": "q1"}\n{not json\n'),
        "reference/cases.jsonl: line 2: is not valid JSON",
        at_open=False,
    ),
    BadBundle(
        "case without id",
        _cases('{"id": "q1"}\n{"question": "no id"}\n'),
        'reference/cases.jsonl: line 2: has no "id"',
        at_open=False,
    ),
    BadBundle(
        "duplicate case id",
        _cases('{"id": "q1"}\n{"id": "q2"}\n{"id": "q1"}\n'),
        'reference/cases.jsonl: line 3: duplicate id "q1" (first on line 1)',
        at_open=False,
    ),
    BadBundle(
        "case that is not an object",
        _cases('["q1", "1+1?"]\n'),
        "reference/cases.jsonl: line 1: is a JSON list, not an object",
        at_open=False,
    ),
    BadBundle(
        "case id that is a number",
        _cases('{"id": 7}\n'),
        'reference/cases.jsonl: line 1: "id" is 7; write ids as strings',
        at_open=False,
    ),
    BadBundle(
        "scoring program without metadata",
        _folder(
            yaml_with("    reference_data: reference\n", "    scoring_program: scoring\n"),
            **{"scoring/score.py": SCORING_SCRIPT},
        ),
        "scoring: has no metadata.yaml",
        at_open=False,
    ),
    BadBundle(
        "metadata without command",
        _folder(
            yaml_with("    reference_data: reference\n", "    scoring_program: scoring\n"),
            **{"scoring/score.py": SCORING_SCRIPT, "scoring/metadata.yaml": "description: no command\n"},
        ),
        "scoring/metadata.yaml: command: missing",
        at_open=False,
    ),
]
